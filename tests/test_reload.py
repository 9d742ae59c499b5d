# SPDX-License-Identifier: MIT
"""test_reload.py: SIGHUP reloads ampd's settings from its config file.

A real ampd starts with --config FILE (--max-connections 8) while this
test holds one connection open. The file then lowers --max-connections to
1 and raises --log-level to debug: after SIGHUP the daemon logs both
changes and refuses a second connection's call. A file that does not
parse is logged as an error and changes nothing: the call is still
refused. A good file again (--max-connections 2, and --max-streams, which
cannot change while running) is logged, the call now succeeds, and the
debug level is in force (an OK call is logged; calls are retried while
the per-call log limit is spent by the refusals). The daemon then drains
and exits 0.
Prints one line per check (support/cases.py).
"""
import os
import signal
import socket
import sys
import tempfile
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon  # noqa: E402

CALL_TIMEOUT_S = 10
LOG_WAIT_S = 60
CALL_LOG_WAIT_S = 2
POLL_S = 0.05
STATUS = "/amp.v1.Amp/Status"


class Reloading:
    def __init__(self):
        self.conf = tempfile.NamedTemporaryFile("w", prefix="ampd-conf-", suffix=".conf")
        self.write("max-connections = 8\n")
        self.log = tempfile.NamedTemporaryFile(prefix="ampd-log-")
        self.daemon = Daemon(("--config", self.conf.name), stderr=self.log)
        self.held = socket.socket(socket.AF_UNIX)
        self.held.connect(self.daemon.sock_path)   # counts toward --max-connections

    def write(self, text):
        # request-timeout 0: the held connection, which never speaks, stays.
        with open(self.conf.name, "w") as f:
            f.write("request-timeout = 0\n" + text)

    def text(self):
        with open(self.log.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def reload(self, text, *lines):
        """Writes the file, sends SIGHUP, waits until the log has lines."""
        self.write(text)
        start = len(self.text())
        os.kill(self.daemon.proc.pid, signal.SIGHUP)
        deadline = time.monotonic() + LOG_WAIT_S
        while time.monotonic() < deadline:
            new = self.text()[start:]
            if all(line in new for line in lines):
                return new
            time.sleep(POLL_S)
        raise AssertionError("after SIGHUP, no %r in:\n%s" % (lines, self.text()[start:]))

    def call_logged(self, line):
        """Status calls, each until its line is logged or CALL_LOG_WAIT_S
        passes, until one is or LOG_WAIT_S: whether it was, and the log
        since the first call. A call's line is written as the call ends, a
        moment after its client has the reply, and is one of those the
        per-call rate limit (log.h) may drop: grpcio's reconnections to the
        full daemon above can spend its burst, and the dropped lines are
        counted only in the next line let through."""
        start = len(self.text())
        deadline = time.monotonic() + LOG_WAIT_S
        while time.monotonic() < deadline:
            expect(self.status_call() == grpc.StatusCode.OK,
                   "a call under --max-connections 2 failed")
            wait = time.monotonic() + CALL_LOG_WAIT_S
            while time.monotonic() < wait:
                if line in self.text()[start:]:
                    return True, self.text()[start:]
                time.sleep(POLL_S)
        return False, self.text()[start:]

    def status_call(self):
        """A fresh connection's Status call: its code."""
        with grpc.insecure_channel(self.daemon.address) as ch:
            try:
                ch.unary_unary(STATUS)(b"", timeout=CALL_TIMEOUT_S)
                return grpc.StatusCode.OK
            except grpc.RpcError as e:
                return e.code()

    def close(self):
        self.held.close()
        status = self.daemon.stop()
        self.conf.close()
        self.log.close()
        return status


def test_reload():
    r = Reloading()
    try:
        expect(r.status_call() == grpc.StatusCode.OK, "a call under --max-connections 8 failed")
        r.reload("max-connections = 1\nlog-level = debug\n",
                 "SIGHUP: --max-connections 1 (was 8)", "SIGHUP: --log-level debug (was info)",
                 "SIGHUP: settings reloaded, 2 changed")
        code = r.status_call()
        expect(code == grpc.StatusCode.UNAVAILABLE,
               "a second connection under --max-connections 1: %s" % code)

        new = r.reload("max-connections = one\n", "error: SIGHUP: keeping the settings in force: ")
        expect("--max-connections" in new and "one" in new, "the error does not say what: " + new)
        code = r.status_call()
        expect(code == grpc.StatusCode.UNAVAILABLE, "after a bad file: %s" % code)

        new = r.reload("max-connections = 2\nlog-level = debug\nmax-streams = 3\n",
                       "SIGHUP: --max-connections 2 (was 1)",
                       "warn: SIGHUP: --max-streams 3 (was 100) takes effect only at restart")
        expect("--log-level" not in new and "settings reloaded, 2 changed" in new,
               "unchanged settings reported, or a wrong count: " + new)
        line = 'debug: call "%s" from uid %d: OK' % (STATUS, os.getuid())
        logged, new = r.call_logged(line)
        expect(logged, "--log-level debug is not in force:\n" + new)
    finally:
        status = r.close()
    expect(status == 0, "ampd exited with status %d" % status)


def main():
    return 0 if run_cases(module_cases(globals())) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
