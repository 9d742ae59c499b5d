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
mkdir -p "$OUT" || exit 2
scripts=$(cd "$(dirname "$0")" && pwd)
. "$scripts/device-common.sh"
device_setup "$dir" || exit 2
versions=$(device_show_versions "$dir")
cd "$dir/bin" || exit 2
for b in ampd ampd-old ampctl bench_data_path; do [ -x ./$b ] || { echo "no $dir/bin/$b" >&2; exit 2; }; done

{
  echo "$versions"
  LOGS=$OUT ROUNDS=$rounds "$scripts/tiny-jobs.sh" ./ampd-old ./ampd
  for r in $(seq "$rounds"); do
    for bin in ampd-old ampd; do
      echo "== bench_data_path, $bin, round $r"
      timeout 240 ./bench_data_path --sizes 64M,1G --reps 3 --only "${ONLY:-pinned,stream,unary,region,multi}" \
        --ampd ./$bin 2>&1 | grep -E '^(pinned|stream|unary|region|4 streams)'
    done
  done
} 2>&1 | tee "$OUT/regress.txt"
