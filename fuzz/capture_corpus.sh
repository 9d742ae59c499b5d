#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Records fuzz_conn's seed corpus from real traffic: starts build/ampd (any
# OpenCL device; PoCL will do), puts fuzz/capture.py in front of it, and runs
# one ampctl command per seed through the proxy. Each connection becomes
# fuzz/corpus/fuzz_conn/NAME (NAME-1, ... for a command's later ones).
#   fuzz/capture_corpus.sh [BUILD_DIR]   (default build; needs ampd and ampctl)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=fuzz/corpus/fuzz_conn
tmp=$(mktemp -d)
trap 'kill "$daemon" 2>/dev/null || true; rm -rf "$tmp"' EXIT
rm -rf "$out" fuzz/corpus/fuzz_requests   # both are rewritten whole
mkdir -p "$out"

"$build/ampd" --listen "unix:$tmp/ampd.sock" >"$tmp/ampd.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [ -S "$tmp/ampd.sock" ] && break; sleep 0.1; done

# Inputs: small, so that every seed stays a few KiB and a fuzz run is fast;
# seeded, so that a second recording differs only where the traffic does.
python3 -c "import random,sys; sys.stdout.buffer.write(random.Random(3).randbytes(3000))" >"$tmp/in3k"
python3 -c "import random,sys; sys.stdout.buffer.write(random.Random(20).randbytes(20000))" >"$tmp/in20k"
python3 -c "import sys; sys.stdout.buffer.write(bytes(range(255, -1, -1)))" >"$tmp/lut"
python3 -c "import struct,sys; sys.stdout.buffer.write(b''.join(struct.pack('<f', (i - 500) / 250) for i in range(1000)))" >"$tmp/floats"

# proxy NAME: a fresh capture.py for one connection, in the background.
proxy() {
  python3 fuzz/capture.py --listen "$tmp/proxy.sock" --upstream "$tmp/ampd.sock" \
    --out "$tmp/$1" --connections 1 2>/dev/null &
  proxy_pid=$!
  for _ in $(seq 100); do [ -S "$tmp/proxy.sock" ] && break; sleep 0.05; done
}
# keep NAME: moves the capture into the corpus once the proxy wrote it; a
# command that never connected (a usage error) is reported, not waited for.
keep() {
  for _ in $(seq 40); do [ -e "$tmp/$1-0" ] && break; sleep 0.05; done
  if [ -e "$tmp/$1-0" ]; then
    wait "$proxy_pid"
    mv "$tmp/$1-0" "$out/$1"
  else
    kill "$proxy_pid"
    wait "$proxy_pid" || true
    rm -f "$tmp/proxy.sock"
    echo "capture_corpus: $1: the command never connected" >&2
  fi
}
# capture NAME AMPCTL-ARGS...: one command through the proxy.
capture() {
  local name=$1
  shift
  proxy "$name"
  timeout 20 "$build/ampctl" -a "unix:$tmp/proxy.sock" "$@" >/dev/null 2>&1 </dev/null || true
  keep "$name"
}
# capture_stdin NAME FILE AMPCTL-ARGS...: the input from a pipe (length unknown).
capture_stdin() {
  local name=$1 file=$2
  shift 2
  proxy "$name"
  timeout 20 "$build/ampctl" -a "unix:$tmp/proxy.sock" "$@" <"$file" >/dev/null 2>&1 || true
  keep "$name"
}

capture reverse-text reverse "hello, fuzz"
capture reverse-deadline -t 5000 reverse "a call with a grpc-timeout"
capture reverse-cpu -d cpu reverse -i "$tmp/in3k"
capture reverse-index -d 1 reverse "device 1"
capture transform-add transform --op add --value 3 -i "$tmp/in3k"
capture transform-map-range transform --op map --lut "$tmp/lut" --offset 10 --length 100 -i "$tmp/in3k"
capture transform-set-offset transform --op set --value 0x7f --offset 2990 -i "$tmp/in3k"
capture hist-u8 hist -i "$tmp/in3k"
capture hist-f32-clamp hist --type float32 --bins 16 --range -1:1 --clamp -i "$tmp/floats"
capture hist-u32 hist --type uint32 --bins 7 --range 0:4e9 -i "$tmp/in3k"
capture hist-too-many-bins hist --type int32 --bins 100000 --range -5:5 -i "$tmp/in3k"
capture fill-i32 fill --type int32 --count 100 --start -5 --step 3
capture fill-f32 fill --type float32 --count 1000 --start 0.5 --step 0.25 --format binary
capture fill-i64-tile fill --type int64 --count 64 --tile 32 --step -1
capture pipeline pipeline -i "$tmp/in3k" -o /dev/null transform:add:3 hist reverse
capture pipeline-fill-hist pipeline -i "$tmp/in3k" -o /dev/null fill:uint32:500:7:2 hist:uint32:10:0:2000:clamp
capture devices devices
capture status status
capture health health
capture stream-xor --stream-threshold 0 transform --op xor --value 255 -i "$tmp/in20k"
capture stream-hist-u8 --stream-threshold 0 hist -i "$tmp/in20k"
capture stream-hist-i32 --stream-threshold 0 hist --type int32 --bins 32 --range -1e9:1e9 -i "$tmp/in20k"
capture stream-reverse --stream-threshold 0 reverse -i "$tmp/in20k"
capture stream-pipeline --stream-threshold 0 pipeline -i "$tmp/in20k" -o /dev/null transform:add:1:100:5000 hist reverse
capture stream-hist-too-many-bins --stream-threshold 0 hist --type uint32 --bins 100000 --range 0:1e6 -i "$tmp/in3k"
capture stream-pipeline-hist --stream-threshold 0 pipeline -i "$tmp/floats" -o /dev/null hist:float32:8:-2:2 transform:map:"$tmp/lut"
# capture_grpcio NAME WHAT: calls ampctl does not make (reflection,
# Health/Watch), from Debian's python3-grpcio (fuzz/capture_grpcio.py).
capture_grpcio() {
  proxy "$1"
  timeout 20 /usr/bin/python3 fuzz/capture_grpcio.py "unix:$tmp/proxy.sock" "$2" >/dev/null 2>&1 || true
  keep "$1"
}

capture_stdin stream-reverse-pipe "$tmp/in3k" --stream-threshold 0 reverse
capture_stdin stream-hist-pipe "$tmp/in20k" --stream-threshold 0 hist
capture_grpcio reflection-v1alpha reflection
capture_grpcio health-watch-cancel watch
capture_grpcio reverse-hist-gzip gzip
capture_grpcio reverse-hist-deflate deflate
# fuzz_requests' seeds: the request messages of these connections.
python3 fuzz/corpus_requests.py "$out" fuzz/corpus/fuzz_requests

# Seeds past what a real client sends: the same traffic with a daemon that
# falls behind (ctrl bytes, fuzz_conn.c): no output taken and no device
# work until the client is gone; one task per read (streams wait for
# staging buffers); deadlines firing while the job waits.
# restamp SEED NEW CTRL [final]: SEED's pieces with another ctrl byte;
# "final" appends an empty ctrl-0 piece: the daemon catches up at the end.
restamp() {
  python3 - "$out/$1" "$out/$2" "$3" "${4:-}" <<'PY'
import sys
src, dst, ctrl, final = sys.argv[1], sys.argv[2], int(sys.argv[3], 0), sys.argv[4]
blob, out, i = open(src, "rb").read(), bytearray(), 0
while i + 3 <= len(blob):
    n = int.from_bytes(blob[i + 1:i + 3], "big")
    out += bytes([ctrl]) + blob[i + 1:i + 3 + n]
    i += 3 + n
if final:
    out += bytes(3)
open(dst, "wb").write(out)
PY
}

# Calls competing on one connection (budgets, staging buffers, --max-jobs):
# captured connections spliced into one (ampctl makes one call each).
splice() {
  local name=$1
  shift
  python3 fuzz/corpus_splice.py "$out/$name" "${@/#/$out/}"
}
splice multi-streams stream-reverse stream-xor stream-hist-u8 fill-i32
splice multi-unary reverse-text transform-add hist-u8 pipeline fill-f32 status health devices
restamp multi-unary multi-unary-stalled 0x08
restamp multi-streams multi-streams-busy 0x04 final
restamp stream-reverse stream-reverse-stalled 0x0a
restamp stream-xor stream-xor-unread 0x02
restamp reverse-deadline reverse-deadline-fired 0x18
restamp stream-hist-u8 stream-hist-u8-drained 0x40

ls -l "$out" fuzz/corpus/fuzz_requests
