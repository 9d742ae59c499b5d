# SPDX-License-Identifier: MIT
"""test_grpcpp_stock.py: Debian's gRPC C++ (libgrpc++), a stock client with
default options, against a real ampd (tests/grpcpp_stock.cc, built here
with g++ as test_go_example builds its program): right answers, health,
and a reply past its 4 MiB receive limit refused before the device work
with a status naming amp-max-reply-bytes (issue 38). Over the Unix socket
and TCP. Without g++ or libgrpc++-dev it exits 77 (skipped, the reason
printed)."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from daemon_proc import Daemon, free_port  # noqa: E402
from program_runs import run_programs  # noqa: E402

SKIPPED = 77
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grpcpp_stock.cc")
BUILD_TIMEOUT_S = 300
RUN_TIMEOUT_S = 120


def build():
    """The program's path, or None with the reason."""
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "grpc++"], capture_output=True,
                           text=True) if shutil.which("pkg-config") else None
    if not shutil.which("g++") or not flags or flags.returncode != 0:
        return None, "no g++ or Debian's libgrpc++-dev (scripts/deps.sh)"
    exe = os.path.join(os.path.dirname(os.path.abspath(os.environ["AMPD_BIN"])), "grpcpp_stock")
    p = subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-o", exe, SRC,
                        *flags.stdout.split()], capture_output=True, text=True,
                       timeout=BUILD_TIMEOUT_S)
    if p.returncode != 0:
        raise RuntimeError("g++: " + p.stderr)
    return exe, None


def main():
    exe, why = build()
    if why:
        print("SKIP %s" % why)
        return SKIPPED
    port = free_port()
    d = Daemon(["--listen", "127.0.0.1:%d" % port, "--tcp-require-token", "off"])
    runs = [(address, [exe, address], None,
             lambda p: p.returncode == 0 and "ok   a reply past 4 MiB" in p.stdout)
            for address in (d.address, "127.0.0.1:%d" % port)]
    return run_programs(d, runs, RUN_TIMEOUT_S)


if __name__ == "__main__":
    sys.exit(main())
