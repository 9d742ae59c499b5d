# SPDX-License-Identifier: MIT
"""test_log.py: ampd's log lines, levels and journal priorities.

A real ampd, its stderr in a file, gets real gRPC calls (Debian's
python3-grpcio, raw protobuf bytes). A refused call is one warn line with
its method, status name, message and peer (uid on a Unix socket, address
on TCP); a call answered OK is a debug line; --log-level error hides both
and the info lines; an unknown level is a usage error. With
$JOURNAL_STREAM naming stderr's device and inode, each line carries its
syslog priority ("<6>", "<4>"); naming another file (or unset), none,
and each line starts with its UTC time instead. A flood of
refused calls is rate-limited, and the next line let through says how
many were not logged, so that logged + not logged is every call.
Prints one line per check and a closing "N passed, M failed".
"""
import os
import re
import subprocess
import sys
import tempfile
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon, free_port  # noqa: E402

CALL_TIMEOUT_S = 120
EXIT_USAGE = 2
REVERSE = "/amp.v1.Amp/Reverse"
STATUS = "/amp.v1.Amp/Status"
FLOOD = 400                # refused calls, well past the burst of 200 lines
REFILL_S = 0.2             # at 50 lines a second: room for the next line
# The request field 2 of Reverse is the device: one that does not exist.
# Outside the journal a line starts with its UTC time (RFC 3339, ms).
STAMPED = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ampd: "
BAD_DEVICE = b"\x0a\x03abc\x12\x0eno-such-device"


class Logged:
    """A daemon whose stderr goes to a file; env is added to its environment."""

    def __init__(self, extra=(), env=None, target=None):
        self.log = tempfile.NamedTemporaryFile(prefix="ampd-log-")
        saved = dict(os.environ)
        os.environ.update(env(self.log) if env else {})
        try:
            self.daemon = Daemon(extra, stderr=self.log)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.channel = grpc.insecure_channel(target or self.daemon.address)

    def text(self):
        with open(self.log.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def call(self, method, request=b""):
        try:
            self.channel.unary_unary(method)(request, timeout=CALL_TIMEOUT_S)
            return grpc.StatusCode.OK
        except grpc.RpcError as e:
            return e.code()

    def close(self):
        """Stops the daemon; the whole log, read once it has exited (a
        call's line is written as the call ends, a moment after its client
        has the reply)."""
        self.channel.close()
        status = self.daemon.stop()
        text = self.text()
        self.log.close()
        expect(status == 0, "ampd exited with %d" % status)
        return text


def test_default_level():
    d = Logged()
    try:
        expect(d.call(REVERSE, BAD_DEVICE) == grpc.StatusCode.INVALID_ARGUMENT, "bad device")
        expect(d.call("/amp.v1.Amp/Nope") == grpc.StatusCode.UNIMPLEMENTED, "unknown method")
        expect(d.call(STATUS) == grpc.StatusCode.OK, "Status")
    finally:
        text = d.close()
    uid = os.getuid()
    line = r'ampd: warn: call "%s" from uid %d: INVALID_ARGUMENT: .*device' % (REVERSE, uid)
    expect(re.search(line, text), "no refusal line like %r in:\n%s" % (line, text))
    expect(re.search(r'ampd: warn: call "/amp.v1.Amp/Nope" from uid %d: UNIMPLEMENTED' % uid,
                     text), "no UNIMPLEMENTED line in:\n" + text)
    expect("Status" not in text, "an OK call was logged at info:\n" + text)
    expect("ampd: listening on" in text, "no info lines:\n" + text)


def test_debug_and_tcp():
    tcp = "127.0.0.1:%d" % free_port()
    d = Logged(("--log-level", "debug", "--listen", tcp, "--tcp-require-token", "off"), target=tcp)
    try:
        expect(d.call(STATUS) == grpc.StatusCode.OK, "Status over TCP")
        expect(d.call(REVERSE, BAD_DEVICE) == grpc.StatusCode.INVALID_ARGUMENT, "bad device")
    finally:
        text = d.close()
    expect(re.search(r'ampd: debug: call "%s" from address 127\.0\.0\.1: OK' % STATUS, text),
           "no debug line for the OK call in:\n" + text)
    expect(re.search(r'ampd: warn: call "%s" from address 127\.0\.0\.1: INVALID_ARGUMENT' % REVERSE,
                     text), "no TCP refusal line in:\n" + text)


def test_error_level():
    d = Logged(("--log-level", "error"))
    try:
        expect(d.call(REVERSE, BAD_DEVICE) == grpc.StatusCode.INVALID_ARGUMENT, "bad device")
    finally:
        text = d.close()
    expect(text == "", "--log-level error printed:\n" + text)


def test_bad_level():
    p = subprocess.run([os.environ["AMPD_BIN"], "--log-level", "loud"], capture_output=True,
                       text=True, timeout=60)
    expect(p.returncode == EXIT_USAGE, "exit %d" % p.returncode)
    expect("--log-level" in p.stderr and "loud" in p.stderr, repr(p.stderr))


def journal_of(log):
    st = os.fstat(log.fileno())
    return {"JOURNAL_STREAM": "%d:%d" % (st.st_dev, st.st_ino)}


def test_journal_priorities():
    d = Logged(env=journal_of)
    try:
        expect(d.call(REVERSE, BAD_DEVICE) == grpc.StatusCode.INVALID_ARGUMENT, "bad device")
    finally:
        lines = d.close().splitlines()
    expect(lines and all(re.match(r"<[3467]>ampd: ", l) for l in lines),
           "lines without a priority: %r" % lines)
    expect(any(l.startswith("<6>ampd: listening on") for l in lines), "no <6> info line")
    expect(any(l.startswith("<4>ampd: warn: call ") for l in lines), "no <4> refusal line")

    other = Logged(env=lambda log: {"JOURNAL_STREAM": "1:1"})
    lines = other.close().splitlines()
    expect(lines and all(re.match(STAMPED, l) for l in lines),
           "priorities, or no time, with another file as the journal: %r" % lines)


def test_rate_limit():
    d = Logged()
    try:
        for _ in range(FLOOD):
            d.call("/amp.v1.Amp/Flood")
        time.sleep(REFILL_S)
        d.call("/amp.v1.Amp/Flood")
    finally:
        text = d.close()
    logged = len(re.findall(r'call "/amp.v1.Amp/Flood"', text))
    said = [int(n) for n in re.findall(r"warn: (\d+) call lines not logged", text)]
    expect(said, "no line says how many were not logged:\n" + text[-2000:])
    expect(logged < FLOOD, "%d of %d refusals logged: no limit" % (logged, FLOOD))
    expect(logged + sum(said) == FLOOD + 1,
           "%d logged + %s not logged != %d calls" % (logged, said, FLOOD + 1))


def main():
    return 0 if run_cases(module_cases(globals())) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
