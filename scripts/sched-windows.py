#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""sched-windows.py: a bench_tenants run's scheduler trace, window by window.

Reads `perf sched timehist` output (stdin or a file) of a run recorded by
`TRACE=1 scripts/tenants-local.sh` and prints, per window (--window seconds,
default 0.5): how long A's ampd's I/O loops (its main thread and
ampd-io*) waited runnable for a CPU per wake-up (perf's "sch delay"),
their wake-ups and CPU time; the same wait for A's thread (the bench's
main thread); and the CPU time of A's ampd's other threads and of the
second ampd, which tell the run's phases apart (B's load on A's ampd, on
the second one - the floor - or none). A's ampd is the first ampd
started (the lower pid with ampd-io threads), A's thread the lowest pid
named bench_tenants.
"""
import argparse
import collections
import re
import sys

LINE = re.compile(r"^\s*([\d.]+)\s+\[\d+\]\s+(.+?)\[(\d+)(?:/(\d+))?\]\s+"
                  r"([\d.]+)\s+([\d.]+)\s+([\d.]+)")


def parse(f):
    """(time s, name, tid, pid, sch delay ms, run ms) per switch-out."""
    for line in f:
        m = LINE.match(line)
        if m:
            tid = int(m.group(3))
            yield (float(m.group(1)), m.group(2), tid, int(m.group(4) or tid),
                   float(m.group(6)), float(m.group(7)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("timehist", nargs="?", default="-")
    ap.add_argument("--window", type=float, default=0.5)
    o = ap.parse_args()
    f = sys.stdin if o.timehist == "-" else open(o.timehist, encoding="utf-8", errors="replace")
    rows = list(parse(f))
    ampds = sorted({pid for _, name, _, pid, _, _ in rows if name.startswith("ampd-io")})
    benches = sorted({pid for _, name, tid, pid, _, _ in rows
                      if name.startswith("bench_tenants") and tid == pid})
    if not ampds or not benches:
        sys.exit("sched-windows.py: no ampd-io or bench_tenants thread in the trace")
    a_ampd, floor = ampds[0], (ampds[1] if len(ampds) > 1 else None)
    a_thread = benches[0]
    w = collections.defaultdict(collections.Counter)
    t0 = rows[0][0]
    for t, name, tid, pid, delay, run in rows:
        c = w[int((t - t0) / o.window)]
        if pid == a_ampd and (tid == pid or name.startswith("ampd-io")):
            c["loop_delay"] += delay
            c["loop_n"] += 1
            c["loop_run"] += run
        elif pid == a_ampd:
            c["other_run"] += run
        elif pid == floor:
            c["floor_run"] += run
        if tid == a_thread:
            c["a_delay"] += delay
            c["a_n"] += 1
    print("A's ampd %d, the second %s, A's thread %d; per %.2f s window" %
          (a_ampd, floor, a_thread, o.window))
    print("| from s | A's ampd's loops: wait for a CPU per wake-up, us | wake-ups "
          "| CPU ms | A's thread: wait per wake-up, us | wake-ups "
          "| A's ampd's other threads, CPU ms | second ampd, CPU ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in sorted(w):
        c = w[k]
        print("| %.1f | %.0f | %d | %.1f | %.0f | %d | %.1f | %.1f |" % (
            k * o.window, 1000 * c["loop_delay"] / max(c["loop_n"], 1), c["loop_n"],
            c["loop_run"], 1000 * c["a_delay"] / max(c["a_n"], 1), c["a_n"],
            c["other_run"], c["floor_run"]))


if __name__ == "__main__":
    main()
