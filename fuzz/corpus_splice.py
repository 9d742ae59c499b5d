#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""corpus_splice.py: one fuzz_conn seed with the calls of several captures.

ampctl makes one call per connection, so captured seeds never have calls
competing for a connection's budget, the staging buffers or --max-jobs.
This interleaves the HTTP/2 frames of several captured connections into
one: the first keeps its preface, each capture's stream ids are moved to
ids of their own (odd, increasing, as a client numbers them), and frames
are taken round-robin, one per capture, each frame its own piece (ctrl 0).
HPACK stays valid: a capture's header blocks only name the static table
and entries they inserted themselves, and the few calls here stay well
inside the 4 KiB dynamic table, so the relative indexes still point right.

    corpus_splice.py OUT SEED...
"""
import struct
import sys

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
FRAME_HEADER = 9
CTRL_KEEP_UP = 0
PIECE_MAX = 0xFFFF
FRAME_SETTINGS = 4
FRAME_GOAWAY = 7
FLAG_ACK = 0x1


def splice_bytes(blob):
    """The client's bytes of a fuzz_conn seed (its pieces joined)."""
    out, i = bytearray(), 0
    while i + 3 <= len(blob):
        n = struct.unpack(">H", blob[i + 1:i + 3])[0]
        out += blob[i + 3:i + 3 + n]
        i += 3 + n
    return bytes(out)


def splice_frames(raw, first_id, keep_ack):
    """Whole frames of a connection, stream ids s renumbered to first_id +
    s - 1. A SETTINGS ACK is kept only for the first capture (the daemon
    sends its SETTINGS once: a second ACK is a connection error), and
    GOAWAY not at all (it would refuse the other captures' calls)."""
    if raw.startswith(PREFACE):
        raw = raw[len(PREFACE):]
    frames, i = [], 0
    while i + FRAME_HEADER <= len(raw):
        length = int.from_bytes(raw[i:i + 3], "big")
        head = bytearray(raw[i:i + FRAME_HEADER])
        sid = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
        if sid:
            head[5:9] = (first_id + sid - 1).to_bytes(4, "big")
        ftype, flags = head[3], head[4]
        frame = bytes(head) + raw[i + FRAME_HEADER:i + FRAME_HEADER + length]
        i += FRAME_HEADER + length
        if ftype == FRAME_GOAWAY or (ftype == FRAME_SETTINGS and flags & FLAG_ACK and not keep_ack):
            continue
        frames.append(frame)
    return frames


def splice_piece(data):
    return b"".join(struct.pack(">BH", CTRL_KEEP_UP, len(data[o:o + PIECE_MAX])) + data[o:o + PIECE_MAX]
                    for o in range(0, len(data), PIECE_MAX))


def main():
    out_path, seeds = sys.argv[1], sys.argv[2:]
    conns = []
    for k, path in enumerate(seeds):
        with open(path, "rb") as f:
            # Each capture used ids 1, 3, ...: give each a block of 64 odd ids.
            conns.append(splice_frames(splice_bytes(f.read()), 1 + 128 * k, k == 0))
    out = bytearray(splice_piece(PREFACE))
    while any(conns):
        for frames in conns:
            if frames:
                out += splice_piece(frames.pop(0))
    with open(out_path, "wb") as f:
        f.write(out)


if __name__ == "__main__":
    main()
