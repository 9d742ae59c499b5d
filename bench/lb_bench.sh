#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/lb_bench.sh: calls/s through HAProxy with the repository's recipe
# (deploy/haproxy/haproxy.cfg), three ampd instances against one, and one
# without the balancer, each measured with `ampctl bench`:
#   bench/lb_bench.sh [ampctl bench args...]     (default: -s 16 -c 4 -f 16 -d 5)
# AMPD, AMPCTL and HAPROXY name the programs (default build/ampd,
# build/ampctl, haproxy). "One instance" is the same configuration with all
# three server lines pointing at the first ampd. Prints one JSON line per run.
set -euo pipefail
cd "$(dirname "$0")/.."
ampd=${AMPD:-build/ampd}
ampctl=${AMPCTL:-build/ampctl}
haproxy=${HAPROXY:-haproxy}
[ $# -eq 0 ] && set -- -s 16 -c 4 -f 16 -d 5
base=${LB_BENCH_PORT:-47100}
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

for i in 1 2 3; do
  "$ampd" --listen "127.0.0.1:$((base + i))" --tcp-require-token off 2>"$dir/ampd$i.log" &
  pids+=($!)
done
for i in 1 2 3; do
  for _ in $(seq 240); do
    "$ampctl" -a "127.0.0.1:$((base + i))" health >/dev/null 2>&1 && break
    sleep 0.5
  done
done

# run LABEL AMPD1 AMPD2 AMPD3: HAProxy in front of those, one bench through it.
run() {
  AMP_LB_BIND="127.0.0.1:$base" AMP_LB_STATS="$dir/stats.sock" AMP_LB_AMPD1="$2" \
    AMP_LB_AMPD2="$3" AMP_LB_AMPD3="$4" "$haproxy" -db -f deploy/haproxy/haproxy.cfg \
    2>"$dir/haproxy-$1.log" &
  local hp=$!
  sleep 2   # checks: rise 2, inter 500ms
  echo "{\"run\":\"$1\",\"bench\":$("$ampctl" -a "127.0.0.1:$base" --json bench "${@:5}")}"
  kill "$hp"
  wait "$hp" 2>/dev/null || true
}
a1="127.0.0.1:$((base + 1))" a2="127.0.0.1:$((base + 2))" a3="127.0.0.1:$((base + 3))"
run "3 instances via haproxy" "$a1" "$a2" "$a3" "$@"
run "1 instance via haproxy" "$a1" "$a1" "$a1" "$@"
echo "{\"run\":\"1 instance direct\",\"bench\":$("$ampctl" -a "$a1" --json bench "$@")}"
