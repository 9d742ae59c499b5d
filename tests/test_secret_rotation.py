# SPDX-License-Identifier: MIT
"""test_secret_rotation.py: a rotated token file or TLS certificate is read
without a signal (daemon/secret_watch.c; issue 39).

ampd on a TCP listener with --token-file. The file is replaced as tools
and Kubernetes do it, and no SIGHUP is sent: renamed over from a
temporary in the same directory, then (a second daemon) the Kubernetes
way, the file a symlink through the directory's ..data, which a new
..data symlink is renamed over. Each time the new token is taken (polled:
the reload follows the change by the watch's settling time) and the old
one is then refused UNAUTHENTICATED; the log says why it reloaded; ampd
exits 0. A kubernetes.io/tls Secret (tls.crt, tls.key) swapped the same
way: new TLS handshakes show the new certificate.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon, free_port  # noqa: E402
from tls_daemon import serves_cert  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

CALL_TIMEOUT_S = 30
RELOAD_WAIT_S = 60
POLL_S = 0.05
REVERSE_X = b"\x0a\x01x"   # ReverseRequest{data = "x"}


def token(n):
    return "rotation-token-%d-0123456789abcdef" % n


def call(channel, tok):
    """The status code of a Reverse with tok."""
    try:
        channel.unary_unary("/amp.v1.Amp/Reverse")(
            REVERSE_X, timeout=CALL_TIMEOUT_S, metadata=[("authorization", "Bearer " + tok)])
        return grpc.StatusCode.OK
    except grpc.RpcError as e:
        return e.code()


def wait_taken(channel, tok):
    for _ in range(int(RELOAD_WAIT_S / POLL_S)):
        if call(channel, tok) == grpc.StatusCode.OK:
            return
        time.sleep(POLL_S)
    raise AssertionError("the new token was never taken (no reload)")


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, 0o600)


def rotation_daemon(token_path, log):
    port = free_port()
    d = Daemon(("--listen", "127.0.0.1:%d" % port, "--token-file", token_path), stderr=log)
    return d, grpc.insecure_channel("127.0.0.1:%d" % port)


def finish(d, channel, log):
    channel.close()
    status = d.stop()
    log.seek(0)
    text = log.read()
    expect("secret files changed" in text, "no reload in the log:\n" + text[-2000:])
    expect(status == 0, "ampd exited %d" % status)


def test_renamed_over():
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile("w+") as log:
        path = os.path.join(tmp, "tokens")
        write(path, "me %s\n" % token(1))
        d, ch = rotation_daemon(path, log)
        expect(call(ch, token(1)) == grpc.StatusCode.OK, "the first token")
        write(path + ".new", "me %s\n" % token(2))
        os.rename(path + ".new", path)
        wait_taken(ch, token(2))
        expect(call(ch, token(1)) == grpc.StatusCode.UNAUTHENTICATED, "the old token after")
        finish(d, ch, log)


def secret_volume(where, version, files):
    """Kubelet's atomic writer: the files in a timestamped directory, ..data
    pointing at it, each name a symlink through ..data. A later version is
    a new directory and ..data renamed over."""
    os.mkdir(os.path.join(where, version))
    for name, write_it in files.items():
        write_it(os.path.join(where, version, name))
    if os.path.lexists(os.path.join(where, "..data")):
        os.symlink(version, os.path.join(where, "..data_tmp"))
        os.rename(os.path.join(where, "..data_tmp"), os.path.join(where, "..data"))
        return
    os.symlink(version, os.path.join(where, "..data"))
    for name in files:
        os.symlink("..data/" + name, os.path.join(where, name))


def test_kubernetes_symlink_swap():
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile("w+") as log:
        secret_volume(tmp, "..v1", {"tokens": lambda p: write(p, "me %s\n" % token(3))})
        d, ch = rotation_daemon(os.path.join(tmp, "tokens"), log)
        expect(call(ch, token(3)) == grpc.StatusCode.OK, "the first token")
        secret_volume(tmp, "..v2", {"tokens": lambda p: write(p, "me %s\n" % token(4))})
        wait_taken(ch, token(4))
        expect(call(ch, token(3)) == grpc.StatusCode.UNAUTHENTICATED, "the old token after")
        finish(d, ch, log)


def test_kubernetes_tls_secret_swap():
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile("w+") as log:
        certs, vol = os.path.join(tmp, "certs"), os.path.join(tmp, "tls")
        os.mkdir(vol)
        subprocess.run(["sh", os.path.join(HERE, "support", "tls_certs.sh"), certs], check=True)

        def pair(stem):
            return {"tls.crt": lambda p: shutil.copy(os.path.join(certs, stem + ".pem"), p),
                    "tls.key": lambda p: shutil.copy(os.path.join(certs, stem + ".key"), p)}
        secret_volume(vol, "..v1", pair("server"))
        port = free_port()
        d = Daemon(("--listen", "tls:127.0.0.1:%d" % port, "--tcp-require-token", "off",
                    "--tls-cert", os.path.join(vol, "tls.crt"),
                    "--tls-key", os.path.join(vol, "tls.key")), stderr=log)
        expect(serves_cert(port, os.path.join(certs, "server.pem")), "the first certificate")
        secret_volume(vol, "..v2", pair("other-server"))
        for _ in range(int(RELOAD_WAIT_S / POLL_S)):
            if serves_cert(port, os.path.join(certs, "other-server.pem")):
                break
            time.sleep(POLL_S)
        else:
            raise AssertionError("the new certificate was never served (no reload)")
        status = d.stop()
        log.seek(0)
        text = log.read()
        expect("secret files changed" in text, "no reload in the log:\n" + text[-2000:])
        expect(status == 0, "ampd exited %d" % status)


if __name__ == "__main__":
    sys.exit(run_cases(module_cases(globals())))
