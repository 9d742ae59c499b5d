#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""corpus_tls.py: seeds for fuzz_tls (fuzz/README.md), rewritten in place.

Mode 0 seeds are real ClientHellos (Python's ssl over memory BIOs: ALPN
h2, none, or http/1.1 only; TLS 1.2 and 1.3), as raw pieces. Mode 1 seeds
are fuzz_conn seeds' client bytes (their ctrl bytes dropped), which the
harness's in-memory client seals into records after its handshake.
"""
import os
import ssl
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fuzz_tls")
CONN = os.path.join(HERE, "corpus", "fuzz_conn")
PIECE_MAX = 0x7FFF
CONN_SEEDS = ("reverse-text", "stream-hist-u8", "multi-unary", "health")


def pieces(chunks):
    out = b""
    for c in chunks:
        for i in range(0, len(c), PIECE_MAX):
            part = c[i:i + PIECE_MAX]
            out += struct.pack(">H", len(part)) + part
    return out


def client_hello(alpn, version):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ctx.maximum_version = version
    if alpn:
        ctx.set_alpn_protocols(alpn)
    rbio, wbio = ssl.MemoryBIO(), ssl.MemoryBIO()
    conn = ctx.wrap_bio(rbio, wbio, server_hostname="localhost")
    try:
        conn.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return wbio.read()


def conn_seed_bytes(path):
    """fuzz_conn input: ctrl (1) | length (2, big-endian) | bytes, repeated."""
    data = open(path, "rb").read()
    chunks, i = [], 0
    while i + 3 <= len(data):
        n = struct.unpack(">H", data[i + 1:i + 3])[0]
        chunks.append(data[i + 3:i + 3 + n])
        i += 3 + n
    return chunks


def main():
    os.makedirs(OUT, exist_ok=True)
    tls13, tls12 = ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2
    hellos = {"hello-h2-tls13": (["h2"], tls13), "hello-h2-tls12": (["h2"], tls12),
              "hello-no-alpn": (None, tls13), "hello-http11": (["http/1.1"], tls13)}
    for name, (alpn, version) in hellos.items():
        hello = client_hello(alpn, version)
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(b"\x00" + pieces([hello[:40], hello[40:]]))
    for name in CONN_SEEDS:
        with open(os.path.join(OUT, "h2-" + name), "wb") as f:
            f.write(b"\x01" + pieces(conn_seed_bytes(os.path.join(CONN, name))))


if __name__ == "__main__":
    main()
