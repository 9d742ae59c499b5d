# SPDX-License-Identifier: MIT
"""test_client_shares.py: each client's share (--max-client-streams,
--max-client-jobs), from grpcio over a loopback TCP listener with tokens.

alice holds her --max-client-streams calls open (Health/Watch streams);
her next call gets RESOURCE_EXHAUSTED naming the limit and "token alice",
while bob, on the same daemon, is served; once one of hers ends, she is
served again. alice holds her --max-client-jobs jobs in flight (Stream
calls that sent their header and wait); her next job, unary or streamed,
is refused naming that limit, bob's runs, and she gets her share back
when a stream ends. A Unix-socket client with no token counts as its uid.
Prints one line per check and a closing "N passed, M failed".
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, run_cases  # noqa: E402
from daemon_proc import Daemon, free_port  # noqa: E402

AMPCTL = os.environ.get("AMPCTL_BIN", "ampctl")
CALL_TIMEOUT_S = 60
WAIT_S = 20
MAX_STREAMS = 4
MAX_JOBS = 2
ALICE = "alice-token-0123456789"
BOB = "bob-token-9876543210"
HIST_STEP = b"\x1a\x00"   # Step{histogram: {}}: 256 bins over bytes


def md(token):
    return [("authorization", "Bearer " + token)]


class Ctx:
    d = None
    tcp = None


def reverse(ch, token):
    reply = ch.unary_unary("/amp.v1.Amp/Reverse")(b"\x0a\x03abc", timeout=CALL_TIMEOUT_S,
                                                  metadata=md(token) if token else None)
    expect(reply[2:5] == b"cba", "reply %r" % reply)


def exhausted(fn, *words):
    try:
        fn()
    except grpc.RpcError as e:
        expect(e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, "%s: %s" % (e.code(), e.details()))
        for w in words:
            expect(w in e.details(), "no %r in %r" % (w, e.details()))
        return True
    return False


def wait_jobs_in_flight(n):
    """Until the daemon's Status counts n jobs (the held streams' headers
    were read), asked with ampctl on the Unix socket."""
    deadline = time.monotonic() + WAIT_S
    while True:
        p = subprocess.run([AMPCTL, "--address", Ctx.d.address, "--json", "status"],
                           capture_output=True, timeout=CALL_TIMEOUT_S)
        expect(p.returncode == 0, "ampctl status: %s" % p.stderr)
        got = json.loads(p.stdout)["jobs_in_flight"]
        if got == n:
            return
        expect(time.monotonic() < deadline, "%d jobs in flight, want %d" % (got, n))
        time.sleep(0.05)


def test_streams_share():
    with grpc.insecure_channel(Ctx.tcp) as ch:
        watch = ch.unary_stream("/grpc.health.v1.Health/Watch")
        calls = [watch(b"", timeout=CALL_TIMEOUT_S, metadata=md(ALICE)) for _ in range(MAX_STREAMS)]
        try:
            for c in calls:
                next(c)   # SERVING: the call is open on the daemon
            expect(exhausted(lambda: reverse(ch, ALICE), "--max-client-streams (%d)" % MAX_STREAMS,
                             "token alice"), "alice's call over her share was served")
            reverse(ch, BOB)
            calls.pop().cancel()
            deadline = time.monotonic() + WAIT_S
            while True:   # the cancel reaches the daemon soon after
                try:
                    reverse(ch, ALICE)
                    break
                except grpc.RpcError as e:
                    expect(e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, str(e.code()))
                    expect(time.monotonic() < deadline, "alice's share never came back")
                    time.sleep(0.05)
        finally:
            for c in calls:
                c.cancel()


class HeldStream:
    """A Stream call that sent its header and waits to be released."""

    def __init__(self, ch, token):
        self.release = threading.Event()
        self.error = None
        header = b"\x0a" + bytes([2 + len(HIST_STEP)]) + b"\x0a" + bytes([len(HIST_STEP)]) + HIST_STEP

        def requests():
            yield header
            self.release.wait(CALL_TIMEOUT_S)

        self.call = ch.stream_stream("/amp.v1.Amp/Stream")(requests(), timeout=CALL_TIMEOUT_S,
                                                           metadata=md(token))
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
        expect(self.error is None, "held stream: %s" % self.error)


def test_jobs_share():
    with grpc.insecure_channel(Ctx.tcp) as ch:
        held = [HeldStream(ch, ALICE) for _ in range(MAX_JOBS)]
        try:
            wait_jobs_in_flight(MAX_JOBS)
            expect(exhausted(lambda: reverse(ch, ALICE), "--max-client-jobs (%d)" % MAX_JOBS,
                             "token alice"), "alice's job over her share was served")
            stream = ch.stream_stream("/amp.v1.Amp/Stream")
            header = b"\x0a\x04\x0a\x02" + HIST_STEP
            expect(exhausted(lambda: list(stream(iter([header]), timeout=CALL_TIMEOUT_S,
                                                 metadata=md(ALICE))), "--max-client-jobs"),
                   "alice's stream over her share was served")
            reverse(ch, BOB)
            held.pop().end()
            reverse(ch, ALICE)
        finally:
            for h in held:
                h.end()


def test_unix_client_is_its_uid():
    with grpc.insecure_channel(Ctx.d.address) as ch:
        watch = ch.unary_stream("/grpc.health.v1.Health/Watch")
        calls = [watch(b"", timeout=CALL_TIMEOUT_S) for _ in range(MAX_STREAMS)]
        try:
            for c in calls:
                next(c)
            expect(exhausted(lambda: reverse(ch, None), "for uid %d" % os.getuid()),
                   "the uid's call over its share was served")
            reverse(ch, ALICE)   # with a token, the token's share counts
        finally:
            for c in calls:
                c.cancel()


TESTS = [test_streams_share, test_jobs_share, test_unix_client_is_its_uid]


def main():
    tmp = tempfile.mkdtemp(prefix="ampd-shares-")
    tokens = os.path.join(tmp, "tokens")
    with open(tokens, "w") as f:
        f.write("alice %s\nbob %s\n" % (ALICE, BOB))
    os.chmod(tokens, 0o600)
    port = free_port()
    Ctx.tcp = "127.0.0.1:%d" % port
    Ctx.d = Daemon(["--listen", Ctx.tcp, "--token-file", tokens,
                    "--max-client-streams", str(MAX_STREAMS), "--max-client-jobs", str(MAX_JOBS)])
    failed = 0
    try:
        failed = run_cases(TESTS)
    finally:
        status = Ctx.d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    if status != 0:
        print("FAIL ampd exited with %d" % status)
        failed += 1
    print("%d passed, %d failed" % (len(TESTS) - min(failed, len(TESTS)), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
