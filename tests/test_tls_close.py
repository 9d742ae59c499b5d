#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_tls_close.py: ampd ends a TLS connection with a close_notify.

A client does the TLS handshake (ALPN h2) through Python's ssl module over
memory BIOs on a real socket, sends the HTTP/2 preface and SETTINGS, then
goes quiet: --idle-timeout makes ampd send a GOAWAY and close. Reading on
to the socket's EOF must end in the peer's close_notify (ssl's read gives
b"" or SSLZeroReturnError), not ssl.SSLEOFError (a cut connection, which a
client cannot tell from an attacker truncating the stream).
"""
import os
import socket
import ssl
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from tls_daemon import TlsDaemon  # noqa: E402

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"   # an empty SETTINGS frame
GOAWAY_TYPE = 7


def pump(sock, tls, incoming, outgoing):
    """Sends what tls wrote; returns False at the socket's EOF."""
    out = outgoing.read()
    if out:
        sock.sendall(out)
    data = sock.recv(65536)
    if not data:
        incoming.write_eof()
        return False
    incoming.write(data)
    return True


def main():
    d = TlsDaemon(extra_args=("--idle-timeout", "1"))
    try:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(d.file("ca.pem"))
        ctx.set_alpn_protocols(["h2"])
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        sock = socket.create_connection(("127.0.0.1", d.port), timeout=20)
        tls = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                if not pump(sock, tls, incoming, outgoing):
                    raise AssertionError("the socket closed during the handshake")
        assert tls.selected_alpn_protocol() == "h2", tls.selected_alpn_protocol()
        tls.write(PREFACE + SETTINGS)
        got, frames, ended = b"", [], None
        while ended is None:
            try:
                chunk = tls.read(65536)
                if not chunk:
                    # ssl's read gives b"" for SSL_ERROR_ZERO_RETURN with the
                    # peer's shutdown received: its close_notify.
                    ended = "close_notify"
                got += chunk
                continue
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLZeroReturnError:
                ended = "close_notify"
                continue
            except ssl.SSLEOFError:
                ended = "EOF without close_notify"
                continue
            if not pump(sock, tls, incoming, outgoing) and incoming.pending == 0:
                try:
                    tls.read(1)
                    ended = "data after EOF"
                except ssl.SSLZeroReturnError:
                    ended = "close_notify"
                except ssl.SSLError as e:
                    ended = "EOF without close_notify (%s)" % e.__class__.__name__
        pos = 0
        while pos + 9 <= len(got):
            length = int.from_bytes(got[pos:pos + 3], "big")
            frames.append(got[pos + 3])
            pos += 9 + length
        sock.close()
        assert GOAWAY_TYPE in frames, "no GOAWAY before the close: frame types %s" % frames
        assert ended == "close_notify", "the connection ended by %s" % ended
        print("ok: GOAWAY, then close_notify, then the socket closed")
    finally:
        status = d.stop()
    assert status == 0, "ampd exited %s" % status
    return 0


if __name__ == "__main__":
    sys.exit(main())
