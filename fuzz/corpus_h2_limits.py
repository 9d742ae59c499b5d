#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""corpus_h2_limits.py: fuzz_conn seeds for the HTTP/2 limits of h2.c.

Captured traffic (capture_corpus.sh) never comes near them, so these are
built by hand, in fuzz_conn's piece format (ctrl | length | bytes):

  h2-hpack-bomb         a HEADERS block of references to a 4,000-byte
                        table entry: the decoded header list passes
                        SETTINGS_MAX_HEADER_LIST_SIZE within its first frame
  h2-header-list-wire   past 8 open streams (the harness's limit), a block
                        whose own bytes pass the limit: nghttp2 refuses the
                        stream and decodes its fields unseen, so only the
                        block's size stops it
  h2-made-you-reset     calls, each followed by a WINDOW_UPDATE that
                        overflows its stream window: ampd resets them until
                        the reset budget runs out, with a second passing
                        (ctrl bit 4) between rounds to refill it
  h2-content-length     content-length above and below the DATA, and exact
  h2-timeout-zero       grpc-timeout 0n and 0S

    corpus_h2_limits.py [OUTDIR]   (default: fuzz/corpus/fuzz_conn)
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "support"))
from h2_raw import PREFACE, frame, hpack_int, literal  # noqa: E402

CTRL_KEEP_UP = 0
CTRL_SECOND = 0x10
PIECE_MAX = 0xFFFF
FRAME = 16384
ENTRY_VALUE = 4000
HEADER_LIST_MAX = 64 * 1024
DATA, HEADERS, SETTINGS, WINDOW_UPDATE, CONTINUATION = 0, 1, 4, 8, 9
END_STREAM, END_HEADERS = 0x1, 0x4
OPEN_STREAMS = 8   # fuzz_conn's SETTINGS_MAX_CONCURRENT_STREAMS
RESET_ROUNDS = 4
RESETS_PER_ROUND = 40



def request(path=b"/amp.v1.Amp/Reverse", extra=b""):
    return (literal(b":method", b"POST") + literal(b":scheme", b"http") + literal(b":path", path)
            + literal(b"content-type", b"application/grpc") + literal(b"te", b"trailers") + extra)


def reverse_message(n=16):
    msg = b"\x0a" + bytes([n]) + b"r" * n
    return b"\x00" + struct.pack(">I", len(msg)) + msg


def hello():
    return PREFACE + frame(SETTINGS, 0, 0, b"")


def block_frames(sid, block, end_stream=False):
    out = b""
    for at in range(0, len(block), FRAME):
        last = at + FRAME >= len(block)
        flags = (END_HEADERS if last else 0) | (END_STREAM if end_stream and at == 0 else 0)
        out += frame(HEADERS if at == 0 else CONTINUATION, flags, sid, block[at:at + FRAME])
    return out


def pieces(chunks):
    """chunks: (ctrl, bytes) pairs; long bytes are split into pieces."""
    out = b""
    for ctrl, data in chunks:
        for at in range(0, max(len(data), 1), PIECE_MAX):
            part = data[at:at + PIECE_MAX]
            out += bytes([ctrl]) + struct.pack(">H", len(part)) + part
    return out


def hpack_bomb():
    head = request() + literal(b"x-big", b"b" * ENTRY_VALUE, 0x40, 6)
    block = head + b"\xbe" * (3 * FRAME - len(head))
    return pieces([(CTRL_KEEP_UP, hello()), (CTRL_KEEP_UP, block_frames(1, block))])


def header_list_wire():
    held = b"".join(block_frames(2 * i + 1, request()) for i in range(OPEN_STREAMS))
    pad = b"p" * 8000
    block = request(extra=b"".join(literal(b"x-pad-%d" % i, pad) for i in range(9)))
    assert len(block) > HEADER_LIST_MAX
    return pieces([(CTRL_KEEP_UP, hello() + held),
                   (CTRL_KEEP_UP, block_frames(2 * OPEN_STREAMS + 1, block))])


def made_you_reset():
    chunks = [(CTRL_KEEP_UP, hello())]
    sid = 1
    for _ in range(RESET_ROUNDS):
        data = b""
        for _ in range(RESETS_PER_ROUND):
            data += block_frames(sid, request()) + frame(DATA, END_STREAM, sid, reverse_message())
            data += frame(WINDOW_UPDATE, 0, sid, b"\x7f\xff\xff\xff")
            sid += 2
        chunks.append((CTRL_SECOND, data))
    return pieces(chunks)


def content_length():
    body = reverse_message()
    data = hello()
    for sid, length in ((1, 5), (3, 1000), (5, len(body))):
        data += block_frames(sid, request(extra=literal(b"content-length", str(length).encode())))
        data += frame(DATA, END_STREAM, sid, body)
    return pieces([(CTRL_KEEP_UP, data)])


def timeout_zero():
    data = hello()
    for sid, value in ((1, b"0n"), (3, b"0S")):
        data += block_frames(sid, request(extra=literal(b"grpc-timeout", value)))
        data += frame(DATA, END_STREAM, sid, reverse_message())
    return pieces([(CTRL_KEEP_UP, data)])


SEEDS = {
    "h2-hpack-bomb": hpack_bomb,
    "h2-header-list-wire": header_list_wire,
    "h2-made-you-reset": made_you_reset,
    "h2-content-length": content_length,
    "h2-timeout-zero": timeout_zero,
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "fuzz_conn")
    for name, make in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(make())


if __name__ == "__main__":
    main()
