#!/bin/bash
# SPDX-License-Identifier: MIT
# A/B regression check on the GPU machine (the device tool): the same
# client measures two ampd binaries in one run, alternating, so a change
# is judged beside the noise of that host. Rows: `ampctl bench` tiny
# jobs (16 B reverse, one blocking connection, and 4 connections x 64
# calls in flight, device left to the daemon and on the GPU) and
# bench_data_path's rows at 64M and 1G.
#
# Two steps:
#   1. here: scripts/build.sh build && scripts/device-tenants.sh prepare
#      && scripts/device-tenants.sh baseline REV (REV: the commit to
#      compare with, built as $DIR/bin/ampd-old);
#   2. on the device machine, carrying $DIR: scripts/device-regress.sh
#      [ROUNDS] (default 2). Writes $OUT/regress.txt. $ONLY narrows
#      bench_data_path's groups (its --only; default all but raw and tls).
set -u
dir=${DIR:-build-dev}
rounds=${1:-2}
: "${OUT:?set OUT to the folder for the results}"
. "$(dirname "$0")/device-common.sh"
device_setup "$dir" || exit 2
versions=$(git log -1 --format='ampd: %h %cs %s' 2>/dev/null; device_show_baseline "$dir")
cd "$dir/bin" || exit 2
for b in ampd ampd-old ampctl bench_data_path; do [ -x ./$b ] || { echo "no $dir/bin/$b" >&2; exit 2; }; done

# One daemon's ampctl bench rows: "BINARY SHAPE calls/s p50 p99".
tiny() {
  local bin=$1 d
  d=$(mktemp -d)
  ./$bin --listen "unix:$d/s" 2>"$OUT/$bin.log" & local p=$!
  for _ in $(seq 240); do ./ampctl --address "unix:$d/s" health >/dev/null 2>&1 && break; sleep 0.5; done
  for shape in "-c 1" "-c 4 -f 64" "--device gpu -c 1" "--device gpu -c 4 -f 64"; do
    # shellcheck disable=SC2086
    ./ampctl --address "unix:$d/s" --json bench $shape -d 3 |
      python3 -c 'import json,sys; r=json.load(sys.stdin); print("%-8s %-24s %10.0f %9.1f %9.1f" % (sys.argv[1], sys.argv[2], r["calls_per_s"], r["latency_us"]["p50"], r["latency_us"]["p99"]))' "$bin" "$shape"
  done
  kill $p; wait $p
  rm -rf "$d"
}

{
  echo "$versions"
  echo "binary   shape                       calls/s   p50 us    p99 us"
  for r in $(seq "$rounds"); do tiny ampd-old; tiny ampd; done
  for r in $(seq "$rounds"); do
    for bin in ampd-old ampd; do
      echo "== bench_data_path, $bin, round $r"
      timeout 240 ./bench_data_path --sizes 64M,1G --reps 3 --only "${ONLY:-pinned,stream,unary,region,multi}" \
        --ampd ./$bin 2>&1 | grep -E '^(pinned|stream|unary|region|4 streams)'
    done
  done
} 2>&1 | tee "$OUT/regress.txt"
