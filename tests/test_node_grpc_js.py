#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_node_grpc_js.py: examples/node/example.js on stock @grpc/grpc-js
(from npm) against a real ampd, with no compression, then gzip and
deflate compression on (every call checked by the example, a call past
its deadline and a cancelled one too, and a 5 MiB reply refused first
with a status saying what to do), then over TLS with a bearer
token. The first
run installs examples/node's locked packages
into BUILD/node with `npm ci` (later runs find them there, offline); with
no node or npm, or no registry to install from, it exits 77 (skipped, the
reason printed). Ends with ampd exiting 0."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from program_runs import run_programs  # noqa: E402
from tls_daemon import TlsDaemon  # noqa: E402
from npm_dir import npm_dir  # noqa: E402

SKIPPED = 77
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "node")
ENCODINGS = ("identity", "gzip", "deflate")
RUN_TIMEOUT_S = 120
TOKEN = "node-example-token-0123456789"


def main():
    where, why = npm_dir(HERE, "node")
    if why:
        print("SKIP %s" % why)
        return SKIPPED
    d = TlsDaemon(token=TOKEN)   # its Unix socket too
    env = dict(os.environ, NODE_PATH=os.path.join(where, "node_modules"),
               AMP_TLS_CA=d.file("ca.pem"), AMP_TOKEN=TOKEN)
    runs = [(d.daemon.address, enc) for enc in ENCODINGS]
    runs.append(("tls:localhost:%d" % d.port, "identity"))
    return run_programs(d, [("%s %s" % (address, enc),
                             ["node", os.path.join(HERE, "example.js"), address, enc], env, None)
                            for address, enc in runs], RUN_TIMEOUT_S)

if __name__ == "__main__":
    sys.exit(main())
