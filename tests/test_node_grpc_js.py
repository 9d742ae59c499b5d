#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_node_grpc_js.py: examples/node/example.js on stock @grpc/grpc-js
(from npm) against a real ampd, with no compression, then gzip and
deflate compression on (every call checked by the example). The first
run installs examples/node's locked packages
into BUILD/node with `npm ci` (later runs find them there, offline); with
no node or npm, or no registry to install from, it exits 77 (skipped, the
reason printed). Ends with ampd exiting 0."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from daemon_proc import Daemon  # noqa: E402

SKIPPED = 77
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "node")
ENCODINGS = ("identity", "gzip", "deflate")
INSTALL_TIMEOUT_S = 300
RUN_TIMEOUT_S = 120


def node_modules():
    """BUILD/node with examples/node's packages installed, or a reason why not."""
    if not shutil.which("node") or not shutil.which("npm"):
        return None, "node or npm is not installed (scripts/deps.sh installs nodejs and npm)"
    where = os.path.join(os.path.dirname(os.path.abspath(os.environ["AMPD_BIN"])), "node")
    stamp = os.path.join(where, "node_modules", ".package-lock.json")
    lock = os.path.join(HERE, "package-lock.json")
    if os.path.exists(stamp) and os.path.getmtime(stamp) >= os.path.getmtime(lock):
        return where, None
    os.makedirs(where, exist_ok=True)
    for f in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(HERE, f), where)
    p = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=where,
                       capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    if p.returncode != 0:
        return None, "npm ci failed (no registry?): %s" % p.stderr.strip()[-500:]
    return where, None


def main():
    where, why = node_modules()
    if why:
        print("SKIP %s" % why)
        return SKIPPED
    d = Daemon()
    try:
        env = dict(os.environ, NODE_PATH=os.path.join(where, "node_modules"))
        failed = False
        for enc in ENCODINGS:
            p = subprocess.run(["node", os.path.join(HERE, "example.js"), d.address, enc],
                               env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
            print(p.stdout + p.stderr, end="")
            failed |= p.returncode != 0
    finally:
        status = d.stop()
    if status != 0:
        print("FAIL ampd exited with status %d" % status)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
