# SPDX-License-Identifier: MIT
"""test_node_burst.py: 200 unary calls of 64 KiB started at once on one
connection, all of which must answer OK with the right bytes (issue 38's
target; at 32 streams a Connect-ES burst lost 21-33 calls):
  - from Node's own http2 module (tests/node_http2_burst.js), over a Unix
    socket and TCP: node alone;
  - from Connect-ES (tests/connect/burst.mjs: @connectrpc/connect-node,
    whose gRPC transport is that module), over TCP, its client made from
    ampd's descriptor set. Its locked packages are installed into
    BUILD/connect with `npm ci` the first time (support/npm_dir.py).
Without node it exits 77 (skipped, the reason printed); without npm or a
registry, the Connect-ES run is skipped and said so."""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from daemon_proc import Daemon, free_port  # noqa: E402
from npm_dir import npm_dir  # noqa: E402
from program_runs import run_programs  # noqa: E402

SKIPPED = 77
HERE = os.path.dirname(os.path.abspath(__file__))
CONNECT = os.path.join(HERE, "connect")
CALLS, BYTES = 200, 64 * 1024
RUN_TIMEOUT_S = 120


def main():
    if not shutil.which("node"):
        print("SKIP no node on this machine")
        return SKIPPED
    port = free_port()
    d = Daemon(["--listen", "127.0.0.1:%d" % port, "--tcp-require-token", "off"])
    burst = [str(CALLS), str(BYTES)]
    runs = [("node http2, " + address,
             ["node", os.path.join(HERE, "node_http2_burst.js"), address, *burst], None, None)
            for address in (d.address, "127.0.0.1:%d" % port)]
    where, why = npm_dir(CONNECT, "connect")
    if why:
        print("SKIP Connect-ES: %s" % why)
    else:
        # ES modules resolve their imports beside themselves.
        shutil.copy(os.path.join(CONNECT, "burst.mjs"), where)
        descriptors = os.path.join(os.environ["AMP_PYTHON_DIR"], "ampclient", "ampd.desc")
        runs.append(("Connect-ES, 127.0.0.1:%d" % port,
                     ["node", os.path.join(where, "burst.mjs"), descriptors,
                      "http://127.0.0.1:%d" % port, *burst], None, None))
    return run_programs(d, runs, RUN_TIMEOUT_S)


if __name__ == "__main__":
    sys.exit(main())
