#!/bin/bash
# SPDX-License-Identifier: MIT
# ampd on every GPU of a host (issue 40: four GPUs; any number works), on
# the device tool's machine. Parts, in this order (PARTS narrows them):
#   load    `ampctl devices`, then 4 and 8 concurrent 1 GiB Stream
#           transforms naming no device, with each device's load sampled
#           (`ampctl --json devices` every 0.1 s) while they run;
#   tests   the GPU tests, each binary run directly, with
#           AMP_TEST_MIN_DEVICES set to the GPU count;
#   regions bench_data_path's pinned and region rows at 1G on each GPU;
#   split   bench_split --sizes 1G,8G: one job over every GPU through
#           regions, beside the host's pinned-copy limit, one GPU and all
#           ($SPLIT_AMPD_ARGS: options for its ampd, e.g. --log-level debug);
#   streams bench_data_path's raw and multi rows at 1G, --spread, with 4
#           and with 2 x the GPU count streams (and raw copies) at once;
#   tenants bench_tenants with both tenants on GPU 0, then A on GPU 0 and
#           B's bulk load on GPU 1 (no floor, --seconds 2).
# Two steps:
#   1. here: scripts/build.sh build && scripts/device-gpus.sh prepare
#   2. there, carrying $DIR (default build-dev): scripts/device-gpus.sh
#      (PARTS="split streams" scripts/device-gpus.sh for some; TESTS
#      narrows the tests part). About 8 minutes for all; each part has a
#      timeout.
# Writes to $OUT: env.txt, ampd.log and PART.txt for each part.
set -u
dir=${DIR:-build-dev}
. "$(dirname "$0")/device-common.sh"
tests=(test_dev_discover test_multi_device test_split test_sched_split test_kernel_reverse
       test_kernel_transform test_kernel_hist test_kernel_fill test_kernel_pipeline
       test_kernel_batch test_kernel_pieces test_pieces_interleave test_dev_exec test_runner
       test_daemon_jobs test_client_jobs test_client_region test_client_stream
       test_client_pipeline test_bulk_requests)

if [ "${1:-}" = prepare ]; then
  device_prepare "$dir" build/ampd build/ampctl build/bench/bench_split \
    build/bench/bench_data_path build/bench/bench_tenants "${tests[@]/#/build/tests/}"
  exit
fi

: "${OUT:?set OUT to the folder for the results}"
parts=${PARTS:-load tests regions split streams tenants}
[ -n "${TESTS:-}" ] && read -ra tests <<<"$TESTS"
device_setup "$dir" || exit 2
export AMPD_BIN=$PWD/$dir/bin/ampd AMPCTL_BIN=$PWD/$dir/bin/ampctl AMP_SOURCE_DIR=$PWD
export CK_DEFAULT_TIMEOUT=300
export BENCH_AMPD_LOG=$OUT/ampd.log   # the benches' daemons log there too
gpus=${GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}   # GPUS: a trial on PoCL
{ nvidia-smi --query-gpu=index,name,driver_version,memory.total,pci.bus_id --format=csv
  nvidia-smi topo -m; nproc; free -g | head -2; device_show_versions "$dir"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
cd "$dir/bin" || exit 2

# A daemon on a fresh socket: $sock, $pid.
ampd_start() {
  sock=$(mktemp -d)/s
  ./ampd --listen "unix:$sock" "$@" 2>>"$OUT/ampd.log" & pid=$!
  for _ in $(seq 240); do ./ampctl -a "unix:$sock" health >/dev/null 2>&1 && return; sleep 0.5; done
  echo "ampd did not start" >&2; return 2
}
ampd_stop() { kill "$pid"; wait "$pid"; echo "ampd exit $?"; }

# n concurrent 1 GiB Stream transforms, no device named; the devices'
# load sampled until the last ends, then summed up per device.
load_streams() {
  local n=$1 samples i alive rc=0 p
  samples=$(mktemp)
  local pids=() t0 t1
  t0=$(date +%s.%N)
  for i in $(seq "$n"); do
    ./ampctl -a "unix:$sock" --transport socket --no-progress transform --op xor --value 90 \
      -i /dev/shm/ampd-in.bin -o /dev/null & pids+=($!)
  done
  alive=1
  while [ $alive = 1 ]; do
    ./ampctl -a "unix:$sock" --json devices >>"$samples" 2>/dev/null && echo >>"$samples"
    sleep 0.1
    alive=0; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  t1=$(date +%s.%N)
  python3 - "$samples" "$n" "$t0" "$t1" "$rc" <<'PY'
import json, sys
path, n, t0, t1, rc = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
snaps = [json.loads(l) for l in open(path) if l.strip()]
busy = [s for s in snaps if any(d["load"]["jobs_running"] for d in s)]
print(f"{n} streams of 1 GiB: {t1 - t0:.2f} s wall, {n / (t1 - t0) * 1.073741824:.2f} GB/s in all, "
      f"exit {rc}; {len(busy)} of {len(snaps)} samples busy")
print("| device | type | most running | mean running while busy | most memory in use |")
print("|---|---|---:|---:|---:|")
for d in snaps[0] if snaps else []:
    i = d["index"]
    run = [s[i]["load"]["jobs_running"] for s in busy]
    mem = max(s[i]["load"]["memory_in_use"] for s in snaps)
    mean = sum(run) / len(run) if run else 0
    print(f"| {i} | {d['type']} | {max(run, default=0)} | {mean:.2f} | {mem / 2**20:.0f} MiB |")
PY
  rm -f "$samples"
}

part_load() {
  head -c 1G /dev/urandom >/dev/shm/ampd-in.bin
  ampd_start || return 2
  ./ampctl -a "unix:$sock" devices
  load_streams 4
  load_streams 8
  ampd_stop
  rm -f /dev/shm/ampd-in.bin
}

part_tests() {
  local t rc
  export AMP_TEST_MIN_DEVICES=$gpus
  for t in "${tests[@]}"; do
    timeout 200 ./$t >"/tmp/$t.txt" 2>&1; rc=$?
    echo "== $t rc=$rc: $(grep -E '^[0-9]+%' "/tmp/$t.txt" | tail -1)"
    [ $rc = 0 ] || tail -30 "/tmp/$t.txt"
  done
}

part_regions() {
  local i
  for i in $(seq 0 $((gpus - 1))); do
    timeout 100 ./bench_data_path --ampd ./ampd --sizes 1G --reps 3 --only pinned,region --device "$i"
  done
}

# shellcheck disable=SC2086
part_split() { timeout 300 ./bench_split --ampd ./ampd --sizes 1G,8G --reps 3 -- ${SPLIT_AMPD_ARGS:-}; }

part_streams() {
  local n
  for n in 4 $((2 * gpus)); do
    timeout 200 ./bench_data_path --ampd ./ampd --sizes 1G --reps 3 --only raw,multi --spread \
      --streams "$n"
  done
}

part_tenants() {
  timeout 200 ./bench_tenants --ampd ./ampd --device 0 --bulk-bytes 1G --streams 4 \
    --unary-bytes 32M --unary-calls 16 --seconds 2 --warmup 1 --no-floor
  [ "$gpus" -ge 2 ] && timeout 200 ./bench_tenants --ampd ./ampd --device 0 --device-b 1 \
    --bulk-bytes 1G --streams 4 --unary-bytes 32M --unary-calls 16 --seconds 2 --warmup 1 --no-floor
}

for part in $parts; do
  device_step "$part ($gpus GPUs)"
  "part_$part" 2>&1 | tee "$OUT/$part.txt"
done
device_step done
