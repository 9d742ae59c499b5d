#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs the GPU checks on the device machine (the device tool), from the repo root
# there. Prepare here first, and carry .dev:
#   mkdir -p .dev/debs .dev/bin && (cd .dev/debs && apt-get download libuv1 libnghttp2-14 libssl3 \
#     libprotobuf-c1 ocl-icd-libopencl1 libmicrohttpd12 libsubunit0)
#   cp build/ampd build/ampctl build/bench/bench_kernels build/tests/test_kernel_* \
#      build/tests/test_dev_discover build/tests/test_runner build/tests/test_daemon_jobs \
#      build/tests/test_client_reverse build/tests/test_client_region build/tests/test_multi_device \
#      build/tests/test_hostile_unread_share build/tests/test_hostile_h2_limits \
#      build/tests/test_kernel_pieces build/tests/test_pieces_interleave build/tests/test_fairq .dev/bin/
# Arguments go to bench_kernels (e.g. --max-size 1G --reps 20).
set -x
mkdir -p /tmp/r && for f in .dev/debs/*.deb; do dpkg -x $f /tmp/r; done
export LD_LIBRARY_PATH=/tmp/r/usr/lib/x86_64-linux-gnu
mkdir -p /etc/OpenCL/vendors
lib=$(ldconfig -p | awk '/libnvidia-opencl.so.1/{print $NF; exit}')
echo "$lib" > /etc/OpenCL/vendors/nvidia.icd
ls /etc/OpenCL/vendors; nvidia-smi --query-gpu=name,driver_version --format=csv
export AMPD_BIN=$PWD/.dev/bin/ampd AMPCTL_BIN=$PWD/.dev/bin/ampctl AMP_SOURCE_DIR=$PWD CK_DEFAULT_TIMEOUT=300
cd .dev/bin
for t in test_dev_discover test_kernel_reverse test_kernel_transform test_kernel_hist test_kernel_fill test_kernel_pipeline test_kernel_pieces test_pieces_interleave test_fairq test_runner test_daemon_jobs test_client_reverse test_client_region test_multi_device test_hostile_unread_share test_hostile_h2_limits; do
  [ -x ./$t ] || { echo "== $t not carried"; continue; }
  timeout 200 ./$t > $OUT/$t.txt 2>&1; rc=$?   # the test's status, not a pipe's
  tail -3 $OUT/$t.txt; echo "== $t rc=$rc"
done
(cd ../.. && timeout 300 python3 tests/test_hostile_regions.py > $OUT/test_hostile_regions.txt 2>&1; echo "== test_hostile_regions rc=$?")
d=$(mktemp -d); ./ampd --listen unix:$d/s 2>$OUT/ampd.log & p=$!
for i in $(seq 60); do ./ampctl --address unix:$d/s health >/dev/null 2>&1 && break; sleep 0.5; done
./ampctl --address unix:$d/s devices; ./ampctl --address unix:$d/s reverse "Hello, H100"; echo
kill $p; wait $p; echo "ampd exit $?"; head -20 $OUT/ampd.log
timeout 300 ./bench_kernels "$@" 2>&1 | tee $OUT/bench.txt
