#!/bin/bash
# SPDX-License-Identifier: MIT
# bench_tenants with issue 34's sizes for a machine without a GPU (PoCL
# on the same CPUs as the clients): client A's paced calls beside client
# B's four 256 MiB Stream transforms and eight 32 MiB unary calls, with
# --sched-stats. Each daemon named runs REPEAT times (default 3), the
# daemons taking turns so that an A/B pair meets the same host, then each
# issue 34 target's spread per daemon (tenants-summary.sh):
#   scripts/tenants-local.sh OUT AMPD... [-- BENCH_TENANTS-OPTIONS]
# e.g. scripts/tenants-local.sh /tmp/ab build/ampd /tmp/ampd-base
# writes OUT/tenants-I-K.txt (daemon I's run K) and its .err. About
# 2-4 minutes a run on 2 cores. With TRACE=1 each run is recorded with
# `perf sched record -a`: OUT/tenants-I-K.timehist.gz keeps every
# switch (`perf sched timehist`), and OUT/tenants-I-K.sched.md the trace
# window by window (scripts/sched-windows.py: how long A's ampd's loops
# and A's thread waited for a CPU per wake-up, in each phase of the run).
# SCHED_STATS=0 leaves out --sched-stats, whose sampler reads A's ampd's
# loops' /proc files every millisecond on a CPU that A's thread needs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: $0 OUT AMPD... [-- BENCH_TENANTS-OPTIONS]}
shift
bins=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do bins+=("$1"); shift; done
[ $# -gt 0 ] && shift
[ ${#bins[@]} -gt 0 ] || { echo "name at least one ampd" >&2; exit 2; }
bench=${BENCH_TENANTS:-$here/../build/bench/bench_tenants}
stats=(--sched-stats)
[ "${SCHED_STATS:-1}" = 0 ] && stats=()
mkdir -p "$out" || exit 2
rc=0
for k in $(seq "${REPEAT:-3}"); do
  for i in "${!bins[@]}"; do
    f=$out/tenants-$((i + 1))-$k
    echo "== $(date -u +%H:%M:%S) ${bins[$i]}, run $k of ${REPEAT:-3}"
    trace=()
    [ -n "${TRACE:-}" ] && trace=(perf sched record -a -q -o "$f.perf" --)
    timeout 900 "${trace[@]}" "$bench" --ampd "${bins[$i]}" --device 0 --bulk-bytes 256M --streams 4 \
      --unary-bytes 32M --unary-calls 8 --seconds 3 --warmup 1 "${stats[@]}" "$@" >"$f.txt" 2>"$f.err"
    r=$?
    if [ -n "${TRACE:-}" ]; then
      perf sched timehist -i "$f.perf" 2>/dev/null | gzip >"$f.timehist.gz"
      zcat "$f.timehist.gz" | /usr/bin/python3 "$here/sched-windows.py" >"$f.sched.md"
      rm -f "$f.perf"
    fi
    [ $rc = 0 ] && rc=$r
    grep '^# targets' "$f.txt" || tail -3 "$f.err"
  done
done
for i in "${!bins[@]}"; do
  echo "# ${bins[$i]}: issue 34's targets over ${REPEAT:-3} runs, the measured value's min / median / max"
  "$here/tenants-summary.sh" "$out"/tenants-$((i + 1))-*.txt
done
exit $rc
