#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Measures what a grpcio client refused by a full daemon costs both sides:
how many connections each refused call makes, and how long it takes to
fail.

Starts each $AMPD_BIN given (or $AMPD_BIN) on a Unix socket with
--max-connections 1, holds that one place with a connection of its own,
then makes CALLS grpcio Status calls, each on a new channel, and counts
the daemon's refused connections from its log (the per-call log limit's
"N call lines not logged" included). Prints one row per daemon.

usage: AMPD_BIN=build/ampd python3 bench/refused_calls.py [--calls N] [AMPD...]
"""
import argparse
import os
import re
import socket
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "support"))
import grpc  # noqa: E402
from daemon_proc import Daemon  # noqa: E402

CALL_TIMEOUT_S = 10
SETTLE_S = 0.5   # for the last refusals to reach the log


def refused_in(text):
    """Refused connections in a log: the lines, and those not logged."""
    return (text.count("connection refused (max_connections)")
            + sum(int(n) for n in re.findall(r"(\d+) call lines not logged", text)))


def measure(binary, calls):
    """(refused connections, codes seen, call times in ms) for one daemon."""
    os.environ["AMPD_BIN"] = binary
    log = tempfile.NamedTemporaryFile(prefix="ampd-log-")
    d = Daemon(("--max-connections", "1", "--request-timeout", "0"), stderr=log)
    held = socket.socket(socket.AF_UNIX)
    held.connect(d.sock_path)
    codes, times = set(), []
    try:
        for _ in range(calls):
            start = time.monotonic()
            with grpc.insecure_channel(d.address) as ch:
                try:
                    ch.unary_unary("/amp.v1.Amp/Status")(b"", timeout=CALL_TIMEOUT_S)
                    codes.add("OK")
                except grpc.RpcError as e:
                    codes.add(e.code().name)
            times.append((time.monotonic() - start) * 1000)
        time.sleep(SETTLE_S)
    finally:
        held.close()
        d.stop()
    with open(log.name, encoding="utf-8", errors="replace") as f:
        text = f.read()
    log.close()
    return refused_in(text), codes, times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("ampd", nargs="*")
    args = ap.parse_args()
    binaries = args.ampd or [os.environ.get("AMPD_BIN", "ampd")]
    print("| ampd | calls | refused connections | per call | status | p50 ms | max ms |")
    print("|---|---|---|---|---|---|---|")
    for b in binaries:
        n, codes, times = measure(b, args.calls)
        print("| %s | %d | %d | %.1f | %s | %.1f | %.1f |"
              % (b, args.calls, n, n / args.calls, ",".join(sorted(codes)),
                 statistics.median(times), max(times)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
