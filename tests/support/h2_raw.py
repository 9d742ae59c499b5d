# SPDX-License-Identifier: MIT
"""h2_raw.py: HTTP/2 frames and HPACK fields written by hand (RFC 9113,
RFC 7541), for the Python scripts that speak to ampd below any HTTP/2
library: hostile tests, the HTTP/2 fuzz corpus and bench/hpack_bomb.py."""

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(ftype, flags, stream, payload=b""):
    """One frame: 24-bit length, type, flags, stream id, payload."""
    return (len(payload).to_bytes(3, "big") + bytes([ftype, flags]) + stream.to_bytes(4, "big")
            + payload)


def hpack_int(n, prefix, first=0):
    """n as an HPACK integer with a prefix-bit start, ORed into first."""
    if n < (1 << prefix) - 1:
        return bytes([first | n])
    out = [first | ((1 << prefix) - 1)]
    n -= (1 << prefix) - 1
    while n >= 128:
        out.append((n & 127) | 128)
        n >>= 7
    out.append(n)
    return bytes(out)


def literal(name, value, first=0x00, prefix=4):
    """A literal field with a new name, no Huffman (bytes): without indexing
    (0x00, 4-bit prefix) or with incremental indexing (0x40, 6-bit)."""
    return (hpack_int(0, prefix, first) + hpack_int(len(name), 7) + name
            + hpack_int(len(value), 7) + value)


def read_frame(sock):
    """The next frame from sock as (type, flags, stream, payload), or None
    when sock ends first; the socket's timeout applies."""
    def exactly(n):
        buf = b""
        while len(buf) < n:
            part = sock.recv(n - len(buf))
            if not part:
                return None
            buf += part
        return buf
    hd = exactly(9)
    if hd is None:
        return None
    payload = exactly(int.from_bytes(hd[:3], "big"))
    if payload is None:
        return None
    return hd[3], hd[4], int.from_bytes(hd[5:9], "big") & 0x7FFFFFFF, payload
