# SPDX-License-Identifier: MIT
"""test_ruby_grpc.py: Debian's Ruby gRPC (ruby-grpc), a stock client with
default options, against a real ampd (tests/ruby_stock.rb): right answers,
health, and a reply past its 4 MiB receive limit refused before the device
work with a status naming amp-max-reply-bytes (issue 38). Over the Unix
socket and TCP. Without ruby and its grpc gem it exits 77 (skipped, the
reason printed)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from daemon_proc import Daemon, free_port  # noqa: E402
from program_runs import run_programs  # noqa: E402

SKIPPED = 77
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ruby_stock.rb")
RUN_TIMEOUT_S = 120


def main():
    try:
        subprocess.run(["ruby", "-e", "require 'grpc'"], check=True, capture_output=True,
                       timeout=RUN_TIMEOUT_S)
    except (OSError, subprocess.CalledProcessError):
        print("SKIP no ruby with the grpc gem (Debian's ruby-grpc; scripts/deps.sh)")
        return SKIPPED
    port = free_port()
    d = Daemon(["--listen", "127.0.0.1:%d" % port, "--tcp-require-token", "off"])
    runs = [(address, ["ruby", SCRIPT, address], None,
             lambda p: p.returncode == 0 and "ok   a reply past 4 MiB" in p.stdout)
            for address in (d.address, "127.0.0.1:%d" % port)]
    return run_programs(d, runs, RUN_TIMEOUT_S)


if __name__ == "__main__":
    sys.exit(main())
