#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_tls_ciphers.py: the cipher a tls: listener chooses.

ampd prefers AES-128-GCM, which seals bulk data faster than AES-256-GCM
(OpenSSL's default first choice) where the CPU has AES instructions, and
gives ChaCha20-Poly1305 to a client that lists it first (one without
them). Each case makes a handshake (ALPN h2) and checks the suite chosen:
TLS 1.3 through the openssl command (Python's ssl cannot order TLS 1.3
suites), TLS 1.2 through Python's ssl; and a client that offers only
AES-256 still gets a connection.
"""
import os
import re
import socket
import ssl
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import run_cases  # noqa: E402
from tls_daemon import TlsDaemon  # noqa: E402

TIMEOUT_S = 20


def tls13_suite(d, suites):
    """The TLS 1.3 suite ampd picks when the client offers suites, in order."""
    r = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % d.port,
                        "-alpn", "h2", "-CAfile", d.file("ca.pem"), "-verify_return_error",
                        "-tls1_3", "-ciphersuites", suites],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT_S)
    m = re.search(rb"New, TLSv1\.3, Cipher is (\S+)", r.stdout)
    assert m, "no TLS 1.3 handshake: %r %r" % (r.stdout[-400:], r.stderr[-400:])
    return m.group(1).decode()


def tls12_cipher(d, ciphers):
    """The TLS 1.2 cipher ampd picks when the client offers ciphers, in order."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(d.file("ca.pem"))
    ctx.set_alpn_protocols(["h2"])
    ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(ciphers)
    with socket.create_connection(("127.0.0.1", d.port), timeout=TIMEOUT_S) as s:
        with ctx.wrap_socket(s, server_hostname="localhost") as t:
            assert t.selected_alpn_protocol() == "h2"
            return t.cipher()[0]


def tls13_default_client_gets_aes128(d):
    # OpenSSL's own client order: AES-256 first.
    got = tls13_suite(d, "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:"
                         "TLS_AES_128_GCM_SHA256")
    assert got == "TLS_AES_128_GCM_SHA256", got


def tls13_chacha_first_client_gets_chacha(d):
    got = tls13_suite(d, "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256")
    assert got == "TLS_CHACHA20_POLY1305_SHA256", got


def tls13_aes256_only_client_connects(d):
    got = tls13_suite(d, "TLS_AES_256_GCM_SHA384")
    assert got == "TLS_AES_256_GCM_SHA384", got


def tls12_aes256_first_client_gets_aes128(d):
    got = tls12_cipher(d, "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256")
    assert got == "ECDHE-ECDSA-AES128-GCM-SHA256", got


def tls12_chacha_first_client_gets_chacha(d):
    got = tls12_cipher(d, "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256")
    assert got == "ECDHE-ECDSA-CHACHA20-POLY1305", got


def main():
    d = TlsDaemon()
    try:
        failed = run_cases([tls13_default_client_gets_aes128,
                            tls13_chacha_first_client_gets_chacha,
                            tls13_aes256_only_client_connects,
                            tls12_aes256_first_client_gets_aes128,
                            tls12_chacha_first_client_gets_chacha], d)
    finally:
        status = d.stop()
    assert status == 0, "ampd exited %s" % status
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
