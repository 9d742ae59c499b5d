# SPDX-License-Identifier: MIT
"""program_runs.py: a test that runs programs of another language (the Go
and Node examples, node_burst.js) against one ampd: each run printed, the
daemon stopped after them, its exit status checked."""
import subprocess


def run_programs(daemon, runs, timeout_s):
    """runs: (label, argv, env, ok) each; env None for this process's, ok
    a function of the finished process (None: exit status 0). Prints each
    label and the output; stops daemon (a Daemon or a TlsDaemon) after.
    Returns the test's exit status: 1 when a run failed or ampd did not
    exit 0."""
    failed = False
    try:
        for label, argv, env, ok in runs:
            p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout_s)
            print("%s:\n%s" % (label, p.stdout + p.stderr), end="")
            failed |= not (ok(p) if ok else p.returncode == 0)
    finally:
        status = daemon.stop()
    if status != 0:
        print("FAIL ampd exited with status %d" % status)
        failed = True
    return 1 if failed else 0
