#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs the streaming checks and benchmark on the device machine (the device
# tool), from the repo root there. Prepare here first, and carry DIR
# (default build-dev, git-ignored):
#   mkdir -p build-dev/debs build-dev/bin && (cd build-dev/debs && apt-get download \
#     libuv1 libnghttp2-14 libssl3 libprotobuf-c1 ocl-icd-libopencl1 check libsubunit0)
#   scripts/build.sh build && cp build/ampd build/ampctl build/bench/bench_stream \
#     build/tests/test_stream_tasks build/tests/test_client_stream build/tests/test_stream_flow \
#     build/tests/test_client_pipeline build/tests/test_runner build-dev/bin/ &&
#   cp -L build/libampclient.so.0.1 build-dev/bin/
# Arguments go to bench_stream (e.g. --size 4G).
set -x
dir=${DIR:-build-dev}
mkdir -p /tmp/r && for f in $dir/debs/*.deb; do dpkg -x $f /tmp/r; done
export LD_LIBRARY_PATH=/tmp/r/usr/lib/x86_64-linux-gnu:$PWD/$dir/bin
mkdir -p /etc/OpenCL/vendors
lib=$(ldconfig -p | awk '/libnvidia-opencl.so.1/{print $NF; exit}')
echo "$lib" > /etc/OpenCL/vendors/nvidia.icd
nvidia-smi --query-gpu=name,driver_version --format=csv
export AMPD_BIN=$PWD/$dir/bin/ampd AMPCTL_BIN=$PWD/$dir/bin/ampctl AMP_SOURCE_DIR=$PWD CK_DEFAULT_TIMEOUT=300
cd $dir/bin
for t in test_stream_tasks test_client_stream test_stream_flow test_client_pipeline test_runner; do
  timeout 150 ./$t 2>&1 | grep -v 'ampd: \(listening\|device\|signal\)' | tail -3; echo "== $t rc=${PIPESTATUS[0]}"
done
# Many GiB through one stream with the default 64 MiB staging pool: the
# daemon's peak RSS (VmHWM) stays far below the input.
d=$(mktemp -d); ./ampd --listen unix:$d/s 2>$OUT/ampd.log & p=$!
for i in $(seq 120); do ./ampctl --address unix:$d/s health >/dev/null 2>&1 && break; sleep 0.5; done
./ampctl --address unix:$d/s devices
time (head -c 8G /dev/zero | ./ampctl --address unix:$d/s --json --no-progress hist | head -c 300); echo
grep -E 'VmHWM|VmRSS' /proc/$p/status
kill $p; wait $p; echo "ampd exit $?"
timeout 400 ./bench_stream --ampd ./ampd "$@" 2>&1 | tee $OUT/bench_stream.txt
