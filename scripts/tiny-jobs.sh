#!/bin/bash
# SPDX-License-Identifier: MIT
# `ampctl bench` rows of tiny jobs for each daemon named, the daemons
# taking turns ROUNDS times (default 2), so that an A/B pair meets the
# same host:
#   scripts/tiny-jobs.sh AMPD...
# prints "BINARY SHAPE calls/s p50-us p99-us" per row. $SHAPES: the
# ampctl bench arguments of each row, ';' between rows (default 16-byte
# reverses: 1 connection x 1 call and 4 x 64 in flight, on the daemon's
# choice and on device gpu); $DURATION seconds each (default 3); $AMPCTL
# (default ampctl beside the first daemon, else build/ampctl); each
# daemon's log in $LOGS (default /tmp) as tiny-I.log.
set -u
[ $# -gt 0 ] || { echo "usage: $0 AMPD..." >&2; exit 2; }
ampctl=${AMPCTL:-$(dirname "$1")/ampctl}
[ -x "$ampctl" ] || ampctl=$(dirname "$0")/../build/ampctl
IFS=';' read -r -a shapes <<<"${SHAPES:--c 1;-c 4 -f 64;--device gpu -c 1;--device gpu -c 4 -f 64}"
rc=0
row() {   # BINARY-INDEX BINARY
  local d p shape
  d=$(mktemp -d)
  "$2" --listen "unix:$d/s" 2>"${LOGS:-/tmp}/tiny-$1.log" & p=$!
  for _ in $(seq 240); do "$ampctl" --address "unix:$d/s" health >/dev/null 2>&1 && break; sleep 0.5; done
  for shape in "${shapes[@]}"; do
    # shellcheck disable=SC2086 # a shape's arguments are words
    "$ampctl" --address "unix:$d/s" --json bench $shape -d "${DURATION:-3}" |
      python3 -c 'import json,sys; r=json.load(sys.stdin); print("%-10s %-44s %10.0f %9.1f %9.1f" % (sys.argv[1], sys.argv[2], r["calls_per_s"], r["latency_us"]["p50"], r["latency_us"]["p99"]))' "$(basename "$2")" "$shape" || rc=1
  done
  kill $p; wait $p || rc=1
  rm -rf "$d"
}
echo "binary     shape                                           calls/s    p50 us    p99 us"
for _ in $(seq "${ROUNDS:-2}"); do
  i=0
  for b in "$@"; do i=$((i + 1)); row $i "$b"; done
done
exit $rc
