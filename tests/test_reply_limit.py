#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_reply_limit.py: no unary reply a stock client would throw away
(issue 38, item 1). gRPC clients refuse replies over 4 MiB by default
(grpcio: "Received message larger than max"), after ampd did the work.
ampd now refuses such a call first, with a status that says what to do,
unless the client says it takes more (amp-max-reply-bytes); libampclient
says so on every call. Reverse, Transform, Fill (a small request) and
Pipeline alike."""
import os
import subprocess
import sys
import tempfile

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon  # noqa: E402

AMPCTL = os.environ.get("AMPCTL_BIN", "ampctl")
HEADER = "amp-max-reply-bytes"
DEFAULT_LIMIT = 4 << 20
BIG = 5 << 20
TIMEOUT_S = 60


def pb_len(n):
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def reverse_request(data):
    return b"\x0a" + pb_len(len(data)) + data   # ReverseRequest.data


class Ctx:
    daemon = None


def reverse(data, options=(), metadata=()):
    with grpc.insecure_channel(Ctx.daemon.address, options=list(options)) as ch:
        return ch.unary_unary("/amp.v1.Amp/Reverse")(reverse_request(data), timeout=TIMEOUT_S,
                                                      metadata=list(metadata))


def expect_refused(code, want, **kw):
    try:
        reverse(bytes(BIG), **kw)
    except grpc.RpcError as e:
        expect(e.code() == code, "%s (%s), want %s" % (e.code(), e.details(), code))
        for w in want:
            expect(w in (e.details() or ""), "details %r lack %r" % (e.details(), w))
        return
    raise AssertionError("a %d-byte reverse succeeded, want %s" % (BIG, code))


def test_default_client_gets_a_clear_status():
    expect_refused(grpc.StatusCode.RESOURCE_EXHAUSTED,
                   [str(DEFAULT_LIMIT), HEADER, "Stream", "output_region"])


def field(num, data):
    return pb_len(num << 3 | 2) + pb_len(len(data)) + data


def varint_field(num, value):
    return pb_len(num << 3) + pb_len(value)


def test_every_job_method_refused_first():
    """A Fill's small request with a large reply too; each refused the same."""
    xor_1 = field(2, varint_field(1, 2) + varint_field(2, 1))   # TransformParams
    requests = {
        "Transform": field(1, bytes(BIG)) + xor_1,
        "Fill": field(1, varint_field(1, 3) + varint_field(2, BIG // 4)),   # int32 x BIG/4
        "Pipeline": field(1, bytes(BIG)) + field(2, field(1, b"")),        # one reverse step
    }
    with grpc.insecure_channel(Ctx.daemon.address) as ch:
        for method, req in requests.items():
            try:
                ch.unary_unary("/amp.v1.Amp/" + method)(req, timeout=TIMEOUT_S)
                raise AssertionError("%s with a %d-byte reply succeeded" % (method, BIG))
            except grpc.RpcError as e:
                expect(e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and HEADER in e.details(),
                       "%s: %s %s" % (method, e.code(), e.details()))


def test_small_replies_need_nothing():
    data = b"0123456789" * 1000
    reply = reverse(data)
    expect(reply[:1] == b"\x0a" and data[::-1] in reply, "small reverse reply %r" % reply[:16])


def test_client_that_takes_more_gets_it():
    data = bytes(range(256)) * (BIG // 256)
    reply = reverse(data, options=[("grpc.max_receive_message_length", 64 << 20)],
                    metadata=[(HEADER, str(64 << 20))])
    expect(data[::-1] in reply, "the %d-byte reverse differs" % len(data))


def test_a_smaller_stated_limit_is_honoured():
    expect_refused(grpc.StatusCode.RESOURCE_EXHAUSTED, ["1048576", HEADER],
                   metadata=[(HEADER, str(1 << 20))])


def test_bad_value_is_refused():
    for bad in ("lots", "0", "-5", "1" * 25):
        try:
            reverse(b"abc", metadata=[(HEADER, bad)])
        except grpc.RpcError as e:
            expect(e.code() == grpc.StatusCode.INVALID_ARGUMENT and HEADER in e.details(),
                   "%r: %s (%s)" % (bad, e.code(), e.details()))
            continue
        raise AssertionError("%s: %r accepted" % (HEADER, bad))


def test_libampclient_takes_any_size():
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "in"), os.path.join(d, "out")
        data = os.urandom(BIG)
        with open(src, "wb") as f:
            f.write(data)
        p = subprocess.run([AMPCTL, "-a", Ctx.daemon.address, "reverse", "-i", src, "-o", dst],
                           capture_output=True, text=True, timeout=TIMEOUT_S)
        expect(p.returncode == 0, "ampctl reverse: %d %s" % (p.returncode, p.stderr))
        with open(dst, "rb") as f:
            expect(f.read() == data[::-1], "ampctl's reverse differs")


def main():
    Ctx.daemon = Daemon()
    try:
        failed = run_cases(module_cases(globals()))
    finally:
        status = Ctx.daemon.stop()
    if status != 0:
        failed += 1
        print("FAIL ampd exited with status %d" % status)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
