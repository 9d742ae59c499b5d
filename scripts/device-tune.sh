#!/bin/bash
# SPDX-License-Identifier: MIT
# Kernel tuning on the GPU machine (the device tool; issue 36): two starts
# of ampd on a fresh --cache-dir, each timed to SERVING (the first builds
# every variant, times them and keeps the choice; the second takes it and
# the programs from the cache), the devices as ampctl lists them, the
# tuner's log lines, then bench_kernels at 1 GiB (the daemon's kernels
# beside each variant it did not choose).
#   1. here: scripts/build.sh build && scripts/device-tune.sh prepare
#   2. there, carrying $DIR (default build-dev): scripts/device-tune.sh
# Writes $OUT/start1.log, start2.log, kernels.txt.
set -u
dir=${DIR:-build-dev}
. "$(dirname "$0")/device-common.sh"
if [ "${1:-}" = prepare ]; then
  device_prepare "$dir" build/ampd build/ampctl build/bench/bench_kernels
  exit
fi
: "${OUT:?set OUT to the folder for the results}"
device_setup "$dir" >/dev/null 2>&1 || exit 2
cd "$dir/bin" || exit 2
c=$(mktemp -d)
for i in 1 2; do
  t0=$(date +%s.%N)
  ./ampd --listen "unix:$c/s" --cache-dir "$c/cache" 2>"$OUT/start$i.log" & p=$!
  until ./ampctl -a "unix:$c/s" health 2>/dev/null | grep -qx SERVING; do sleep 0.02; done
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v i="$i" 'BEGIN { printf "start %d: %.2f s to SERVING\n", i, b - a }'
  ./ampctl -a "unix:$c/s" devices
  kill "$p"; wait "$p"
done
grep -h "tuning\|kernels\|cache" "$OUT"/start*.log
timeout 300 ./bench_kernels --min-size 1G --max-size 1G >"$OUT/kernels.txt" 2>"$OUT/kernels.err"
cat "$OUT/kernels.txt"
