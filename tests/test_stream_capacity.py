#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_stream_capacity.py: concurrent calls on one connection (issue 38,
item 1). ampd allows 100 streams at once by default (gRPC's usual
MAX_CONCURRENT_STREAMS; at 32, Node's http2 queued the rest and a
Connect-ES burst lost calls); --max-streams still sets it, and memory
stays bounded by the budgets, not by this count."""
import os
import socket
import struct
import sys
import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon  # noqa: E402
from h2_raw import PREFACE, frame  # noqa: E402

SETTINGS, SETTINGS_MAX_CONCURRENT_STREAMS = 4, 3
CALLS = 100
TIMEOUT_S = 60


def server_max_streams(path):
    """MAX_CONCURRENT_STREAMS from the server's first SETTINGS frame."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(TIMEOUT_S)
        s.connect(path)
        s.sendall(PREFACE + frame(SETTINGS, 0, 0))
        buf = b""
        while True:
            while len(buf) < 9:
                chunk = s.recv(4096)
                expect(chunk, "the server closed before its SETTINGS")
                buf += chunk
            length, ftype, flags = int.from_bytes(buf[:3], "big"), buf[3], buf[4]
            while len(buf) < 9 + length:
                buf += s.recv(4096)
            payload, buf = buf[9:9 + length], buf[9 + length:]
            if ftype == SETTINGS and not flags & 1:
                for i in range(0, len(payload), 6):
                    ident, value = struct.unpack(">HI", payload[i:i + 6])
                    if ident == SETTINGS_MAX_CONCURRENT_STREAMS:
                        return value
                return None


def reverse_request(data):
    return b"\x0a" + bytes([len(data)]) + data   # ReverseRequest.data, short


def with_daemon(args, fn):
    """fn(daemon) against an ampd of its own, which must then exit 0."""
    d = Daemon(args)
    try:
        fn(d)
    finally:
        status = d.stop()
    expect(status == 0, "ampd exited with status %d" % status)


def test_default_allows_100_streams():
    def check(d):
        got = server_max_streams(d.sock_path)
        expect(got == CALLS, "MAX_CONCURRENT_STREAMS %r, want %d" % (got, CALLS))
    with_daemon([], check)


def test_option_sets_it():
    def check(d):
        got = server_max_streams(d.sock_path)
        expect(got == 7, "--max-streams 7 announced as %r" % got)
    with_daemon(["--max-streams", "7"], check)


def test_100_calls_at_once_on_one_connection():
    with_daemon([], calls_at_once)


def calls_at_once(d):
    with grpc.insecure_channel(d.address) as ch:
        fn = ch.unary_unary("/amp.v1.Amp/Reverse")
        inputs = [("call %03d" % i).encode() for i in range(CALLS)]
        calls = [fn.future(reverse_request(x), timeout=TIMEOUT_S) for x in inputs]
        for x, c in zip(inputs, calls):
            reply = c.result()
            # DataReply.data is field 1: tag, length, bytes.
            expect(reply[0] == 0x0a and reply[2:2 + reply[1]] == x[::-1],
                   "reverse of %r: %r" % (x, reply[:20]))


if __name__ == "__main__":
    sys.exit(run_cases(module_cases(globals())))
