#!/bin/bash
# SPDX-License-Identifier: MIT
# A tuning step on the GPU machine (the device tool): ampd variants built
# from one tree with one constant changed, each measured by bench_split
# (one job on one GPU and over all, regions) and bench_tenants (client A's
# small calls beside client B's bulk load), in one run.
#   1. here: scripts/build.sh build && scripts/device-tenants.sh prepare,
#      cp build/bench/bench_split $DIR/bin, and each variant's ampd to
#      $DIR/bin/ampd-NAME (the baseline is $DIR/bin/ampd);
#   2. there, carrying $DIR: VARIANTS="ampd ampd-NAME ..." \
#      scripts/device-variants.sh. SIZES (default 1G) for bench_split;
#      TENANTS="ampd ..." the variants bench_tenants measures (default
#      none), with --seconds $SECONDS_A (default 1).
# Writes $OUT/split-VARIANT.txt and $OUT/tenants-VARIANT.txt.
set -u
dir=${DIR:-build-dev}
: "${OUT:?set OUT to the folder for the results}"
. "$(dirname "$0")/device-common.sh"
device_setup "$dir" || exit 2
cd "$dir/bin" || exit 2
for v in ${VARIANTS:-ampd}; do
  echo "== $(date +%T) $v: bench_split"
  timeout 200 ./bench_split --ampd "./$v" --sizes "${SIZES:-1G}" --reps 3 | tee "$OUT/split-$v.txt"
done
for v in ${TENANTS:-}; do
  echo "== $(date +%T) $v: bench_tenants"
  timeout 200 ./bench_tenants --ampd "./$v" --device 0 --bulk-bytes 1G --streams 4 \
      --unary-bytes 32M --unary-calls 16 --seconds "${SECONDS_A:-1}" --warmup 1 --no-floor \
      >"$OUT/tenants-$v.txt" 2>"$OUT/tenants-$v.err"
  cat "$OUT/tenants-$v.txt"
done
