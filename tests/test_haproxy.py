# SPDX-License-Identifier: MIT
"""test_haproxy.py: several ampd behind HAProxy, with the repository's own
recipe (deploy/haproxy/haproxy.cfg, Debian's haproxy 2.6).

Three ampd on loopback TCP ports and HAProxy in front: unary and streamed
jobs of every kind through it from ampctl (libampclient) and grpcio, spread
over all three; one instance drained with SIGTERM under load (its /ready
turns 503 and HAProxy marks it DOWN while it still serves, --drain-delay,
so no call fails; the drain ends with status 0); one killed with SIGKILL under
load (calls to it fail, later ones go elsewhere, nothing hangs);
shared-memory regions refused cleanly through the balancer (they are local
only). Prints one line per check and a closing "N passed, M failed".
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "support"))
sys.path.insert(0, HERE)
from cases import expect, run_cases  # noqa: E402
from daemon_proc import Daemon, free_port  # noqa: E402
from test_grpcio import pb_bytes, pb_decode, pb_uint, stream_add  # noqa: E402

HAPROXY = "/usr/sbin/haproxy"
CONFIG = os.path.join(os.environ.get("AMP_SOURCE_DIR", os.path.join(HERE, "..")),
                      "deploy", "haproxy", "haproxy.cfg")
CALL_TIMEOUT_S = 60       # a call still open after this has hung
UP_TIMEOUT_S = 30
LOAD_CALL_BYTES = 64 << 10
# ampd's --drain-delay: /ready says 503 this long before the listeners
# close; HAProxy's checks (inter 500ms, fall 1) need about one interval.
DRAIN_DELAY_S = 3
EXIT_REFUSED = 1          # ampctl: the daemon (or the balancer) answered with an error
# What ampctl prints for a refusal UNAVAILABLE: a drain's GOAWAY or answer, a
# balancer's 502/503 page.
REFUSED_WORDS = ("shutting down", "UNAVAILABLE", "refused the call")


class Farm:
    """Three ampd, HAProxy in front."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="amp-lb-")
        self.ports = [free_port() for _ in range(3)]
        self.probes = [free_port() for _ in range(3)]
        self.daemons = [Daemon(("--listen", "127.0.0.1:%d" % p, "--drain-timeout", "30",
                                "--drain-delay", str(DRAIN_DELAY_S), "--tcp-require-token", "off",
                                "--metrics-listen", "127.0.0.1:%d" % probe))
                        for p, probe in zip(self.ports, self.probes)]
        self.front = "127.0.0.1:%d" % free_port()
        self.stats = os.path.join(self.dir, "stats.sock")
        env = dict(os.environ, AMP_LB_BIND=self.front, AMP_LB_STATS=self.stats,
                   **{"AMP_LB_AMPD%d" % (i + 1): "127.0.0.1:%d" % p
                      for i, p in enumerate(self.ports)},
                   **{"AMP_LB_PROBE%d" % (i + 1): str(p) for i, p in enumerate(self.probes)})
        check = subprocess.run([HAPROXY, "-c", "-q", "-f", CONFIG], env=env,
                               capture_output=True)
        expect(check.returncode == 0, "haproxy -c: %r" % check.stderr)
        self.haproxy = subprocess.Popen([HAPROXY, "-db", "-f", CONFIG], env=env,
                                        stderr=open(os.path.join(self.dir, "haproxy.log"), "w"))
        self.wait_states(["UP", "UP", "UP"])

    def server_states(self):
        s = socket.socket(socket.AF_UNIX)
        s.connect(self.stats)
        s.sendall(b"show stat\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        states = {}
        for line in data.decode().splitlines():
            f = line.split(",")
            if len(f) > 17 and f[0] == "ampd" and f[1].startswith("ampd"):
                states[f[1]] = f[17]
        return [states.get("ampd%d" % (i + 1), "?").split(" ")[0] for i in range(3)]

    def wait_states(self, want):
        deadline = time.monotonic() + UP_TIMEOUT_S
        while True:
            try:
                got = self.server_states()
            except OSError:
                got = None
            if got == want:
                return
            expect(time.monotonic() < deadline, "HAProxy says %r, want %r" % (got, want))
            time.sleep(0.1)

    def stop(self):
        self.haproxy.terminate()
        self.haproxy.wait()
        return [d.stop() for d in self.daemons]


def ampctl(address, *args, data=None):
    return subprocess.run([os.environ["AMPCTL_BIN"], "--address", address, *args],
                          input=data, capture_output=True, timeout=CALL_TIMEOUT_S)


def jobs_completed(daemon):
    r = ampctl(daemon.address, "--json", "status")
    expect(r.returncode == 0, "status: %r" % r.stderr)
    return json.loads(r.stdout)["jobs_completed"]


# --- checks ---------------------------------------------------------------------------

def test_every_kind_from_ampctl(farm):
    data = bytes(range(256)) * 4096 + b"odd"      # 1 MiB and 3 bytes
    for threshold in ("16M", "0"):                # unary, then streamed
        common = ("--stream-threshold", threshold)
        r = ampctl(farm.front, *common, "reverse", data=data)
        expect(r.returncode == 0 and r.stdout == data[::-1], "reverse %s: %r" % (threshold, r.stderr))
        r = ampctl(farm.front, *common, "transform", "--op", "add", "--value", "1", data=data)
        expect(r.returncode == 0 and r.stdout == bytes((b + 1) & 255 for b in data),
               "transform %s: %r" % (threshold, r.stderr))
        r = ampctl(farm.front, *common, "--json", "hist", data=data)
        expect(r.returncode == 0, "hist %s: %r" % (threshold, r.stderr))
        counts = json.loads(r.stdout)["counts"]
        expect(counts[0] == 4096 and counts[100] == 4096 + 2 and counts[111] == 4096 + 1,
               "hist %s: %r" % (threshold, counts[:2]))
        out = os.path.join(farm.dir, "pipeline.out")
        r = ampctl(farm.front, *common, "pipeline", "-o", out, "transform:add:3", "hist",
                   data=data)
        expect(r.returncode == 0, "pipeline %s: %r" % (threshold, r.stderr))
        with open(out, "rb") as f:
            expect(f.read() == bytes((b + 3) & 255 for b in data), "pipeline %s data" % threshold)
        expect(json.loads(r.stdout)["counts"][3] == 4096, "pipeline %s hist" % threshold)
    r = ampctl(farm.front, "fill", "--type", "int32", "--count", "3", "--start", "5", "--step",
               "2", "--format", "text")
    expect(r.returncode == 0 and r.stdout.split() == [b"5", b"7", b"9"], "fill: %r" % r.stdout)


def test_every_kind_from_grpcio(farm):
    with grpc.insecure_channel(farm.front) as ch:
        call = lambda m, req: ch.unary_unary(m)(req, timeout=CALL_TIMEOUT_S)  # noqa: E731
        data = b"stressed" * 1000
        got = pb_decode(call("/amp.v1.Amp/Reverse", pb_bytes(1, data)))[1][0]
        expect(got == data[::-1], "grpcio reverse")
        got = pb_decode(call("/amp.v1.Amp/Transform",
                             pb_bytes(1, data) + pb_bytes(2, pb_uint(1, 1) + pb_uint(2, 1))))
        expect(got[1][0] == bytes((b + 1) & 255 for b in data), "grpcio transform")
        got = pb_decode(call("/amp.v1.Amp/Histogram", pb_bytes(1, data) + pb_bytes(2, b"")))
        expect(1 in got, "grpcio histogram: %r" % got)
        got = pb_decode(call("/amp.v1.Amp/Fill", pb_bytes(1, pb_uint(1, 3) + pb_uint(2, 4))))
        expect(len(got[1][0]) == 16, "grpcio fill")
        got = pb_decode(call("/amp.v1.Amp/Pipeline", pb_bytes(1, data)
                             + pb_bytes(2, pb_bytes(1, b"")) + pb_bytes(2, pb_bytes(3, b""))))
        expect(len(got[1]) == 2, "grpcio pipeline: %r" % got.keys())
        big = bytes(i & 255 for i in range(3 << 20))
        replies = stream_add(ch, big, 5)
        out = b"".join(pb_decode(r).get(1, [b""])[0] for r in replies)
        expect(out == bytes((b + 5) & 255 for b in big), "grpcio stream")
        health = pb_decode(call("/grpc.health.v1.Health/Check", b""))
        expect(health[1][0] == 1, "health through the balancer: %r" % health)


def test_calls_spread_over_all(farm):
    before = [jobs_completed(d) for d in farm.daemons]
    with grpc.insecure_channel(farm.front) as ch:
        fn = ch.unary_unary("/amp.v1.Amp/Reverse")
        for _ in range(60):
            fn(pb_bytes(1, b"x" * LOAD_CALL_BYTES), timeout=CALL_TIMEOUT_S)
    after = [jobs_completed(d) for d in farm.daemons]
    served = [a - b for a, b in zip(after, before)]
    expect(sum(served) == 60 and all(served), "jobs per instance %r" % served)


def test_regions_refused(farm):
    path = os.path.join(farm.dir, "in.bin")
    with open(path, "wb") as f:
        f.write(b"abc" * 1000)
    r = ampctl(farm.front, "--transport", "shm", "reverse", "-i", path)
    expect(r.returncode != 0 and b"Unix socket" in r.stderr,
           "shm through the balancer: rc %d, %r" % (r.returncode, r.stderr))


class Load:
    """Unary Reverse calls from threads (grpcio) and streamed reverses from
    ampctl until stopped; every failure is kept with its code."""

    def __init__(self, front, threads=4):
        self.front = front
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()
        self.ok = 0
        self.failures = []
        # Daemon threads: a case that fails before finish() must not keep
        # the test running.
        self.threads = [threading.Thread(target=self.grpc_loop, daemon=True)
                        for _ in range(threads)]
        self.threads.append(threading.Thread(target=self.ampctl_loop, daemon=True))
        for t in self.threads:
            t.start()

    def note(self, what):
        with self.lock:
            if what is None:
                self.ok += 1
            else:
                self.failures.append(what)

    def grpc_loop(self):
        data = os.urandom(LOAD_CALL_BYTES)
        with grpc.insecure_channel(self.front) as ch:
            fn = ch.unary_unary("/amp.v1.Amp/Reverse")
            while not self.stop_flag.is_set():
                try:
                    got = pb_decode(fn(pb_bytes(1, data), timeout=CALL_TIMEOUT_S))[1][0]
                    self.note(None if got == data[::-1] else ("WRONG", "reply differs"))
                except grpc.RpcError as e:
                    self.note((e.code().name, e.details()))

    def ampctl_loop(self):
        data = os.urandom(3 << 20)
        while not self.stop_flag.is_set():
            try:
                r = ampctl(self.front, "--stream-threshold", "0", "reverse", data=data)
            except subprocess.TimeoutExpired:
                self.note(("HUNG", "ampctl stream"))
                continue
            err = r.stderr.decode(errors="replace")
            if r.returncode == 0 and r.stdout == data[::-1]:
                self.note(None)
            elif r.returncode == EXIT_REFUSED and any(w in err for w in REFUSED_WORDS):
                self.note(("UNAVAILABLE", err))
            else:
                self.note(("ampctl rc %d" % r.returncode, err))

    def finish(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join()
        return self.ok, self.failures


def served_while(farm, seconds):
    load = Load(farm.front)
    time.sleep(seconds)
    return load.finish()


def test_drain_under_load(farm):
    load = Load(farm.front)
    time.sleep(1)
    d = farm.daemons[0]
    d.proc.send_signal(signal.SIGTERM)
    # /ready turns 503 at once, and HAProxy marks the server DOWN while
    # ampd still listens (--drain-delay): the drain then meets no new call.
    farm.wait_states(["DOWN", "UP", "UP"])
    expect(d.proc.poll() is None, "ampd1 exited before HAProxy marked it DOWN")
    status = d.proc.wait(60)
    time.sleep(1)
    ok, failures = load.finish()
    expect(status == 0, "drained ampd exited with %d" % status)
    expect(ok > 0 and not failures, "%d ok; failed calls: %r" % (ok, failures[:5]))
    print("  drain: %d calls ok, none failed" % ok)
    ok, failures = served_while(farm, 1)
    expect(ok > 0 and not failures, "after the drain: %d ok, %r" % (ok, failures[:5]))


def test_kill_under_load(farm):
    # ampd1 is DOWN after the drain case, UP when this case runs alone.
    want = farm.server_states()
    want[1] = "DOWN"
    load = Load(farm.front)
    time.sleep(1)
    d = farm.daemons[1]
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()
    farm.wait_states(want)
    time.sleep(1)
    ok, failures = load.finish()
    hung = [f for f in failures if f[0] in ("DEADLINE_EXCEEDED", "HUNG")]
    expect(ok > 0 and not hung, "%d ok; hung calls: %r" % (ok, hung[:5]))
    print("  kill: %d calls ok, %d failed (%s)" % (ok, len(failures),
                                                   sorted(set(f[0] for f in failures))))
    ok, failures = served_while(farm, 1)
    expect(ok > 0 and not failures, "after the kill: %d ok, %r" % (ok, failures[:5]))


def main():
    tests = [test_every_kind_from_ampctl, test_every_kind_from_grpcio, test_calls_spread_over_all,
             test_regions_refused, test_drain_under_load, test_kill_under_load]
    farm = Farm()
    try:
        failed = run_cases(tests, farm)
    finally:
        statuses = farm.stop()
    # ampd1 drained (0 above), ampd2 was killed; ampd3 must stop cleanly.
    if statuses[2] != 0:
        failed += 1
        print("FAIL ampd3 exited with status %d" % statuses[2])
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
