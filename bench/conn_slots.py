#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Measures issue 33 item 2: connections that never authenticate against
the slots of those that do, at the default limits.

Starts $AMPD_BIN (Unix socket, a plain loopback TCP port and a tls: port,
tokens required on TCP) and, from 127.0.0.2..6, opens 64 connections each
(--max-peer-connections' default): idle HTTP/2 (preface and SETTINGS),
the same with a Health/Watch open on each, and 80 half-open TLS handshakes
each. During each attack it times one reverse by a token-bearing client
on TCP, one on TLS and one on the Unix socket ($AMPCTL_BIN), and after it
how long the attack's connections stay open.

usage: AMPD_BIN=build/ampd AMPCTL_BIN=build/ampctl python3 bench/conn_slots.py [ampd args...]
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "support"))
import test_hostile_conn_slots as t  # noqa: E402

HOLD_S = 30   # how long an attack's connections are watched for closing


def clients(what):
    for address, tls, token in (("127.0.0.1:%d" % t.Ctx.plain_port, False, True),
                                ("tls:127.0.0.1:%d" % t.Ctx.tls.port, True, True),
                                (t.Ctx.tls.daemon.address, False, False)):
        t0 = time.monotonic()
        rc, out, err = t.ampctl(address, "reverse", "stressed", tls=tls, token=token)
        ms = (time.monotonic() - t0) * 1000
        print("%-22s %-28s %s in %.0f ms%s" % (what, address.split(":")[0] + (" token" if token
              else ""), "served" if rc == 0 and out == b"desserts" else "REFUSED",
              ms, "" if rc == 0 else ": " + err.strip()))


def still_open(socks):
    n = 0
    for s in socks:
        s.setblocking(False)
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
        except BlockingIOError:
            n += 1
        except OSError:
            pass
    return n


def run(what, port, per_peer, first):
    t0 = time.monotonic()
    socks = t.attack(port, per_peer, first)
    clients(what)
    opened = len(socks)
    while time.monotonic() - t0 < HOLD_S and still_open(socks):
        time.sleep(t.POLL_S)
    left = still_open(socks)
    print("%-22s %d opened; %d still open after %.1f s" % (what, opened, left,
                                                            time.monotonic() - t0))
    for s in socks:
        s.close()
    time.sleep(2)


def main():
    workdir = t.start(("--log-level", "warn", *sys.argv[1:]))
    try:
        run("idle h2", t.Ctx.plain_port, t.PER_PEER, t.hello())
        run("Health/Watch each", t.Ctx.plain_port, t.PER_PEER, t.watch())
        run("half-open TLS", t.Ctx.tls.port, t.TLS_PER_PEER, t.PARTIAL_HELLO)
    finally:
        t.stop(workdir)


if __name__ == "__main__":
    main()
