#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer harnesses (fuzz/, clang, in build-fuzz) and runs each
# for SECONDS (default 60) over a scratch copy of its committed corpus, so
# that what a run adds never lands in the repository:
#   scripts/fuzz.sh [SECONDS] [HARNESS...]   (default: all five)
# Each harness's last lines (coverage, execs) are printed; its full log is
# build-fuzz/fuzz-logs/HARNESS.log and a crashing input goes to
# build-fuzz/crashes/HARNESS/. Exits 1 if any harness found a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=(fuzz_conn fuzz_requests fuzz_config fuzz_tls fuzz_regions)

scripts/build.sh build-fuzz

# The ASan pass of scripts/test.sh exports leak suppressions for the test
# suite; a fuzz run must see every leak.
unset ASAN_OPTIONS LSAN_OPTIONS
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p build-fuzz/fuzz-logs
failed=()
for h in "${harnesses[@]}"; do
  [ -x "build-fuzz/fuzz/$h" ] || { echo "fuzz: no harness $h" >&2; exit 2; }
  mkdir -p "$scratch/$h" "build-fuzz/crashes/$h"
  cp fuzz/corpus/"$h"/* "$scratch/$h/"
  log=build-fuzz/fuzz-logs/$h.log
  echo "== $h: ${seconds}s over $(ls "$scratch/$h" | wc -l) seeds"
  # -close_fd_mask=1: the harnesses' stdout (ampd --help) is noise.
  if "build-fuzz/fuzz/$h" -max_total_time="$seconds" -print_final_stats=1 -close_fd_mask=1 \
       -timeout=10 -artifact_prefix="build-fuzz/crashes/$h/" "$scratch/$h" >"$log" 2>&1; then
    grep -E '^#[0-9]+[[:space:]]+DONE|^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$log"
  else
    failed+=("$h")
    grep -E 'ERROR|SUMMARY|invariant|accepted, but|#[0-9]+ 0x|Test unit written' "$log" | head -40
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: ${failed[*]} crashed; inputs in build-fuzz/crashes/, logs in build-fuzz/fuzz-logs/" >&2
  exit 1
fi
