# SPDX-License-Identifier: MIT
"""test_tls_grpcio.py: grpcio over TLS (ssl_channel_credentials) to ampd.

Debian's python3-grpcio, an independent HTTP/2 + TLS stack, calls Reverse
and grpc.health.v1.Health/Check on a tls: listener trusting the test CA,
then on a daemon with --tls-client-ca with a client certificate; a channel
trusting another CA, or showing no client certificate, fails UNAVAILABLE.
Prints one line per check and a closing "N passed, M failed".
"""
import os
import sys

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, run_cases  # noqa: E402
from tls_daemon import TlsDaemon  # noqa: E402

CALL_TIMEOUT_S = 60
REFUSAL_TIMEOUT_S = 10
SERVING = 1


def read(path):
    with open(path, "rb") as f:
        return f.read()


def channel(d, ca="ca.pem", client=None):
    creds = grpc.ssl_channel_credentials(
        root_certificates=read(d.file(ca)),
        private_key=read(d.file(client + ".key")) if client else None,
        certificate_chain=read(d.file(client + ".pem")) if client else None)
    return grpc.secure_channel("localhost:%d" % d.port, creds)


def reverse(ch, data, timeout=CALL_TIMEOUT_S):
    """Reverse with the request and reply encoded by hand: field 1, bytes."""
    assert len(data) < 128
    reply = ch.unary_unary("/amp.v1.Amp/Reverse")(b"\x0a" + bytes([len(data)]) + data,
                                                  timeout=timeout)
    expect(reply[:2] == b"\x0a" + bytes([len(data)]), "reply %r" % reply)
    return reply[2:2 + len(data)]   # the data field; the device's name follows


def expect_unavailable(ch):
    try:
        reverse(ch, b"x", timeout=REFUSAL_TIMEOUT_S)
    except grpc.RpcError as e:
        expect(e.code() == grpc.StatusCode.UNAVAILABLE, "got %s (%s)" % (e.code(), e.details()))
        return
    raise AssertionError("the call succeeded")


def test_server_tls(d):
    with channel(d) as ch:
        expect(reverse(ch, b"stressed") == b"desserts", "reverse over TLS")
        health = ch.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=CALL_TIMEOUT_S)
        expect(health == b"\x08" + bytes([SERVING]), "health %r" % health)
    with channel(d, ca="other-ca.pem") as ch:
        expect_unavailable(ch)


def test_client_certificates(_):
    d = TlsDaemon(client_ca=True)
    try:
        with channel(d, client="client") as ch:
            expect(reverse(ch, b"abc") == b"cba", "reverse with a client certificate")
        with channel(d) as ch:
            expect_unavailable(ch)
        with channel(d, client="other-client") as ch:
            expect_unavailable(ch)
    finally:
        expect(d.stop() == 0, "the --tls-client-ca daemon did not exit 0")


def main():
    d = TlsDaemon()
    tests = [test_server_tls, test_client_certificates]
    failed = 0
    try:
        failed = run_cases(tests, d)
    finally:
        status = d.stop()
    if status != 0:
        failed += 1
        print("FAIL ampd exited with %d" % status)
    print("%d passed, %d failed" % (len(tests) - min(failed, len(tests)), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
