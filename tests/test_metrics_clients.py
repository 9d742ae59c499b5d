# SPDX-License-Identifier: MIT
"""test_metrics_clients.py: queue and device time by client and priority.

A real ampd with --metrics-listen and a --token-file runs jobs of two
clients (tokens alice and bob: unary calls over gRPC, and one of bob's
streamed through ampctl); the scrape must carry
ampd_client_queue_seconds and ampd_client_device_seconds histograms with
exactly those clients' labels and job counts, and Status (`ampctl status`,
`--json` and the aligned table) the same figures, and `ampctl top` each
frame's totals. Past the daemon's cap
on clients with series of their own, the next clients count together as
client="other": with more clients than the cap, the named series are the
first clients to run a job, and "other" holds the rest.
Each priority a call asks for (amp-priority; high granted by the token
line's max-priority=) has series of its own.
Prints one line per check (support/cases.py).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from test_metrics import Metrics, pb_bytes, scrape  # noqa: E402

AMPCTL = os.environ.get("AMPCTL_BIN", "ampctl")
CALL_TIMEOUT_S = 120
IDLE_POLL_S = 0.01
REVERSE = "/amp.v1.Amp/Reverse"
QUEUE = "ampd_client_queue_seconds"
DEVICE = "ampd_client_device_seconds"
# More clients than the daemon gives series of their own (tenant_stats.h).
MANY_CLIENTS = 40


def token(name):
    return "%s-token-0123456789" % name


def write_tokens(path, names, fields=None):
    """fields: {name: the token line's options after the token}."""
    with open(path, "w", encoding="utf-8") as f:
        for n in names:
            f.write("%s %s %s\n" % (n, token(n), (fields or {}).get(n, "")))
    os.chmod(path, 0o600)


def reverse_as(m, name, data=b"0123456789abcdef", priority=None):
    md = (("authorization", "Bearer " + token(name)),)
    if priority:
        md += (("amp-priority", priority),)
    m.channel.unary_unary(REVERSE)(pb_bytes(1, data), timeout=CALL_TIMEOUT_S, metadata=md)


def ampctl(m, token_file, *args, stdin=None):
    p = subprocess.run([AMPCTL, "--address", m.daemon.address, "--token-file", token_file,
                        *args], input=stdin, capture_output=True, timeout=CALL_TIMEOUT_S)
    expect(p.returncode == 0, "ampctl %s: exit %d %r" % (" ".join(args), p.returncode,
                                                       p.stderr))
    return p.stdout.decode()


def scrape_idle(m):
    """A scrape once no job is in flight: a stream is counted when the
    daemon frees it, which may come just after its client has every byte."""
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while True:
        samples, families = scrape(m)
        if samples.get(("ampd_jobs_in_flight", ())) == 0:
            return samples, families
        expect(time.monotonic() < deadline, "jobs still in flight after %d s" % CALL_TIMEOUT_S)
        time.sleep(IDLE_POLL_S)


def client_counts(samples, family):
    """{(client, priority): count} of one histogram family."""
    return {(dict(k[1])["client"], dict(k[1])["priority"]): v for k, v in samples.items()
            if k[0] == family + "_count"}


def check_histograms(samples):
    """Every series' buckets are cumulative and end in +Inf at its count."""
    series = {}
    for (name, labels), v in samples.items():
        if name in (QUEUE + "_bucket", DEVICE + "_bucket"):
            d = dict(labels)
            key = (name, d["client"], d["priority"])
            series.setdefault(key, []).append((float(d["le"]), v))
    expect(series, "no client histogram buckets")
    for (name, client, prio), buckets in series.items():
        buckets.sort()
        expect(all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])),
               "%s %s %s: buckets not cumulative" % (name, client, prio))
        count = samples[(name[:-len("_bucket")] + "_count",
                         tuple(sorted({"client": client, "priority": prio}.items())))]
        expect(buckets[-1][0] == float("inf") and buckets[-1][1] == count,
               "%s %s %s: +Inf %r != count %s" % (name, client, prio, buckets[-1], count))


def test_two_clients():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tokens")
        write_tokens(path, ("alice", "bob"))
        bob_file = os.path.join(d, "bob")
        with open(bob_file, "w", encoding="utf-8") as f:
            f.write(token("bob") + "\n")
        with Metrics(("--token-file", path)) as m:
            samples, families = scrape(m)
            expect(client_counts(samples, QUEUE) == {}, "series before any job")
            for _ in range(3):
                reverse_as(m, "alice")
            for _ in range(2):
                reverse_as(m, "bob")
            out = ampctl(m, bob_file, "--stream-threshold", "0", "transform", "--op", "add",
                         "--value", "1", "-o", "-", stdin=b"\x00" * 4096)
            expect(out == "\x01" * 4096, "streamed transform's output")
            samples, families = scrape_idle(m)
            want = {("token alice", "normal"): 3, ("token bob", "normal"): 3}
            for fam in (QUEUE, DEVICE):
                expect(families[fam].type == "histogram", "%s is a %s" % (fam, families[fam].type))
                got = client_counts(samples, fam)
                expect(got == want, "%s counts %r, want %r" % (fam, got, want))
            check_histograms(samples)
            bob_device = samples[(DEVICE + "_sum", (("client", "token bob"),
                                                    ("priority", "normal")))]
            expect(bob_device > 0, "bob's device time %r" % bob_device)

            st = json.loads(ampctl(m, bob_file, "--json", "status"))
            got = {(c["client"], c["priority"]): c["jobs"] for c in st["clients"]}
            expect(got == want, "status --json clients %r, want %r" % (got, want))
            for c in st["clients"]:
                expect(c["queue_p50_us"] <= c["queue_p99_us"], "queue p50 > p99: %r" % c)
                expect(c["device_sum_us"] > 0 or c["client"] != "token bob",
                       "bob's device time in status: %r" % c)
            text = ampctl(m, bob_file, "status")
            head = re.search(r"^client( +)priority +jobs +queue p50 <us +queue p99 <us +"
                             r"device ms$", text, re.M)
            expect(head, "no client table header in:\n" + text)
            width = len("client") + len(head.group(1)) - 1   # the client column
            expect(width == len("token alice"), "client column %d wide:\n%s" % (width, text))
            for client, jobs in (("token alice", 3), ("token bob", 3)):
                row = re.search(r"^%s +normal +%d +\d+ +\d+ +\d+\.\d{3}$" % (client, jobs),
                                text, re.M)
                expect(row and row.start(0) - text.rfind("\n", 0, row.start(0)) == 1,
                       "no row for %s in:\n%s" % (client, text))

            # ampctl top: two frames, the second after alice's two more jobs.
            top = subprocess.Popen([AMPCTL, "--address", m.daemon.address, "--token-file",
                                    bob_file, "top", "--count", "2", "--interval", "1s"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            reverse_as(m, "alice")
            reverse_as(m, "alice")
            out, err = top.communicate(timeout=CALL_TIMEOUT_S)
            expect(top.returncode == 0, "ampctl top: exit %d %r" % (top.returncode, err))
            frames = out.decode().split("\n\n")
            expect(len(frames) == 2, "ampctl top: %d frames:\n%s" % (len(frames), out.decode()))
            last = frames[1]
            for client, jobs in (("token alice", 5), ("token bob", 3)):
                expect(re.search(r"^%s +normal +%d +\d" % (client, jobs), last, re.M),
                       "ampctl top: no %s row with %d jobs in:\n%s" % (client, jobs, last))


def test_priorities():
    """Each priority a client's calls ask for (amp-priority) is a series of
    its own; high needs the token's grant."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tokens")
        write_tokens(path, ("alice", "bob"), {"bob": "max-priority=high"})
        with Metrics(("--token-file", path)) as m:
            for _ in range(2):
                reverse_as(m, "alice", priority="low")
            reverse_as(m, "alice")
            reverse_as(m, "bob", priority="high")
            samples, _ = scrape(m)
            want = {("token alice", "low"): 2, ("token alice", "normal"): 1,
                    ("token bob", "high"): 1}
            for fam in (QUEUE, DEVICE):
                got = client_counts(samples, fam)
                expect(got == want, "%s counts %r, want %r" % (fam, got, want))


def test_client_cap():
    names = ["c%02d" % i for i in range(MANY_CLIENTS)]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tokens")
        write_tokens(path, names)
        with Metrics(("--token-file", path)) as m:
            for n in names:   # one after another: first come is this order
                reverse_as(m, n)
            reverse_as(m, names[0])   # an early client keeps its own series
            samples, _ = scrape(m)
            for fam in (QUEUE, DEVICE):
                got = client_counts(samples, fam)
                named = sorted(c for c, _ in got if c != "other")
                cap = len(named)
                expect(0 < cap < MANY_CLIENTS, "%s: %d named clients of %d" %
                       (fam, cap, MANY_CLIENTS))
                expect(named == ["token " + n for n in names[:cap]],
                       "%s: named clients are not the first %d: %r" % (fam, cap, named))
                expect(got[("token c00", "normal")] == 2, "%s: c00's count %r" % (fam, got))
                expect(got.get(("other", "normal")) == MANY_CLIENTS - cap,
                       "%s: other %r, want %d" % (fam, got.get(("other", "normal")),
                                                  MANY_CLIENTS - cap))
            check_histograms(samples)
            tok = os.path.join(d, "one")
            with open(tok, "w", encoding="utf-8") as f:
                f.write(token(names[0]) + "\n")
            st = json.loads(ampctl(m, tok, "--json", "status"))
            got = {c["client"]: c["jobs"] for c in st["clients"]}
            expect(got.get("other") == MANY_CLIENTS - cap and len(got) == cap + 1,
                   "status clients %r" % got)


def main():
    return 0 if run_cases(module_cases(globals())) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
