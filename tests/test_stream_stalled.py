# SPDX-License-Identifier: MIT
"""test_stream_stalled.py: a Stream client that keeps sending but stops
reading its results must not make ampd grow, and must get every reply once
it reads again.

grpcio's request iterator runs on its own thread, so this client can push
input while it never asks for a reply: exactly the client the daemon's
backpressure is for. ampd runs with a small staging pool. While the client
is stalled, the daemon must stop taking its input (the request iterator
stops being pulled, far short of the input's size) and its resident
memory must stay put; another client's unary call must still be answered.
Once the client reads again, every reply byte arrives and is right.

Each case runs against two daemons: --chunk-bytes 1M, one reply message
per DATA frame, and --chunk-bytes 256K, where one DATA frame carries
several reply messages, so the staging buffers come back only when a
frame is written, after the bytes were counted as sent (a stream that
waited for those buffers once hung there). A reverse stream, whose result
leaves the device chunk by chunk after all its input, is stalled too.
Prints one line per check and a closing "N passed, M failed".
"""
import os
import sys
import threading
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, run_cases  # noqa: E402
from daemon_proc import Daemon, vm_rss  # noqa: E402

MIB = 1 << 20
CHUNK = MIB
TOTAL = 512 * MIB            # far more than the daemon may hold for one stream
STALL_BOUND = 64 * MIB       # input a stalled stream may pull in at most
RSS_BOUND = 64 * MIB         # daemon growth allowed while it is stalled
SETTLE_S = 1.0               # input unchanged this long: the stream is stalled
WAIT_S = 60
RESIDENT_TOTAL = 24 * MIB    # a reverse stream's input, all on the device at once
TRANSFORM_OP_XOR = 2
KEY = 0x5A
DAEMONS = (["--staging-bytes", "4M", "--chunk-bytes", "1M"],
           ["--staging-bytes", "1M", "--chunk-bytes", "256K"])
# Under ASan, freed blocks wait in a 256 MiB quarantine before reuse, so
# VmRSS grows with every byte that passes (a reverse stream's +0 to +90 MiB
# under load); with a small one it shows what ampd holds, as for the C
# tests (support/hostile.c). A plain build ignores the variable.
ASAN_SMALL_QUARANTINE = "quarantine_size_mb=4"


def pb_varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def pb_len(field, data):
    return pb_varint(field << 3 | 2) + pb_varint(len(data)) + data


def pb_uint(field, n):
    return pb_varint(field << 3) + pb_varint(n)


def pb_data_field(msg):
    """The bytes of field 1 (StreamReply.data) of a reply, or None."""
    i = 0
    while i < len(msg):
        key = msg[i]
        i += 1
        n, shift = 0, 0
        while True:
            b = msg[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if key == 0x0A:
            return msg[i:i + n]
        i += n
    return None


def header(step, total):
    return pb_len(1, pb_len(1, step) + pb_uint(3, total))


XOR_STEP = pb_len(2, pb_uint(1, TRANSFORM_OP_XOR) + pb_uint(2, KEY))
REVERSE_STEP = pb_len(1, b"")


PATTERN = bytes(range(256)) * (CHUNK // 256)
WANT = bytes(b ^ KEY for b in PATTERN)


class Feeder:
    """The request iterator: the header, then total bytes, counting."""

    def __init__(self, step, total):
        self.sent = 0
        self.step = step
        self.total = total
        self.lock = threading.Lock()

    def __iter__(self):
        yield header(self.step, self.total)
        while self.sent < self.total:
            with self.lock:
                self.sent += CHUNK
            yield pb_len(2, PATTERN)

    def count(self):
        with self.lock:
            return self.sent


def wait_stalled(feeder):
    last, since, start = feeder.count(), time.monotonic(), time.monotonic()
    while time.monotonic() - since < SETTLE_S:
        expect(time.monotonic() - start < WAIT_S, "the stream never stopped taking input")
        time.sleep(0.05)
        now = feeder.count()
        if now != last:
            last, since = now, time.monotonic()
    return last


def read_replies(replies, period, total):
    """Reads every reply: their data must be period (CHUNK bytes) repeated,
    total bytes of it."""
    got = 0
    for msg in replies:
        data = pb_data_field(msg)
        if data is None:
            continue
        off = got % CHUNK
        expect(data == (period * 2)[off:off + len(data)], "wrong bytes at %d" % got)
        got += len(data)
    expect(got == total, "got %d reply bytes, want %d" % (got, total))


def test_stalled_reader(daemon):
    channel = grpc.insecure_channel(daemon.address)
    other = grpc.insecure_channel(daemon.address)
    try:
        rss0 = vm_rss(daemon.proc.pid)
        feeder = Feeder(XOR_STEP, TOTAL)
        replies = channel.stream_stream("/amp.v1.Amp/Stream")(iter(feeder), timeout=600)
        pulled = wait_stalled(feeder)
        grown = vm_rss(daemon.proc.pid) - rss0
        print("stalled after %d MiB of %d; daemon RSS +%d MiB" %
              (pulled // MIB, TOTAL // MIB, grown // MIB))
        expect(pulled <= STALL_BOUND, "a client that stopped reading pushed %d bytes" % pulled)
        expect(grown < RSS_BOUND, "daemon RSS grew by %d bytes" % grown)

        reverse = other.unary_unary("/amp.v1.Amp/Reverse")
        got = reverse(pb_len(1, b"still serving"), timeout=60)
        expect(b"gnivres llits" in got, "other client's reverse: %r" % got)

        read_replies(replies, WANT, TOTAL)
        expect(replies.code() == grpc.StatusCode.OK, "status %s" % replies.code())
    finally:
        channel.close()
        other.close()


def test_stalled_reverse(daemon):
    """A reverse stream's client reads nothing until all of its result
    waits to leave: the daemon holds back the copies out, then sends every
    byte, reversed, once the client reads."""
    channel = grpc.insecure_channel(daemon.address)
    try:
        rss0 = vm_rss(daemon.proc.pid)
        feeder = Feeder(REVERSE_STEP, RESIDENT_TOTAL)
        replies = channel.stream_stream("/amp.v1.Amp/Stream")(iter(feeder), timeout=600)
        pulled = wait_stalled(feeder)
        expect(pulled == RESIDENT_TOTAL, "the reverse stream took %d bytes of %d" %
               (pulled, RESIDENT_TOTAL))
        time.sleep(SETTLE_S)   # the result waits on the stalled client
        grown = vm_rss(daemon.proc.pid) - rss0
        print("reverse stalled with its result out; daemon RSS +%d MiB" % (grown // MIB))
        expect(grown < RSS_BOUND + RESIDENT_TOTAL, "daemon RSS grew by %d bytes" % grown)

        # The input is PATTERN repeated, so its reverse is PATTERN reversed, repeated.
        read_replies(replies, PATTERN[::-1], RESIDENT_TOTAL)
        expect(replies.code() == grpc.StatusCode.OK, "status %s" % replies.code())
    finally:
        channel.close()


def main():
    asan = os.environ.get("ASAN_OPTIONS")
    if not asan or "quarantine_size_mb" not in asan:
        os.environ["ASAN_OPTIONS"] = ":".join(filter(None, (asan, ASAN_SMALL_QUARANTINE)))
    failed = 0
    for args in DAEMONS:
        print("ampd %s" % " ".join(args), flush=True)
        daemon = Daemon(args)
        try:
            failed += run_cases([test_stalled_reader, test_stalled_reverse], daemon)
        finally:
            status = daemon.stop()
        if status != 0:
            print("FAIL ampd exit status %d" % status)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
