#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Times ampd's start: from exec to the first connection its Unix socket
accepts, and to the first grpc.health.v1 Check that answers SERVING
(issue 36: accept within 0.2 s; SERVING <= 0.5 s warm on PoCL).

Each start runs in the environment the shipped unit gives ampd's caches
(systemd/ampd.service.in): CACHE_DIRECTORY=DIR, POCL_CACHE_DIR=DIR/pocl,
XDG_CACHE_HOME=DIR. "cold" empties DIR before every start, "warm" fills it
with one start first, so both old and new ampd meet the same caches.

usage: python3 bench/start_time.py --ampd build/ampd [--runs 5] [--mode cold|warm|both]
                                   [-- EXTRA AMPD ARGS]
"""
import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import grpc

POLL_S = 0.005
START_TIMEOUT_S = 300
STOP_TIMEOUT_S = 60
HEALTH_CHECK = "/grpc.health.v1.Health/Check"
SERVING_REPLY = b"\x08\x01"   # HealthCheckResponse{status: SERVING}


def serving(channel):
    try:
        reply = channel.unary_unary(HEALTH_CHECK)(b"", timeout=1)
    except grpc.RpcError:
        return False
    return reply == SERVING_REPLY


def accepts(path):
    """Whether the socket accepts a connection: a gRPC channel that finds
    none backs off for a second or more, which would be measured too."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def wait_serving(proc, sock, t0):
    """Seconds from t0 to the first accept."""
    def alive():
        if proc.poll() is not None:
            raise RuntimeError("ampd exited with %d" % proc.returncode)
        if time.monotonic() - t0 > START_TIMEOUT_S:
            raise RuntimeError("not SERVING after %d s" % START_TIMEOUT_S)
        time.sleep(POLL_S)
    while not accepts(sock):
        alive()
    accepted = time.monotonic() - t0
    with grpc.insecure_channel("unix:" + sock) as channel:
        while not serving(channel):
            alive()
    return accepted


def one_start(ampd, cache, extra):
    """Seconds from exec to the first accept and to the first SERVING
    health answer."""
    sock_dir = tempfile.mkdtemp(prefix="ampd-start-")
    sock = os.path.join(sock_dir, "ampd.sock")
    env = dict(os.environ, CACHE_DIRECTORY=cache, POCL_CACHE_DIR=os.path.join(cache, "pocl"),
               XDG_CACHE_HOME=cache)
    t0 = time.monotonic()
    proc = subprocess.Popen([ampd, "--listen", "unix:" + sock, "--log-level", "warn", *extra],
                            env=env)
    try:
        accepted = wait_serving(proc, sock, t0)
        return accepted, time.monotonic() - t0
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(sock_dir, ignore_errors=True)


def empty(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)


def series(ampd, mode, runs, extra):
    cache = tempfile.mkdtemp(prefix="ampd-start-cache-")
    try:
        if mode == "warm":
            one_start(ampd, cache, extra)
        times = []
        for _ in range(runs):
            if mode == "cold":
                empty(cache)
            times.append(one_start(ampd, cache, extra))
        return times
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ampd", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mode", choices=("cold", "warm", "both"), default="both")
    ap.add_argument("extra", nargs="*", help="more ampd arguments (after --)")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs: at least 1")
    for mode in ("cold", "warm") if args.mode == "both" else (args.mode,):
        t = series(args.ampd, mode, args.runs, args.extra)
        for i, what in ((0, "accept"), (1, "SERVING")):
            x = [r[i] for r in t]
            print("%s, exec to %s: %s s (median %.3f)" % (mode, what,
                                                      " ".join("%.3f" % v for v in x),
                                                      statistics.median(x)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
