#!/bin/bash
# SPDX-License-Identifier: MIT
# Idle ampd's footprint by --devices (issue 36 item 3): for each selection
# in $SELECTIONS (default "auto all": on a GPU host auto leaves PoCL's CPU
# device out, all opens it too), $STARTS starts (default 3), each: seconds
# from exec to health SERVING, the devices opened, then after $IDLE_S
# seconds idle (default 5) VmRSS and the thread count (/proc/PID/status).
#   1. here: scripts/build.sh build && scripts/device-footprint.sh prepare
#   2. there, carrying $DIR (default build-dev): scripts/device-footprint.sh
# LOCAL=1 runs build/'s binaries on this host's devices (PoCL; with
# POCL_DEVICES="pthread pthread" SELECTIONS="all 0" compares two devices
# with one). $AMPD_ARGS: more ampd options for every start (e.g.
# "--staging-bytes 64M"). Writes $OUT/footprint.txt (and ampd.log, env.txt
# there).
set -u
dir=${DIR:-build-dev}
. "$(dirname "$0")/device-common.sh"
if [ "${1:-}" = prepare ]; then
  device_prepare "$dir" build/ampd build/ampctl
  exit
fi

: "${OUT:?set OUT to the folder for the results}"
selections=${SELECTIONS:-auto all}
starts=${STARTS:-3}
idle_s=${IDLE_S:-5}
if [ "${LOCAL:-0}" = 1 ]; then
  bin=$PWD/build
else
  device_setup "$dir" || exit 2
  bin=$PWD/$dir/bin
  { nvidia-smi --query-gpu=index,name,driver_version --format=csv; nproc
    device_show_versions "$dir"; } >"$OUT/env.txt" 2>&1
fi

# One start of ampd --devices $1: one line of the table.
footprint_one() {
  local sel=$1 tmp sock pid t0 t1 n rss threads
  tmp=$(mktemp -d) && sock=$tmp/s
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086 # $AMPD_ARGS are words
  "$bin/ampd" --listen "unix:$sock" --devices "$sel" ${AMPD_ARGS:-} 2>>"$OUT/ampd.log" & pid=$!
  until "$bin/ampctl" -a "unix:$sock" health >/dev/null 2>&1; do
    kill -0 $pid 2>/dev/null || { echo "| $sel | ampd exited | | | |"; return 1; }
    sleep 0.02
  done
  t1=$(date +%s.%N)
  n=$("$bin/ampctl" -a "unix:$sock" --json devices | grep -o '"index"' | wc -l)
  sleep "$idle_s"
  rss=$(awk '/^VmRSS:/{printf "%.1f", $2 / 1024}' /proc/$pid/status)
  threads=$(awk '/^Threads:/{print $2}' /proc/$pid/status)
  printf '| %s | %s | %.2f | %s | %s |\n' "$sel" "$n" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$rss" "$threads"
  kill $pid && wait $pid
  rm -rf "$tmp"
}

{
  echo "| --devices | devices | exec to SERVING s | idle VmRSS MiB | threads |"
  echo "|---|---|---|---|---|"
  for sel in $selections; do
    for _ in $(seq "$starts"); do footprint_one "$sel"; done
  done
} | tee "$OUT/footprint.txt"
