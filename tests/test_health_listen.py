# SPDX-License-Identifier: MIT
"""test_health_listen.py: --health-listen, a plaintext listener for probes
that cannot speak TLS (Kubernetes' gRPC probes).

It may bind beyond loopback with no --allow-plaintext-network and needs no
token file, because its connections reach grpc.health.v1.Health alone:
Check and Watch answer there, every other method (a job, reflection) is
UNIMPLEMENTED with a message naming the option, a valid token included.
Beside a tls: listener with tokens it is the manifest's shape
(deploy/k8s/ampd.yaml): jobs over TLS with a token, probes in plaintext.
An address that is not plain HOST:PORT is refused at start. Prints one line per check.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, run_cases  # noqa: E402
from daemon_proc import Daemon, free_port  # noqa: E402

AMPD = os.environ.get("AMPD_BIN", "ampd")
HERE = os.path.dirname(os.path.abspath(__file__))
CALL_TIMEOUT_S = 30
START_TIMEOUT_S = 60
TOKEN = "health-test-token-0123456789"
SERVING = b"\x08\x01"
REVERSE_ABC = b"\x0a\x03abc"


def call(ch, method, req=b"", metadata=None):
    """(code, details, reply) of one unary call."""
    try:
        reply = ch.unary_unary(method)(req, timeout=CALL_TIMEOUT_S, metadata=metadata)
    except grpc.RpcError as e:
        return e.code(), e.details(), None
    return grpc.StatusCode.OK, "", reply


def started(args):
    """A Daemon with args and --health-listen on every address; its port."""
    for _ in range(5):   # a free port may be taken before ampd binds it
        port = free_port()
        try:
            return Daemon([*args, "--health-listen", "0.0.0.0:%d" % port]), port
        except RuntimeError:
            continue
    raise RuntimeError("ampd did not start with --health-listen in 5 tries")


def test_health_only_beyond_loopback():
    d, port = started([])
    try:
        with grpc.insecure_channel("127.0.0.1:%d" % port) as ch:
            code, _, reply = call(ch, "/grpc.health.v1.Health/Check")
            expect(code == grpc.StatusCode.OK and reply == SERVING, "Check: %s %r" % (code, reply))
            watch = ch.unary_stream("/grpc.health.v1.Health/Watch")(b"", timeout=CALL_TIMEOUT_S)
            expect(next(watch) == SERVING, "Watch's first answer")
            watch.cancel()
            for method, req in (("/amp.v1.Amp/Reverse", REVERSE_ABC),
                                ("/amp.v1.Amp/Status", b""),
                                ("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", b"")):
                code, details, _ = call(ch, method, req)
                expect(code == grpc.StatusCode.UNIMPLEMENTED and "--health-listen" in details,
                       "%s on the health listener: %s %s" % (method, code, details))
    finally:
        d.stop()


def test_beside_tls_with_tokens():
    """The Kubernetes shape: no --allow-plaintext-network, yet the health
    port is on every address; jobs go over TLS with the token, and the
    token opens nothing on the health port."""
    tmp = tempfile.mkdtemp(prefix="ampd-health-")
    try:
        subprocess.run(["sh", os.path.join(HERE, "support", "tls_certs.sh"), tmp], check=True)
        tokens = os.path.join(tmp, "tokens")
        with open(tokens, "w") as f:
            f.write("prober %s\n" % TOKEN)
        os.chmod(tokens, 0o600)
        tls_port = free_port()
        d, port = started(["--listen", "tls:127.0.0.1:%d" % tls_port,
                           "--tls-cert", os.path.join(tmp, "server.pem"),
                           "--tls-key", os.path.join(tmp, "server.key"), "--token-file", tokens])
        auth = [("authorization", "Bearer " + TOKEN)]
        try:
            with open(os.path.join(tmp, "ca.pem"), "rb") as f:
                creds = grpc.ssl_channel_credentials(f.read())
            with grpc.secure_channel("localhost:%d" % tls_port, creds) as ch:
                code, details, reply = call(ch, "/amp.v1.Amp/Reverse", REVERSE_ABC, auth)
                expect(code == grpc.StatusCode.OK and reply[2:5] == b"cba",
                       "Reverse over TLS: %s %s" % (code, details))
            with grpc.insecure_channel("127.0.0.1:%d" % port) as ch:
                code, _, reply = call(ch, "/grpc.health.v1.Health/Check")
                expect(reply == SERVING, "Check in plaintext: %s %r" % (code, reply))
                code, details, _ = call(ch, "/amp.v1.Amp/Reverse", REVERSE_ABC, auth)
                expect(code == grpc.StatusCode.UNIMPLEMENTED,
                       "Reverse with the token on the health port: %s %s" % (code, details))
        finally:
            d.stop()
    finally:
        shutil.rmtree(tmp)


def test_only_plain_host_port():
    for addr in ("tls:127.0.0.1:1", "unix:/tmp/ampd-health.sock"):
        p = subprocess.run([AMPD, "--health-listen", addr, "--check-config"], capture_output=True,
                           text=True, timeout=START_TIMEOUT_S)
        expect(p.returncode != 0 and "--health-listen" in p.stderr and "plain TCP" in p.stderr,
               "--health-listen %s: exit %d: %s" % (addr, p.returncode, p.stderr))


if __name__ == "__main__":
    sys.exit(run_cases([test_health_only_beyond_loopback, test_beside_tls_with_tokens,
                        test_only_plain_host_port]))
