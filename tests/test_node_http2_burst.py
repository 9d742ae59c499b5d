# SPDX-License-Identifier: MIT
"""test_node_http2_burst.py: 200 unary calls of 64 KiB started at once on
one connection by Node's own http2 module (tests/node_burst.js), as
Connect-ES's gRPC transport sends them: all 200 must answer OK with the
right bytes (issue 38's target; at 32 streams a Connect-ES burst lost
21-33 calls). Over a Unix socket and over TCP. No npm packages: node
alone; without node it exits 77 (skipped, the reason printed)."""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from daemon_proc import Daemon, free_port  # noqa: E402
from program_runs import run_programs  # noqa: E402

SKIPPED = 77
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node_burst.js")
CALLS, BYTES = 200, 64 * 1024
RUN_TIMEOUT_S = 120


def main():
    if not shutil.which("node"):
        print("SKIP no node on this machine")
        return SKIPPED
    port = free_port()
    d = Daemon(["--listen", "127.0.0.1:%d" % port, "--tcp-require-token", "off"])
    runs = [(address, ["node", SCRIPT, address, str(CALLS), str(BYTES)], None, None)
            for address in (d.address, "127.0.0.1:%d" % port)]
    return run_programs(d, runs, RUN_TIMEOUT_S)

if __name__ == "__main__":
    sys.exit(main())
