# SPDX-License-Identifier: MIT
"""test_start_ready.py: ampd listens first and serves jobs once its devices
are open (issue 36, "sockets first").

The daemon is ampd-gated (daemon/start_gate.h): the same ampd, whose
device opening waits until the test has opened and closed a FIFO, so "the
devices are still opening" lasts exactly as long as the test wants, with no
clock involved. While it does, a client connects at once; health Check
says NOT_SERVING and a Watch sends NOT_SERVING; a unary job and a stream
are refused UNAVAILABLE with a message naming the state; ListDevices and
Status answer; READY=1 has not gone to $NOTIFY_SOCKET. Once the gate opens:
the Watch sends SERVING, READY=1 comes, jobs run. SIGTERM during the start
drains (the listeners close at once) and exits 0 once the devices opened;
a start whose devices fail (--device out of range) exits 1 with the reason.
Prints one line per check (support/cases.py).
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import POLL_S, START_TIMEOUT_S, STOP_TIMEOUT_S, Daemon  # noqa: E402

AMPD_GATED = os.environ["AMPD_GATED_BIN"]
AMPCTL = os.environ["AMPCTL_BIN"]
GATE_ENV = "AMPD_TEST_START_GATE"
STARTING = "devices starting"   # the words of rpc_no_device() while they open
SERVING, NOT_SERVING = 1, 2     # grpc.health.v1 ServingStatus


class Gated:
    """An ampd-gated whose devices wait for open_gate(), listening already."""

    def __init__(self, *extra):
        self.gate_dir = tempfile.mkdtemp(prefix="ampd-gate-")
        self.gate = os.path.join(self.gate_dir, "gate")
        os.mkfifo(self.gate)
        self.log = open(os.path.join(self.gate_dir, "ampd.log"), "w+", encoding="utf-8")
        self.daemon = Daemon(extra, stderr=self.log, ampd_bin=AMPD_GATED,
                             env={GATE_ENV: self.gate}, wait_ready=False)
        self.gate_open = False
        self.daemon.wait_listening()
        self.channel = grpc.insecure_channel(self.daemon.address)

    def open_gate(self):
        # Opening for writing waits for ampd's reader; closing ends its read.
        with open(self.gate, "wb"):
            pass
        self.gate_open = True

    def output(self):
        self.log.seek(0)
        return self.log.read()

    def close(self):
        self.channel.close()
        if not self.gate_open and self.daemon.proc.poll() is None:
            # A case that failed early: the drain ends once the devices opened.
            self.daemon.proc.send_signal(signal.SIGTERM)
            self.open_gate()
        status = self.daemon.stop()
        self.log.close()
        shutil.rmtree(self.gate_dir, ignore_errors=True)
        return status


def health(channel):
    reply = channel.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=START_TIMEOUT_S)
    # HealthCheckResponse{status = 1}: tag 0x08, then the varint.
    return reply[1] if len(reply) == 2 and reply[0] == 0x08 else None


def watch(channel):
    return channel.unary_stream("/grpc.health.v1.Health/Watch")(b"", timeout=START_TIMEOUT_S)


def ampctl(address, *args):
    return subprocess.run([AMPCTL, "--address", address, *args], capture_output=True,
                          timeout=START_TIMEOUT_S, input=b"0123456789abcdef")


def expect_refused_starting(address, *args):
    p = ampctl(address, *args)
    err = p.stderr.decode(errors="replace")
    # 1: refused by the daemon (3 would be: could not connect).
    expect(p.returncode == 1, "ampctl %s: exit %d, want 1: %s" % (args[0], p.returncode, err))
    expect(STARTING in err, "ampctl %s: %r does not say %r" % (args[0], err, STARTING))


def expect_unavailable_reverse(channel):
    # ReverseRequest{data = "x"}: field 1, length 1.
    try:
        channel.unary_unary("/amp.v1.Amp/Reverse")(b"\x0a\x01x", timeout=START_TIMEOUT_S)
    except grpc.RpcError as e:
        expect(e.code() == grpc.StatusCode.UNAVAILABLE and STARTING in (e.details() or ""),
               "Reverse while starting: %s %r" % (e.code(), e.details()))
        return
    raise AssertionError("Reverse succeeded while the devices open")


def test_serves_before_devices_then_jobs():
    g = Gated()
    try:
        expect(health(g.channel) == NOT_SERVING, "health while the devices open: not NOT_SERVING")
        w = watch(g.channel)
        first = next(w)
        expect(first == bytes([0x08, NOT_SERVING]), "Watch's first status %r" % first)
        expect_unavailable_reverse(g.channel)
        expect_refused_starting(g.daemon.address, "reverse", "-o", "-", "stressed")
        # A stream (--stream-threshold 0), refused at its header.
        expect_refused_starting(g.daemon.address, "--stream-threshold", "0", "hist")
        p = ampctl(g.daemon.address, "devices")
        expect(p.returncode == 0, "ListDevices while starting: %s" % p.stderr)
        p = ampctl(g.daemon.address, "status")
        expect(p.returncode == 0, "Status while starting: %s" % p.stderr)
        states = g.daemon.notified()
        expect("READY=1" not in states, "READY=1 before the devices opened: %r" % states)
        expect(any(s.startswith("STATUS=") for s in states), "no STATUS while starting: %r" % states)

        g.open_gate()
        expect(next(w) == bytes([0x08, SERVING]), "Watch did not turn SERVING")
        w.cancel()
        g.daemon.wait_ready()
        expect(health(g.channel) == SERVING, "health once ready: not SERVING")
        p = ampctl(g.daemon.address, "reverse", "-o", "-", "stressed")
        expect(p.returncode == 0 and p.stdout == b"desserts", "reverse once ready: %r %r" %
               (p.stdout, p.stderr))
    finally:
        status = g.close()
    expect(status == 0, "ampd exited %d" % status)


def test_sigterm_while_starting_drains():
    g = Gated()
    try:
        expect(health(g.channel) == NOT_SERVING, "health while the devices open: not NOT_SERVING")
        g.daemon.proc.send_signal(signal.SIGTERM)
        # The drain goes ahead while the devices open: the listener closes
        # (and ampd waits for the gate, so it cannot have exited instead).
        deadline = time.monotonic() + START_TIMEOUT_S
        while g.daemon.listening():
            expect(g.daemon.proc.poll() is None, "ampd exited before its devices opened")
            expect(time.monotonic() < deadline, "the listener still accepts after SIGTERM")
            g.daemon.notified(POLL_S)
        g.open_gate()
        status = g.daemon.proc.wait(STOP_TIMEOUT_S)
        states = g.daemon.notified()
        expect(status == 0, "ampd exited %d after SIGTERM during the start:\n%s" %
               (status, g.output()))
        expect("READY=1" not in states, "READY=1 during a drain: %r" % states)
        expect("STOPPING=1" in states, "no STOPPING=1: %r" % states)
    finally:
        g.close()


def test_device_failure_ends_start():
    g = Gated("--device", "99")
    try:
        g.open_gate()
        status = g.daemon.proc.wait(STOP_TIMEOUT_S)
        expect(status == 1, "ampd exited %d, want 1" % status)
        out = g.output()
        expect("--device 99" in out, "the reason is not logged:\n%s" % out)
        expect("READY=1" not in g.daemon.notified(), "READY=1 from a failed start")
    finally:
        g.close()


if __name__ == "__main__":
    sys.exit(run_cases(module_cases(globals())))
