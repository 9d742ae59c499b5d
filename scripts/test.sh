#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs dependencies, builds, and runs the whole suite twice: a plain
# build and one under AddressSanitizer + UndefinedBehaviorSanitizer.
# Set AMP_TEST_SANITIZE=0 to skip the sanitizer pass. With AMP_TEST_DEB=1
# (CI's .ci/run sets it), between the two the Debian packages are built,
# installed system-wide, serve a job and are purged (scripts/deb-test.sh).
# Then each libFuzzer harness (fuzz/) runs over its corpus for
# AMP_FUZZ_SECONDS (default 20; 0 skips).
#
# What it does to this host, said before it starts: installs build
# dependencies with apt (scripts/deps.sh), writes build/, build-asan/ and
# build-fuzz/ here; with AMP_TEST_DEB=1 also installs and purges ampd's
# own packages, which leave the ampd system account behind.
set -euo pipefail
cd "$(dirname "$0")/.."
deb=${AMP_TEST_DEB:-0}
echo "test.sh: installs build dependencies (scripts/deps.sh, apt), builds in build/," \
     "build-asan/ and build-fuzz/$( [ "$deb" = 1 ] && echo ", installs and purges ampd's .debs system-wide (the ampd account stays)")" >&2
scripts/deps.sh

export CTEST_OUTPUT_ON_FAILURE=1
jobs=$(nproc)

scripts/build.sh build
(cd build && ctest -j"$jobs" --timeout 900)

if [ "$deb" = 1 ]; then
  scripts/deb-test.sh
fi

if [ "${AMP_TEST_SANITIZE:-1}" != 0 ]; then
  scripts/build.sh build-asan -DAMP_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
  export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  (cd build-asan && ctest -j"$jobs" --timeout 900)
fi

fuzz_seconds=${AMP_FUZZ_SECONDS:-20}
if [ "$fuzz_seconds" != 0 ]; then
  scripts/fuzz.sh "$fuzz_seconds"
fi
