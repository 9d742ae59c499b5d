# SPDX-License-Identifier: MIT
"""test_job_classes.py: a call's scheduling class (issue 34), from grpcio
against a real ampd: priorities capped by what the token or uid may use,
the metadata refused when malformed, and the queue-time limit.

Priorities: alice's token has no grant, so amp-priority high is refused
PERMISSION_DENIED naming the header, "token alice" and her cap (normal);
boss's token (max-priority=high) is served at high; a Unix client capped
at low by --uid-max-priority runs at low when it asks for nothing, is
refused normal, and a token's own max-priority= wins over its uid's. A
SIGHUP that re-reads the token file gives alice her grant. Malformed
amp-priority and amp-max-queue-time are INVALID_ARGUMENT naming them;
a Health call ignores them. Bad token-file fields and uid options stop
the start with file:line or the option. amp-server-timing 1 has a job's
reply end with a server-timing trailer, which is sent only when asked.

Queue time: a resident Stream holds most of the CPU device's
--max-device-memory, so a unary job on that device is parked until the
stream ends (runner.c's admission, no timing involved). Parked with
amp-max-queue-time 1m (1 ms) it ends UNAVAILABLE naming the header and the
time waited while the stream still holds the device, and so does ampctl's
with --max-queue-time 1ms (libampclient sends the headers); a job of the low
priority sending none ends naming --max-queue-time; the daemon serves a
host-path job meanwhile, and a small job on the device too (a batch's job
takes no device memory); a job parked with a generous queue time runs
once the stream ends.
Prints one line per check and a closing "N passed, M failed".
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, run_cases  # noqa: E402
from daemon_proc import Daemon, free_port  # noqa: E402

AMPD = os.environ.get("AMPD_BIN", "ampd")
AMPCTL = os.environ.get("AMPCTL_BIN", "ampctl")
START_TIMEOUT_S = 120
CALL_TIMEOUT_S = 60
WAIT_S = 20
ALICE = "alice-class-token-0123456789"
BOB = "bob-class-token-0123456789"
BOSS = "boss-class-token-0123456789"
DEVICE_MEMORY = 16 << 20   # --max-device-memory: the held stream takes most of it
HELD_LEN = 6 << 20         # the held stream's total_length (a resident reverse: twice that)
PATIENT = "60S"            # amp-max-queue-time of calls that must not expire
PARKED_LEN = 3 << 20       # a unary reverse that cannot fit beside it (twice that)


class Ctx:
    tmp = None
    d = None
    tcp = None
    tokens = None


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(tag, payload):
    """A length-delimited protobuf field."""
    return bytes([tag]) + varint(len(payload)) + payload


def reverse_request(data, device=""):
    return field(0x0A, data) + (field(0x12, device.encode()) if device else b"")


def md(token=None, priority=None, queue=None):
    m = []
    if token:
        m.append(("authorization", "Bearer " + token))
    if priority:
        m.append(("amp-priority", priority))
    if queue:
        m.append(("amp-max-queue-time", queue))
    return m


def reverse(ch, data=b"abc", device="", **kw):
    reply = ch.unary_unary("/amp.v1.Amp/Reverse")(reverse_request(data, device),
                                                  timeout=CALL_TIMEOUT_S, metadata=md(**kw))
    expect(reply[2:2 + min(len(data), 3)] == data[::-1][:3], "reply %r" % reply[:8])


def refused(fn, code, *words):
    try:
        fn()
    except grpc.RpcError as e:
        expect(e.code() == code, "%s, want %s: %s" % (e.code(), code, e.details()))
        for w in words:
            expect(w in e.details(), "no %r in %r" % (w, e.details()))
        return e.details()
    raise AssertionError("served, want %s" % code)


def write_tokens(alice_fields=""):
    with open(Ctx.tokens, "w") as f:
        f.write("alice %s %s\nbob %s weight=3\nboss %s max-priority=high weight=2\n"
                % (ALICE, alice_fields, BOB, BOSS))
    os.chmod(Ctx.tokens, 0o600)


# --- priorities ---------------------------------------------------------------------

def test_priority_over_cap_refused():
    with grpc.insecure_channel(Ctx.tcp) as ch:
        refused(lambda: reverse(ch, token=ALICE, priority="high"),
                grpc.StatusCode.PERMISSION_DENIED, "amp-priority high", "token alice",
                "(normal)")
        reverse(ch, token=ALICE, priority="low", queue=PATIENT)
        reverse(ch, token=ALICE, priority="normal")
        reverse(ch, token=BOSS, priority="high")
        reverse(ch, token=BOB)


def test_uid_cap_and_token_wins():
    # This daemon caps our uid at low (--uid-max-priority): a call asking
    # for nothing runs at low; normal is refused; boss's token grants high.
    # (Low's default queue time here is short: these calls send their own.)
    with grpc.insecure_channel(Ctx.d.address) as ch:
        reverse(ch, queue=PATIENT)
        reverse(ch, priority="low", queue=PATIENT)
        refused(lambda: reverse(ch, priority="normal"), grpc.StatusCode.PERMISSION_DENIED,
                "amp-priority normal", "uid %d" % os.getuid(), "(low)")
        reverse(ch, token=BOSS, priority="high")
        # alice's line says nothing of priority: her uid's cap applies.
        refused(lambda: reverse(ch, token=ALICE, priority="normal"),
                grpc.StatusCode.PERMISSION_DENIED, "token alice", "(low)")


def test_sighup_rereads_grants():
    with grpc.insecure_channel(Ctx.tcp) as ch:
        refused(lambda: reverse(ch, token=ALICE, priority="high"),
                grpc.StatusCode.PERMISSION_DENIED, "amp-priority")
        write_tokens("max-priority=high")
        Ctx.d.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                reverse(ch, token=ALICE, priority="high")
                break
            except grpc.RpcError as e:
                expect(e.code() == grpc.StatusCode.PERMISSION_DENIED, str(e.code()))
                expect(time.monotonic() < deadline, "SIGHUP never granted alice high")
                time.sleep(0.05)
        write_tokens()
        Ctx.d.proc.send_signal(signal.SIGHUP)


def ampctl(*args):
    p = subprocess.run([AMPCTL, "--address", Ctx.d.address, *args], capture_output=True,
                       timeout=CALL_TIMEOUT_S, text=True)
    return p.returncode, p.stdout, p.stderr


def test_ampctl_sends_the_class():
    # libampclient sends amp-priority and amp-max-queue-time with every
    # call: the daemon's answers show it (our uid is capped at low here).
    rc, out, err = ampctl("--priority", "normal", "reverse", "abc")
    expect(rc == 1 and "amp-priority normal" in err and "(low)" in err, "%d %s" % (rc, err))
    rc, out, err = ampctl("--priority", "low", "--max-queue-time", "60s", "reverse", "abc")
    expect(rc == 0 and out.startswith("cba"), "%d %r %s" % (rc, out, err))


def test_bad_metadata_refused():
    with grpc.insecure_channel(Ctx.tcp) as ch:
        for p in ["urgent", "HIGH", "hi", "high,low"]:
            refused(lambda: reverse(ch, token=ALICE, priority=p),
                    grpc.StatusCode.INVALID_ARGUMENT, "amp-priority")
        for q in ["5", "5x", "0m", "123456789m", "-5m", "1.5S"]:
            refused(lambda: reverse(ch, token=ALICE, queue=q), grpc.StatusCode.INVALID_ARGUMENT,
                    "amp-max-queue-time")
        twice = md(ALICE, queue="5S") + [("amp-max-queue-time", "6S")]
        refused(lambda: ch.unary_unary("/amp.v1.Amp/Reverse")(
            reverse_request(b"abc"), timeout=CALL_TIMEOUT_S, metadata=twice),
            grpc.StatusCode.INVALID_ARGUMENT, "amp-max-queue-time", "sent once")
        # Calls that run no job ignore them.
        ch.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=CALL_TIMEOUT_S,
                                                        metadata=md(priority="urgent"))


def test_server_timing_when_asked():
    """amp-server-timing 1: the reply's trailers say where the call's time
    in the daemon went; not asked, they do not; another value or twice is
    refused naming it."""
    call = None
    with grpc.insecure_channel(Ctx.tcp) as ch:
        rpc = ch.unary_unary("/amp.v1.Amp/Reverse")
        for ask in (False, True):
            m = md(ALICE) + ([("amp-server-timing", "1")] if ask else [])
            _, call = rpc.with_call(reverse_request(b"abc"), timeout=CALL_TIMEOUT_S, metadata=m)
            timing = dict(call.trailing_metadata()).get("server-timing")
            if not ask:
                expect(timing is None, "server-timing %r not asked for" % timing)
                continue
            durs = {}
            for entry in (timing or "").split(", "):
                name, _, dur = entry.partition(";dur=")
                durs[name] = float(dur)
            stages = ["request", "queue", "run", "deliver"]
            expect(sorted(durs) == sorted(stages + ["total"]), "entries of %r" % timing)
            expect(sum(durs[s] for s in stages) <= durs["total"] + 0.004, "sum > total: %r" % timing)
        for bad in (["yes"], ["1", "1"]):
            m = md(ALICE) + [("amp-server-timing", v) for v in bad]
            refused(lambda: rpc(reverse_request(b"abc"), timeout=CALL_TIMEOUT_S, metadata=m),
                    grpc.StatusCode.INVALID_ARGUMENT, "amp-server-timing", "want 1")


def refused_start(args, *words):
    """ampd with args must stop at start-up, saying each of words."""
    p = subprocess.run([AMPD, *args], capture_output=True, timeout=START_TIMEOUT_S)
    err = p.stderr.decode(errors="replace")
    expect(p.returncode != 0, "ampd %s started (%d): %s" % (args, p.returncode, err))
    for w in words:
        expect(w in err, "no %r in: %s" % (w, err))


def test_bad_token_fields_and_options_stop_the_start():
    bad = ["weight=0", "weight=1001", "weight=x", "weight=", "max-priority=urgent",
           "weight=2 weight=3", "colour=blue"]
    for i, fields in enumerate(bad):
        p = os.path.join(Ctx.tmp, "bad%d" % i)
        with open(p, "w") as f:
            f.write("# tokens\nok %s\nalice %s %s\n" % (BOB, ALICE, fields))
        os.chmod(p, 0o600)
        refused_start(["--token-file", p], "%s:3:" % p, "alice")
    for opt, value in [("--uid-weight", "1000:0"), ("--uid-weight", "1000:1001"),
                       ("--uid-weight", "alice:2"), ("--uid-weight", "1000"),
                       ("--uid-max-priority", "1000:urgent"), ("--uid-max-priority", ":high"),
                       ("--max-queue-time", "normal:5m"), ("--max-queue-time", "urgent:5ms"),
                       ("--max-queue-time", "high")]:
        refused_start([opt, value], opt, value)


# --- queue time ---------------------------------------------------------------------

class HeldStream:
    """A resident Stream (one reverse step, HELD_LEN bytes to come) that
    sent its header and waits: its OPEN reserves its device memory."""

    def __init__(self, ch):
        self.release = threading.Event()
        self.error = None
        step = field(0x0A, b"")   # Step{reverse: {}}
        header = field(0x0A, step) + field(0x12, b"cpu") + b"\x18" + varint(HELD_LEN)
        first = field(0x0A, header)

        def requests():
            yield first
            self.release.wait(CALL_TIMEOUT_S)

        # Low priority on this daemon's uid, whose default queue time is short.
        self.call = ch.stream_stream("/amp.v1.Amp/Stream")(requests(), timeout=CALL_TIMEOUT_S,
                                                           metadata=md(queue=PATIENT))
        self.thread = threading.Thread(target=self._drain)
        self.thread.start()

    def _drain(self):
        try:
            list(self.call)
        except grpc.RpcError as e:
            self.error = e

    def end(self):
        self.release.set()
        self.thread.join()


def wait_load(what, ok):
    """Until the CPU device's load (ampctl --json devices) satisfies ok."""
    deadline = time.monotonic() + WAIT_S
    while True:
        p = subprocess.run([AMPCTL, "--address", Ctx.d.address, "--json", "devices"],
                           capture_output=True, timeout=CALL_TIMEOUT_S, text=True)
        expect(p.returncode == 0, "ampctl devices: %s" % p.stderr)
        load = json.loads(p.stdout)[0]["load"]
        if ok(load):
            return
        expect(time.monotonic() < deadline, "never %s: %s" % (what, load))
        time.sleep(0.02)


def test_queue_time_limit():
    with grpc.insecure_channel(Ctx.d.address) as ch:
        held = HeldStream(ch)
        try:
            wait_load("the stream admitted", lambda load: load["memory_in_use"] >= HELD_LEN)
            # Parked behind the stream's reservation with a generous queue
            # time: it waits, and runs once the stream ends.
            data = bytes(range(256)) * (PARKED_LEN // 256)
            patient = ch.unary_unary("/amp.v1.Amp/Reverse").future(
                reverse_request(data, "cpu"), timeout=CALL_TIMEOUT_S, metadata=md(queue=PATIENT))
            wait_load("a job parked", lambda load: load["jobs_queued"] >= 1)
            msg = refused(lambda: reverse(ch, data, "cpu", queue="1m"),
                          grpc.StatusCode.UNAVAILABLE, "amp-max-queue-time of 1 ms",
                          "in the queue")
            expect("waited" in msg, msg)
            msg = refused(lambda: reverse(ch, data, "cpu", priority="low"),
                          grpc.StatusCode.UNAVAILABLE, "--max-queue-time of 2 ms",
                          "low priority")
            src = os.path.join(Ctx.tmp, "parked.bin")
            with open(src, "wb") as f:
                f.write(data)
            rc, out, err = ampctl("--device", "cpu", "--max-queue-time", "1ms", "reverse", "-i",
                                  src, "-o", os.devnull)
            expect(rc == 1 and "amp-max-queue-time of 1 ms" in err, "ampctl %d: %s" % (rc, err))
            reverse(ch, queue=PATIENT)   # the host path serves others meanwhile
            # A small job on the device runs in its batch buffers: it takes
            # no device memory, so it passes the parked one (parked behind
            # it, it would end UNAVAILABLE after 10 s).
            reverse(ch, bytes(range(100)), "cpu", queue="10S")
            expect(not patient.done(), "the patient job ended while the stream held the device")
        finally:
            held.end()
        reply = patient.result(timeout=CALL_TIMEOUT_S)
        head = b"\x0a" + varint(PARKED_LEN)
        expect(reply.startswith(head + data[::-1][:64]), "the patient job's reply")


def test_priority_passes_parked():
    """Two jobs parked behind the held stream's device memory, alice's at
    normal and then boss's at high: when the stream ends, boss's runs
    first (a higher priority passes at admission), and both are served."""
    with grpc.insecure_channel(Ctx.d.address) as ch:
        held = HeldStream(ch)
        order = []
        data = bytes(range(256)) * (PARKED_LEN // 256)
        try:
            wait_load("the stream admitted", lambda load: load["memory_in_use"] >= HELD_LEN)
            call = ch.unary_unary("/amp.v1.Amp/Reverse")
            normal = call.future(reverse_request(data, "cpu"), timeout=CALL_TIMEOUT_S,
                                 metadata=md(ALICE, queue=PATIENT))
            normal.add_done_callback(lambda f: order.append("normal"))
            wait_load("alice's job parked", lambda load: load["jobs_queued"] >= 1)
            high = call.future(reverse_request(data, "cpu"), timeout=CALL_TIMEOUT_S,
                               metadata=md(BOSS, priority="high", queue=PATIENT))
            high.add_done_callback(lambda f: order.append("high"))
            wait_load("boss's job parked", lambda load: load["jobs_queued"] >= 2)
        finally:
            held.end()
        head = b"\x0a" + varint(PARKED_LEN) + data[::-1][:64]
        for f in (high, normal):
            expect(f.result(timeout=CALL_TIMEOUT_S).startswith(head), "a parked job's reply")
        expect(order == ["high", "normal"], "completed in the order %s" % order)


TESTS = [test_priority_over_cap_refused, test_uid_cap_and_token_wins,
         test_sighup_rereads_grants, test_ampctl_sends_the_class, test_bad_metadata_refused,
         test_bad_token_fields_and_options_stop_the_start, test_queue_time_limit,
         test_priority_passes_parked, test_server_timing_when_asked]


def main():
    Ctx.tmp = tempfile.mkdtemp(prefix="ampd-classes-")
    Ctx.tokens = os.path.join(Ctx.tmp, "tokens")
    write_tokens()
    Ctx.tcp = "127.0.0.1:%d" % free_port()
    Ctx.d = Daemon(["--listen", Ctx.tcp, "--token-file", Ctx.tokens,
                    "--uid-max-priority", "%d:low" % os.getuid(),
                    "--uid-weight", "%d:5" % os.getuid(),
                    "--max-queue-time", "low:2ms", "--device", "cpu",
                    "--max-device-memory", str(DEVICE_MEMORY)])
    failed = 0
    try:
        failed = run_cases(TESTS)
    finally:
        status = Ctx.d.stop()
        shutil.rmtree(Ctx.tmp, ignore_errors=True)
    if status != 0:
        print("FAIL ampd exited with %d" % status)
        failed += 1
    print("%d passed, %d failed" % (len(TESTS) - min(failed, len(TESTS)), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
