#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""python_client.py: the Python package ampclient beside the C client, on
one ampd this program starts (tests/support/daemon_proc.py), same bytes.

  region   a transform (xor) from an input region into an output region and
           a 256-bin histogram of the input region, SIZE bytes, through
           ampclient (input put in place and output cleared untimed, as
           bench_data_path's region rows do); the C side is bench_data_path
           --only region on the same ampd binary, run by this program
           (issue 38's target: Python >= 0.8 of C)
  stream   a transform (xor) of a SIZE file into a file: ampclient's
           Client.stream_file() (on the Unix socket: chunks through two
           regions) and its gRPC Stream call (Client.stream(...).write_to())
           against `ampctl transform -i -o` (which streams inputs of 16 MiB
           or more): stream_file and ampctl in turns (target: stream_file
           >= 0.7 of ampctl), then the Stream call's runs
  tiny     CALLS 16-byte Reverse calls one after another: p50 and p99 of
           ampclient's Client.reverse beside grpcio's raw stub
           (channel.unary_unary with the message classes' own
           serializers, what a protoc-generated stub does)

Every result is checked; medians of --reps after a warm-up.

  bench/python_client.py [--size 1G] [--reps 3] [--calls 2000] [--only region,stream,tiny]
                         [--build BUILD]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
XOR = 0x5A
TINY = b"0123456789abcdef"
GIB = 1 << 30


def size_arg(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text)
    if not m:
        raise argparse.ArgumentTypeError("want N[K|M|G], not %r" % text)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def median_of(reps, fn):
    fn()  # warm-up
    return statistics.median(fn() for _ in range(reps))


def pattern(n):
    block = bytes((i * 131 + (i >> 8)) & 0xFF for i in range(1 << 16))
    return (block * (n // len(block) + 1))[:n]


def xor_table():
    return bytes(b ^ XOR for b in range(256))


def region_python(c, amp, size, reps):
    data = pattern(size)
    want = data.translate(xor_table())
    rin, rout = c.region(size, data=data), c.region(size)
    try:
        def transform():
            rin.view[:] = data
            rout.view[:] = bytes(size)
            t0 = time.perf_counter()
            s = c.transform(rin.slice(), "xor", XOR, out=rout.slice(), device="0")
            t = time.perf_counter() - t0
            assert s.length == size and s.view == want, "region transform result"
            return t

        counts = [data.count(bytes([b])) for b in range(256)]

        def hist():
            t0 = time.perf_counter()
            h = c.histogram(rin.slice(), device="0")
            t = time.perf_counter() - t0
            assert h.counts == counts, "region histogram result"
            return t
        return size / median_of(reps, transform), size / median_of(reps, hist)
    finally:
        rin.release()
        rout.release()


def region_c(build, size, reps):
    """bench_data_path's region rows (GB/s): transform, histogram."""
    out = subprocess.run([os.path.join(build, "bench", "bench_data_path"), "--sizes", str(size),
                          "--reps", str(reps), "--only", "region", "--ampd",
                          os.path.join(build, "ampd")], check=True, capture_output=True,
                         text=True).stdout
    rates = {}
    for line in out.splitlines():  # region unix JOB SIZE SECONDS GB/s ...
        f = line.split()
        if f[:2] == ["region", "unix"] and len(f) > 5:
            rates[f[2]] = float(f[5]) * 1e9
    if len(rates) != 2:
        raise RuntimeError("bench_data_path's region rows not found in:\n" + out)
    return rates["transform"], rates["histogram"]


def stream_rates(c, amp, build, address, size, reps):
    tmp = tempfile.mkdtemp(prefix="ampclient-bench-")
    src, dst = os.path.join(tmp, "in.bin"), os.path.join(tmp, "out.bin")
    block = pattern(64 << 20)
    with open(src, "wb") as f:
        for i in range(0, size, len(block)):
            f.write(block[:size - i])
    want_head = block[:1 << 20].translate(xor_table())

    def check():
        assert os.path.getsize(dst) == size, "stream output size"
        with open(dst, "rb") as f:
            assert f.read(1 << 20) == want_head, "stream output"
        os.unlink(dst)

    def timed(run):
        os.sync()  # the last run's output written back: none starts behind another's
        t0 = time.perf_counter()
        run()
        t = time.perf_counter() - t0
        check()
        return t

    def python_file():
        return timed(lambda: c.stream_file([amp.TransformStep("xor", XOR)], src, dst))

    def python_stream():
        def run():
            with open(dst, "wb") as out:
                c.stream([amp.TransformStep("xor", XOR)], src).write_to(out)
        return timed(run)

    def ampctl():
        return timed(lambda: subprocess.run(
            [os.path.join(build, "ampctl"), "--address", address, "--no-progress", "transform",
             "--op", "xor", "--value", str(XOR), "-i", src, "-o", dst], check=True))
    try:
        python_file(), ampctl()  # warm-up
        tf, tc = [], []
        for _ in range(reps):  # in turns, so that drift hits both
            tf.append(python_file())
            tc.append(ampctl())
        # The gRPC stream apart: run between the others, it slowed the
        # next stream_file to about half (0.44 against 0.95 GB/s).
        python_stream()
        ts = [python_stream() for _ in range(reps)]
        return tuple(size / statistics.median(t) for t in (tf, ts, tc))
    finally:
        os.unlink(src)
        os.rmdir(tmp)


def tiny_latencies(c, amp, calls):
    from ampclient import _proto
    raw = c._channel.unary_unary("/amp.v1.Amp/Reverse",
                                 request_serializer=_proto.ReverseRequest.SerializeToString,
                                 response_deserializer=_proto.DataReply.FromString)

    def pkg():
        t0 = time.perf_counter()
        assert c.reverse(TINY) == TINY[::-1]
        return time.perf_counter() - t0

    def stub():
        t0 = time.perf_counter()
        assert raw(_proto.ReverseRequest(data=TINY)).data == TINY[::-1]
        return time.perf_counter() - t0

    for _ in range(100):  # warm-up
        pkg(), stub()
    tp, ts = [], []
    for _ in range(calls):  # alternately
        tp.append(pkg())
        ts.append(stub())

    def pct(xs, q):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1e6
    return (pct(tp, 0.5), pct(tp, 0.99)), (pct(ts, 0.5), pct(ts, 0.99))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=size_arg, default=GIB)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--only", default="region,stream,tiny")
    ap.add_argument("--build", default=os.path.join(SOURCE, "build"))
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    sys.path.insert(0, os.path.join(build, "python"))
    sys.path.insert(0, os.path.join(SOURCE, "tests", "support"))
    import ampclient as amp
    from daemon_proc import Daemon
    only = a.only.split(",")
    print("size %d bytes, median of %d after a warm-up" % (a.size, a.reps))
    if "region" in only:  # C first: its ampd is its own, and gone before ours starts
        ct, ch = region_c(build, a.size, a.reps)
    d = Daemon(ampd_bin=os.path.join(build, "ampd"), stderr=subprocess.DEVNULL)
    try:
        with amp.Client(d.address) as c:
            if "region" in only:
                pt, ph = region_python(c, amp, a.size, a.reps)
                print("region transform  python %6.2f GB/s  C %6.2f GB/s  ratio %.2f (target >= 0.8)"
                      % (pt / 1e9, ct / 1e9, pt / ct))
                print("region histogram  python %6.2f GB/s  C %6.2f GB/s  ratio %.2f (target >= 0.8)"
                      % (ph / 1e9, ch / 1e9, ph / ch))
            if "stream" in only:
                pf, ps, cs = stream_rates(c, amp, build, d.address, a.size, a.reps)
                print("file->file stream_file (regions) %6.2f GB/s  ampctl %6.2f GB/s  ratio %.2f "
                      "(target >= 0.7)" % (pf / 1e9, cs / 1e9, pf / cs))
                print("file->file stream (gRPC)         %6.2f GB/s  ampctl %6.2f GB/s  ratio %.2f"
                      % (ps / 1e9, cs / 1e9, ps / cs))
            if "tiny" in only:
                (p50, p99), (s50, s99) = tiny_latencies(c, amp, a.calls)
                print("tiny reverse x%d  ampclient p50 %.0f us p99 %.0f us; grpcio raw stub p50 "
                      "%.0f us p99 %.0f us; p50 ratio %.2f" % (a.calls, p50, p99, s50, s99,
                                                                p50 / s50))
    finally:
        status = d.stop()
    if status != 0:
        print("ampd exited %d" % status)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
