#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Configures and builds one build tree: scripts/build.sh [DIR] [cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
# build-fuzz is the libFuzzer build (fuzz/): clang, and nothing but the harnesses.
if [ "$(basename "$dir")" = build-fuzz ]; then
  set -- -DCMAKE_C_COMPILER=clang -DAMP_FUZZ=ON "$@"
fi
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
