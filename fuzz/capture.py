#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""capture.py: records what real clients send to ampd, as fuzz_conn seeds.

A Unix-socket proxy between a client (ampctl, libampclient) and a running
ampd. Both directions are relayed untouched; every read from the client
side also becomes one piece of a fuzz_conn input (fuzz/README.md):

    ctrl (1 byte) | length (2 bytes, big-endian) | that many bytes

with ctrl 0 (after the piece: take all output, complete every task), the
closest the in-memory backend comes to a daemon that keeps up. Reads of
more than 65535 bytes are split. Each accepted connection is written to
its own file, OUT-N (N counting from 0), when the client closes it.

    capture.py --listen /tmp/p.sock --upstream /tmp/ampd.sock --out DIR/name [--connections N]

It exits after N connections (default: runs until killed).
"""
import argparse
import itertools
import os
import selectors
import socket
import struct
import sys
import threading

PIECE_MAX = 0xFFFF
CTRL_KEEP_UP = 0
READ_SIZE = 1 << 16


def capture_piece(data):
    """Pieces for one client read: the ctrl byte, the length, the bytes."""
    out = bytearray()
    for off in range(0, len(data), PIECE_MAX):
        part = data[off:off + PIECE_MAX]
        out += struct.pack(">BH", CTRL_KEEP_UP, len(part)) + part
    return bytes(out)


def capture_relay(client, upstream_path):
    """Relays one connection both ways until either side closes; returns
    the client's bytes as fuzz_conn pieces."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.connect(upstream_path)
    sel = selectors.DefaultSelector()
    sel.register(client, selectors.EVENT_READ, server)
    sel.register(server, selectors.EVENT_READ, client)
    pieces = bytearray()
    open_ = True
    while open_:
        for key, _ in sel.select():
            src, dst = key.fileobj, key.data
            data = src.recv(READ_SIZE)
            if not data:
                open_ = False
                break
            if src is client:
                pieces += capture_piece(data)
            dst.sendall(data)
    sel.close()
    server.close()
    client.close()
    return bytes(pieces)


def capture_save(client, upstream_path, path):
    pieces = capture_relay(client, upstream_path)
    with open(path, "wb") as f:
        f.write(pieces)
    print(f"capture: {path}: {len(pieces)} bytes", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", required=True, help="Unix socket path clients connect to")
    ap.add_argument("--upstream", required=True, help="ampd's Unix socket path")
    ap.add_argument("--out", required=True, help="output path prefix: OUT-0, OUT-1, ...")
    ap.add_argument("--connections", type=int, default=0, help="exit after N (0: never)")
    args = ap.parse_args()

    if os.path.exists(args.listen):
        os.unlink(args.listen)
    lst = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lst.bind(args.listen)
    lst.listen(4)
    threads = []
    for n in range(args.connections) if args.connections else itertools.count():
        client, _ = lst.accept()
        # A thread per connection: a client may hold several at once.
        t = threading.Thread(target=capture_save,
                             args=(client, args.upstream, f"{args.out}-{n}"))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    lst.close()
    os.unlink(args.listen)


if __name__ == "__main__":
    main()
