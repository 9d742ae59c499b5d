#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Quick start: installs dependencies, builds, starts ampd on a private socket
# and reverses a string through ampctl on the best OpenCL device (PoCL's CPU
# device where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
# Only what the demo runs: the daemon and ampctl, not the tests and benches.
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target ampd ampctl

dir=$(mktemp -d)
sock="unix:$dir/ampd.sock"
build/ampd --listen "$sock" 2>"$dir/ampd.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT

for _ in $(seq 120); do
  build/ampctl --address "$sock" health >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || { cat "$dir/ampd.log" >&2; exit 1; }
  sleep 0.5
done

build/ampctl --address "$sock" devices
text=${1:-"Hello from ampd!"}
printf 'reverse "%s" -> ' "$text"
build/ampctl --address "$sock" reverse "$text"
echo
