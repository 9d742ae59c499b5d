#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""corpus_requests.py: fuzz_requests seeds from fuzz_conn's captured traffic.

Each fuzz_conn seed recorded by capture_corpus.sh holds one ampctl command's
connection, named for the command (reverse-*, stream-*, ...). This takes the
HTTP/2 frames back out of its pieces, joins each stream's DATA, splits it
into gRPC messages, and writes each request message as a fuzz_requests
input: method byte | limits byte | message (fuzz_requests.c). So the seeds
are the bytes real clients send, not hand-made ones.

    corpus_requests.py CONN_CORPUS_DIR OUT_DIR
"""
import os
import struct
import sys

# fuzz_requests.c's method bytes, by the capture names' first word.
METHODS = {
    "reverse": 0, "transform": 1, "hist": 2, "fill": 3, "pipeline": 4,
    "stream": 5, "devices": 6, "status": 7, "health": 8,
}
# --max-message-bytes 64 KiB (index 2 of fuzz_requests.c's table); a
# stream's end-of-input length unit 0.
LIMITS = 2
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
FRAME_DATA = 0
FLAG_PADDED = 0x8
GRPC_PREFIX = 5
DATA_SEED_MAX = 4096


def requests_pieces(blob):
    """The client's bytes: fuzz_conn pieces (ctrl, 2-byte length) joined."""
    out, i = bytearray(), 0
    while i + 3 <= len(blob):
        n = struct.unpack(">H", blob[i + 1:i + 3])[0]
        out += blob[i + 3:i + 3 + n]
        i += 3 + n
    return bytes(out)


def requests_streams(raw):
    """DATA payloads by stream id, in order."""
    if raw.startswith(PREFACE):
        raw = raw[len(PREFACE):]
    streams, i = {}, 0
    while i + 9 <= len(raw):
        length = int.from_bytes(raw[i:i + 3], "big")
        ftype, flags = raw[i + 3], raw[i + 4]
        sid = int.from_bytes(raw[i + 5:i + 9], "big") & 0x7FFFFFFF
        payload = raw[i + 9:i + 9 + length]
        i += 9 + length
        if ftype != FRAME_DATA:
            continue
        if flags & FLAG_PADDED and payload:
            payload = payload[1:len(payload) - payload[0]]
        streams[sid] = streams.get(sid, b"") + payload
    return streams


def requests_messages(body):
    """The gRPC messages of one stream's body."""
    msgs, i = [], 0
    while i + GRPC_PREFIX <= len(body):
        n = struct.unpack(">I", body[i + 1:i + 5])[0]
        msgs.append(body[i + 5:i + 5 + n])
        i += GRPC_PREFIX + n
    return msgs


def main():
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    for name in sorted(os.listdir(src)):
        method = METHODS.get(name.split("-")[0])
        if method is None:
            continue
        with open(os.path.join(src, name), "rb") as f:
            streams = requests_streams(requests_pieces(f.read()))
        for sid, body in sorted(streams.items()):
            # A stream's header, and its first data message as the data kind
            # when it is small (data is any bytes: one seed of it will do).
            for k, msg in enumerate(requests_messages(body)[:2]):
                if k and len(msg) > DATA_SEED_MAX:
                    continue
                out = os.path.join(dst, f"{name}-{k}" if k else name)
                with open(out, "wb") as f:
                    f.write(bytes([method, LIMITS]) + msg)
        if not streams:   # a request with an empty message sends no DATA
            with open(os.path.join(dst, name), "wb") as f:
                f.write(bytes([method, LIMITS]))


if __name__ == "__main__":
    main()
