#!/bin/bash
# SPDX-License-Identifier: MIT
# Kernel tuning on the GPU machine (the device tool; issue 36): two starts
# of ampd on a fresh --cache-dir, each timed to SERVING (the first builds
# every variant, times them and keeps the choice; the second takes it and
# the programs from the cache), the devices as ampctl lists them, the
# tuner's log lines, then bench_kernels at 1 GiB (the daemon's kernels
# beside each variant it did not choose), then bench_kernels on the
# kernels named by $RUN_ONLY (default hist) at $RUN_SIZE (default 1G) once
# for each set of knobs in $RUNS, separated by ';', e.g.
#   RUNS="--hist-groups 3;--build-options -DHIST_UNROLL=8;--bins 256 --hist-copies 32"
# The program cache (PTX on NVIDIA) comes back as cache.tgz. FULL=0: only
# the $RUNS.
#   1. here: scripts/build.sh build && scripts/device-tune.sh prepare
#   2. there, carrying $DIR (default build-dev): scripts/device-tune.sh
# Writes $OUT/start1.log, start2.log, kernels.txt, run-N.txt.
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
[ "${FULL:-1}" = 1 ] && for i in 1 2; do
  t0=$(date +%s.%N)
  ./ampd --listen "unix:$c/s" --cache-dir "$c/cache" 2>"$OUT/start$i.log" & p=$!
  until ./ampctl -a "unix:$c/s" health 2>/dev/null | grep -qx SERVING; do sleep 0.02; done
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v i="$i" 'BEGIN { printf "start %d: %.2f s to SERVING\n", i, b - a }'
  ./ampctl -a "unix:$c/s" devices
  kill "$p"; wait "$p"
done
if [ "${FULL:-1}" = 1 ]; then
  grep -h "tuning\|kernels\|cache" "$OUT"/start*.log
  tar -czf "$OUT/cache.tgz" -C "$c" cache
  timeout 300 ./bench_kernels --min-size 1G --max-size 1G >"$OUT/kernels.txt" 2>"$OUT/kernels.err"
  cat "$OUT/kernels.txt"
fi
n=0
IFS=';' read -r -a runs <<<"${RUNS:-}"
for r in "${runs[@]}"; do
  n=$((n + 1))
  echo "# bench_kernels $r" | tee "$OUT/run-$n.txt"
  eval "timeout 200 ./bench_kernels --min-size ${RUN_SIZE:-1G} --max-size ${RUN_SIZE:-1G} \
    --only \"\${RUN_ONLY:-hist}\" $r" >>"$OUT/run-$n.txt" 2>&1
  grep -v "^#\|^20" "$OUT/run-$n.txt"
done
