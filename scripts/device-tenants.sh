#!/bin/bash
# SPDX-License-Identifier: MIT
# bench_tenants on the GPU machine (the device tool) with issue 34's sizes:
# client A's 16 B GPU Reverse, 64 KiB GPU Transform and 16 B host-path
# Reverse on a paced schedule, beside client B's four 1 GiB Stream
# transforms and sixteen concurrent 32 MiB unary transforms, on the same
# ampd and on a second one (the floor); two bulk clients of weights 3:1;
# A's 16 B Reverse at priority high beside its own unary load at low; and
# issue 34's targets, each met or not. The tables go to $OUT.
#
# Two steps:
#   1. here (the build machine), from the repo root:
#        scripts/build.sh build && scripts/device-tenants.sh prepare
#      puts ampd, ampctl, bench_tenants, bench_data_path, libampclient.so.0.1
#      and the .debs of every library they load (found with ldd and dpkg -S,
#      libc6 left out) under $DIR (default build-dev, git-ignored); then,
#      for an A/B run (RUNS=";--ampd ./ampd-old", device-regress.sh),
#        scripts/device-tenants.sh baseline REV
#      builds REV's ampd as $DIR/bin/ampd-old, named in env.txt;
#   2. on the device machine, carrying $DIR:
#        scripts/device-tenants.sh [BENCH_TENANTS-OPTIONS]
#      e.g. --seconds 5; the options are added after the issue's sizes, so
#      they override them. About 3 minutes (bench_tenants about 2: A's
#      three measures of --seconds alone, beside each shape on each ampd,
#      and 3 --seconds each for B alone and the weights, with --warmup
#      before each load); each step has a timeout, at most 7.7 minutes
#      together (nvidia-smi 30 s, ampd's start 100 s, devices 30 s,
#      bench_tenants 300 s), within the device tool's 8.
# Writes $OUT/bench_tenants-1-1.txt (the table), its .err and $OUT/env.txt
# (GPU, driver, devices ampd sees); with REPEAT=N, N runs of each set of
# $RUNS (bench_tenants-J-K.txt) and each target's min / median / max over
# a set's runs (with --seconds 2 about 70 s a run on the H200 at 294392b,
# REPEAT=3 200 s in one device call; more where measures are taken again
# for the hypervisor's steal), e.g.
#   REPEAT=2 RUNS=";--a-busy-poll-us -1 -- --busy-poll 0" \
#     scripts/device-tenants.sh --shapes unary --no-floor --sched-stats
set -u
dir=${DIR:-build-dev}
scripts=$(cd "$(dirname "$0")" && pwd)
. "$scripts/device-common.sh"
step() { device_step "$@"; }

if [ "${1:-}" = prepare ]; then
  device_prepare "$dir" build/ampd build/ampctl build/bench/bench_tenants build/bench/bench_data_path
  exit
elif [ "${1:-}" = baseline ]; then
  device_baseline "$dir" "${2:-}"
  exit
fi

: "${OUT:?set OUT to the folder for the results}"
mkdir -p "$OUT" || exit 2
[ -x "$dir/bin/bench_tenants" ] || { echo "no $dir/bin/bench_tenants: run '$0 prepare' first" >&2; exit 2; }
step "unpacking the libraries, registering the NVIDIA OpenCL ICD"
device_setup "$dir" || exit 2
{ timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  nproc; free -g | head -2; device_show_versions "$dir"; } | tee "$OUT/env.txt"

cd "$dir/bin"
step "ampd's devices"
d=$(mktemp -d)
./ampd --listen "unix:$d/s" 2>"$OUT/ampd-devices.log" & p=$!
for _ in $(seq 40); do timeout 2 ./ampctl --address "unix:$d/s" health >/dev/null 2>&1 && break; sleep 0.5; done
timeout 30 ./ampctl --address "unix:$d/s" devices | tee -a "$OUT/env.txt"
kill $p; wait $p; echo "ampd exit $?"; rm -rf "$d"

# The issue's shapes; the GPU is device "gpu" for A's device measures and
# B's load; the floor's second ampd shares the host and the GPU with A's.
# Each set of $RUNS (';' between sets, default one empty set) adds its
# arguments after the command line's (an ampd option goes after "--" in
# its set), and runs REPEAT times, the sets taking turns (so that an A/B
# pair meets the same host): bench_tenants-J-K.txt is set J's run K.
# With more than one run, each set ends with each target's spread over
# its runs: a tail measured over a few seconds moves by several times
# between runs minutes apart.
rc=0
IFS=';' read -r -a runs <<<"${RUNS:-}"
[ ${#runs[@]} -gt 0 ] || runs=("")
for k in $(seq "${REPEAT:-1}"); do
  for j in "${!runs[@]}"; do
    set_args=${runs[$j]}
    f=bench_tenants-$((j + 1))-$k
    step "bench_tenants, set $((j + 1)) of ${#runs[@]} (${set_args:-no arguments}), run $k of ${REPEAT:-1}"
    # shellcheck disable=SC2086 # a set's arguments are words
    timeout 300 ./bench_tenants --ampd ./ampd --device gpu --bulk-bytes 1G --streams 4 \
        --unary-bytes 32M --unary-calls 16 --seconds 3 --warmup 2 "$@" $set_args \
        >"$OUT/$f.txt" 2>"$OUT/$f.err"
    r=$?
    [ $rc = 0 ] && rc=$r
    cat "$OUT/$f.txt"; tail -20 "$OUT/$f.err"
    step "bench_tenants exit $r (0 ok, 1 a wrong result, 2 could not run, 124 timed out)"
  done
done
[ "${REPEAT:-1}" -gt 1 ] && for j in "${!runs[@]}"; do
  echo "# issue 34's targets over ${REPEAT} runs of set $((j + 1)) (${runs[$j]:-no arguments}): the measured value's min / median / max"
  "$scripts/tenants-summary.sh" "$OUT"/bench_tenants-$((j + 1))-*.txt
done
exit $rc
