# SPDX-License-Identifier: MIT
"""test_grpcio.py: ampd from an independent gRPC implementation.

Debian's python3-grpcio talks to a real ampd with no generated stubs:
requests are protobuf bytes encoded by hand below, replies are decoded by
hand, so the test depends on nothing of ours but the wire format in
proto/. Checks Reverse, grpc.health.v1.Health/Check, UNIMPLEMENTED for
unknown methods, INVALID_ARGUMENT with a message naming the field, and a
16 MiB Stream read by a channel with grpcio's default options (every reply
within its 4 MiB receive limit, whatever --chunk-bytes is).
Prints one line per check (support/cases.py).
"""
import os
import struct
import sys

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon  # noqa: E402

CALL_TIMEOUT_S = 120
MAX_MESSAGE = 64 << 20

# protobuf wire types
VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
# amp.v1 enum values
ELEMENT_TYPE_FLOAT32 = 4
ELEMENT_TYPE_INT32 = 3
TRANSFORM_OP_MAP = 6
SERVING = 1


# --- a minimal protobuf encoder/decoder ------------------------------------------

def pb_varint(n):
    out = bytearray()
    n &= (1 << 64) - 1  # negative int64 values are 10-byte two's complement
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb_key(field, wire):
    return pb_varint(field << 3 | wire)


def pb_uint(field, n):
    return pb_key(field, VARINT) + pb_varint(n)


def pb_bytes(field, data):
    return pb_key(field, LEN) + pb_varint(len(data)) + data


def pb_double(field, x):
    return pb_key(field, FIXED64) + struct.pack("<d", x)


def pb_read_varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def pb_decode(buf):
    """field number -> list of raw values (int for varints, bytes otherwise)."""
    fields, i = {}, 0
    while i < len(buf):
        key, i = pb_read_varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == VARINT:
            value, i = pb_read_varint(buf, i)
        elif wire == LEN:
            n, i = pb_read_varint(buf, i)
            value, i = bytes(buf[i:i + n]), i + n
        elif wire == FIXED64:
            value, i = bytes(buf[i:i + 8]), i + 8
        elif wire == FIXED32:
            value, i = bytes(buf[i:i + 4]), i + 4
        else:
            raise ValueError("unsupported wire type %d" % wire)
        fields.setdefault(field, []).append(value)
    return fields


# --- calls ---------------------------------------------------------------------------

class Ctx:
    channel = None


def call(method, request):
    """Unary call with raw bytes in and out (no serializers)."""
    fn = Ctx.channel.unary_unary(method)
    return fn(request, timeout=CALL_TIMEOUT_S)


def expect_status(method, request, code, field=None):
    try:
        call(method, request)
    except grpc.RpcError as e:
        expect(e.code() == code, "%s: %s (%s), want %s" % (method, e.code(), e.details(), code))
        if field:
            expect(field in (e.details() or ""), "%s: details %r lack %r" %
                   (method, e.details(), field))
        return
    raise AssertionError("%s succeeded, want %s" % (method, code))


def test_reverse():
    for data in (b"", b"a", b"stressed", bytes(range(256)) * 1000 + b"odd"):
        reply = pb_decode(call("/amp.v1.Amp/Reverse", pb_bytes(1, data)))
        got = reply.get(1, [b""])[0]
        expect(got == data[::-1], "reverse of %d bytes differs" % len(data))
        expect(reply.get(2, [b""])[0], "reply names no device")


def test_health_check():
    reply = pb_decode(call("/grpc.health.v1.Health/Check", b""))
    expect(reply.get(1, [0])[0] == SERVING, "health status %r" % reply)
    reply = pb_decode(call("/grpc.health.v1.Health/Check", pb_bytes(1, b"amp.v1.Amp")))
    expect(reply.get(1, [0])[0] == SERVING, "amp.v1.Amp health %r" % reply)


def test_unknown_method_unimplemented():
    expect_status("/amp.v1.Amp/NoSuchMethod", b"", grpc.StatusCode.UNIMPLEMENTED)
    expect_status("/no.such.Service/Call", b"", grpc.StatusCode.UNIMPLEMENTED)


def test_bad_params_invalid_argument():
    hist = pb_bytes(1, struct.pack("<4f", 0, 1, 2, 3)) + pb_bytes(
        2, pb_uint(1, ELEMENT_TYPE_FLOAT32) + pb_uint(2, 0) + pb_double(3, 0) + pb_double(4, 1))
    expect_status("/amp.v1.Amp/Histogram", hist, grpc.StatusCode.INVALID_ARGUMENT, "params.bins")
    short_table = pb_uint(1, TRANSFORM_OP_MAP) + pb_bytes(3, b"x" * 255)
    xform = pb_bytes(1, b"abc") + pb_bytes(2, short_table)
    expect_status("/amp.v1.Amp/Transform", xform, grpc.StatusCode.INVALID_ARGUMENT,
                  "params.table")
    expect_status("/amp.v1.Amp/Reverse", pb_bytes(1, b"abc") + pb_bytes(2, b"no-such-device"),
                  grpc.StatusCode.INVALID_ARGUMENT, "device")
    # Not a protobuf at all: INTERNAL, as grpc-go answers a request it cannot
    # unmarshal; and the daemon keeps serving.
    expect_status("/amp.v1.Amp/Reverse", b"\xff\xff\xff", grpc.StatusCode.INTERNAL)
    test_reverse()


def test_fill_and_devices():
    req = pb_bytes(1, pb_uint(1, ELEMENT_TYPE_INT32) + pb_uint(2, 5) + pb_uint(4, 7)
                   + pb_uint(5, (-2) & ((1 << 64) - 1)))
    data = pb_decode(call("/amp.v1.Amp/Fill", req)).get(1, [b""])[0]
    expect(struct.unpack("<5i", data) == (7, 5, 3, 1, -1), "fill %r" % data)
    devices = pb_decode(call("/amp.v1.Amp/ListDevices", b"")).get(1, [])
    expect(devices, "no devices")
    first = pb_decode(devices[0])
    expect(first.get(2, [b""])[0], "device without a name")


STREAM_LEN = 16 << 20
STREAM_SEND_CHUNK = 1 << 20
TRANSFORM_OP_ADD = 1
# gRPC's default grpc.max_receive_message_length: what a stock client accepts.
GRPC_DEFAULT_MAX_RECEIVE = 4 << 20


def stream_add(channel, data, value):
    """A Stream transform (add value) of data; returns the reply messages."""
    step = pb_bytes(2, pb_uint(1, TRANSFORM_OP_ADD) + pb_uint(2, value))
    header = pb_bytes(1, pb_bytes(1, step) + pb_uint(3, len(data)))

    def requests():
        yield header
        for i in range(0, len(data), STREAM_SEND_CHUNK):
            yield pb_bytes(2, data[i:i + STREAM_SEND_CHUNK])

    fn = channel.stream_stream("/amp.v1.Amp/Stream")
    return list(fn(requests(), timeout=CALL_TIMEOUT_S))


def check_stream_add(extra_args):
    """16 MiB through a daemon started with extra_args, read by a channel
    with grpcio's default options: every reply fits its 4 MiB receive limit
    and the bytes come back transformed."""
    data = bytes((i * 7 + (i >> 12)) & 0xFF for i in range(STREAM_LEN))
    daemon = Daemon(extra_args)
    try:
        with grpc.insecure_channel(daemon.address) as channel:
            replies = stream_add(channel, data, 3)
    finally:
        status = daemon.stop()
    expect(status == 0, "ampd %s exited with status %d" % (" ".join(extra_args), status))
    expect(all(len(r) <= GRPC_DEFAULT_MAX_RECEIVE for r in replies), "a reply over 4 MiB")
    got = b"".join(pb_decode(r).get(1, [b""])[0] for r in replies)
    want = bytes((b + 3) & 0xFF for b in data)
    expect(got == want, "streamed transform of %d bytes differs (got %d bytes)" %
           (len(data), len(got)))


def test_stream_default_client_limits():
    check_stream_add(())   # the default 4 MiB chunk once made a 4 MiB + 41-byte reply
    check_stream_add(("--chunk-bytes", "16M", "--staging-bytes", "64M"))


def main():
    daemon = Daemon()
    try:
        Ctx.channel = grpc.insecure_channel(daemon.address, options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            ("grpc.max_send_message_length", MAX_MESSAGE)])
        failed = run_cases(module_cases(globals()))
        Ctx.channel.close()
    finally:
        status = daemon.stop()
    if status != 0:
        failed += 1
        print("FAIL ampd exited with status %d" % status)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
