# SPDX-License-Identifier: MIT
"""test_examples.py: the programs of examples/ run as a user would run
them, against a real ampd, and do what their comments promise.

libuv_many: one libuv loop on one thread keeps 256 calls in flight on one
connection (amp_fd, amp_process, completion callbacks) until 3,000 have
finished, every answer checked by the program; and a daemon that is not
there is reported, with exit status 1.
Prints one line per check (support/cases.py)."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon  # noqa: E402

LIBUV_MANY = os.environ.get("AMP_LIBUV_MANY_BIN", "libuv_many")
RUN_TIMEOUT_S = 300
CALLS, IN_FLIGHT = 3000, 256


def test_libuv_many_keeps_256_in_flight(daemon):
    r = subprocess.run([LIBUV_MANY, daemon.address, str(CALLS), str(IN_FLIGHT)],
                       capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    expect(r.returncode == 0, "exit %d: %s%s" % (r.returncode, r.stdout, r.stderr))
    m = re.match(r"(\d+) calls, (\d+) in flight, (\d+) wrong, \d+ calls/s$", r.stdout.strip())
    expect(m, "output: %r" % r.stdout)
    expect(m.groups() == (str(CALLS), str(IN_FLIGHT), "0"), "counts: %r" % r.stdout)


def test_libuv_many_no_daemon(daemon):
    missing = "unix:" + os.path.join(daemon.dir, "none.sock")
    r = subprocess.run([LIBUV_MANY, missing, "10"], capture_output=True, text=True,
                       timeout=RUN_TIMEOUT_S)
    expect(r.returncode == 1, "exit %d" % r.returncode)
    expect("connect" in r.stderr and "none.sock" in r.stderr, "stderr: %r" % r.stderr)


def main():
    d = Daemon()
    try:
        failed = run_cases(module_cases(globals()), d)
    finally:
        status = d.stop()
    if status != 0:
        print("FAIL ampd exited with %d" % status)
        failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
