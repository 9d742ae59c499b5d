# SPDX-License-Identifier: MIT
"""test_secret_rotation.py: a rotated token file is read without a signal
(daemon/secret_watch.c; issue 39).

ampd on a TCP listener with --token-file. The file is replaced as tools
and Kubernetes do it, and no SIGHUP is sent: renamed over from a
temporary in the same directory, then (a second daemon) the Kubernetes
way, the file a symlink through the directory's ..data, which a new
..data symlink is renamed over. Each time the new token is taken (polled:
the reload follows the change by the watch's settling time) and the old
one is then refused UNAUTHENTICATED; the log says why it reloaded; ampd
exits 0.
"""
import os
import sys
import tempfile
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon, free_port  # noqa: E402

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


def test_kubernetes_symlink_swap():
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile("w+") as log:
        # What kubelet's atomic writer makes: a timestamped directory, ..data
        # pointing at it, and the file a symlink through ..data.
        os.mkdir(os.path.join(tmp, "..v1"))
        write(os.path.join(tmp, "..v1", "tokens"), "me %s\n" % token(3))
        os.symlink("..v1", os.path.join(tmp, "..data"))
        os.symlink("..data/tokens", os.path.join(tmp, "tokens"))
        d, ch = rotation_daemon(os.path.join(tmp, "tokens"), log)
        expect(call(ch, token(3)) == grpc.StatusCode.OK, "the first token")
        os.mkdir(os.path.join(tmp, "..v2"))
        write(os.path.join(tmp, "..v2", "tokens"), "me %s\n" % token(4))
        os.symlink("..v2", os.path.join(tmp, "..data_tmp"))
        os.rename(os.path.join(tmp, "..data_tmp"), os.path.join(tmp, "..data"))
        wait_taken(ch, token(4))
        expect(call(ch, token(3)) == grpc.StatusCode.UNAUTHENTICATED, "the old token after")
        finish(d, ch, log)


if __name__ == "__main__":
    sys.exit(run_cases(module_cases(globals())))
