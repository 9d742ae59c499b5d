#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_go_example.py: examples/go builds with Debian's Go packages alone
(GOPATH mode on /usr/share/gocode: no module proxy) and runs against a real
ampd: every job kind, a Stream, 64 calls at once from goroutines, a call
past its deadline and a cancelled one, a 5 MiB reply refused first with a
status saying what to do (grpc-go's default limit is 4 MiB), and a Reverse through a
shared-memory region over SCM_RIGHTS, each result checked by the example
itself; then all but the region again over TLS with a bearer token. With no
go toolchain or Debian's grpc-go it exits 77 (skipped, the reason printed).
Ends with ampd exiting 0."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from program_runs import run_programs  # noqa: E402
from tls_daemon import TlsDaemon  # noqa: E402

SKIPPED = 77
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "go", "main.go")
GOCODE = "/usr/share/gocode"
TOKEN = "go-example-token-0123456789"
NEEDS = ("google.golang.org/grpc", "google.golang.org/protobuf", "golang.org/x/sys/unix")
BUILD_TIMEOUT_S = 300
RUN_TIMEOUT_S = 120


def main():
    missing = [p for p in NEEDS if not os.path.isdir(os.path.join(GOCODE, "src", p))]
    if not shutil.which("go") or missing:
        print("SKIP no go toolchain or Debian's Go packages (scripts/deps.sh): missing %s"
              % (", ".join(missing) or "go"))
        return SKIPPED
    out = os.path.join(os.path.dirname(os.path.abspath(os.environ["AMPD_BIN"])), "go-example")
    os.makedirs(out, exist_ok=True)
    exe = os.path.join(out, "ampd-go-example")
    env = dict(os.environ, GO111MODULE="off", GOPATH=GOCODE, GOCACHE=os.path.join(out, "cache"),
               GOFLAGS="")
    p = subprocess.run(["go", "build", "-o", exe, SRC], env=env, capture_output=True, text=True,
                       timeout=BUILD_TIMEOUT_S)
    if p.returncode != 0:
        print("FAIL go build: %s" % p.stderr)
        return 1
    d = TlsDaemon(token=TOKEN)   # its Unix socket too
    env = dict(os.environ, AMP_TLS_CA=d.file("ca.pem"), AMP_TOKEN=TOKEN)
    runs = [(address, [exe, address], env,
             lambda p, last=last: p.returncode == 0 and last in p.stdout)
            for address, last in ((d.daemon.address, "ok   region"),
                                  ("tls:localhost:%d" % d.port, "ok   deadline and cancel"))]
    return run_programs(d, runs, RUN_TIMEOUT_S)

if __name__ == "__main__":
    sys.exit(main())
