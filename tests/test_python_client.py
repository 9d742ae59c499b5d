# SPDX-License-Identifier: MIT
"""test_python_client.py: the blocking ampclient.Client against a real ampd.

Every job kind (reverse, each transform op and a sub-range, byte and
element histograms with clamp, below/above and NaN, fill of each type,
pipelines) from bytes, through the Stream call (bytes, a path, a file
object, a generator; results larger than gRPC's 4 MiB default limit, which
the client streams by itself), stream_file (through regions chunk by chunk,
or a Stream call where the steps or the limits need one), through shared-memory regions (every job
kind, in place, zero-copy views and numpy arrays), and many calls started at
once; every result against a computation here. Then the bad paths: an
unknown op (refused before sending), a value the daemon refuses (naming the
field), a job too large for the device, a region over the uid's limit and a
slice past its end, a deadline passing while a stream waits for input, a
stream cancelled, a token refused and accepted on TCP, regions asked for
on TCP. Ends with ampd exiting 0 (no leak under ASan).
"""
import os
import struct
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon, free_port  # noqa: E402
from pyclient import (amp, data_of, expect_error, ref_byte_hist, ref_fill,  # noqa: E402
                      ref_hist, ref_transform)

TIMEOUT_S = 120
MAX_CLIENT_REGION_BYTES = 32 << 20
TOKEN = "python-client-token_0123456789"
BIG = 9 << 20  # past gRPC's 4 MiB default receive limit: the client must stream
IN_FLIGHT = 64


# --- unary jobs ----------------------------------------------------------------------------

def test_reverse(t):
    for n in (0, 1, 3, 4, 15, 16, 17, 4097, 100003):
        d = data_of(n, n)
        expect(t.c.reverse(d) == d[::-1], "reverse of %d bytes" % n)
    expect(t.c.reverse(bytearray(b"stressed")) == b"desserts", "bytearray input")
    expect(t.c.reverse(memoryview(b"xstressedx")[1:-1]) == b"desserts", "memoryview input")


def test_transform_each_op(t):
    d = data_of(70001)
    table = bytes((b * 7 + 3) & 0xFF for b in range(256))
    for op, value in (("add", 200), ("xor", 0x5A), ("and", 0x0F), ("or", 0x81), ("set", 9)):
        expect(t.c.transform(d, op, value) == ref_transform(d, op, value), op)
    expect(t.c.transform(d, "map", table=table) == ref_transform(d, "map", table=table), "map")
    expect(t.c.transform(d, "XOR", 1, offset=100, length=1000) ==
           ref_transform(d, "xor", 1, offset=100, length=1000), "sub-range, op in capitals")
    expect(t.c.transform(d, "add", 1, offset=5) == ref_transform(d, "add", 1, offset=5),
           "from an offset to the end")


def test_histogram_bytes_and_elements(t):
    d = data_of(100000) + bytes(5000)
    h = t.c.histogram(d)
    expect(h.counts == ref_byte_hist(d), "uint8 counts")
    expect(h.device != "", "device named")
    ints = [-50, -1, 0, 1, 7, 99, 100, 250, 1 << 30] * 37
    raw = struct.pack("<%di" % len(ints), *ints)
    for clamp in (False, True):
        h = t.c.histogram(raw, "int32", 10, 0, 100, clamp=clamp)
        expect((h.counts, h.below, h.above, h.nan) == ref_hist(ints, 10, 0, 100, clamp),
               "int32 clamp=%s: %r" % (clamp, h))
    floats = [-1.5, 0.0, 0.25, 0.5, 0.99, 1.0, float("nan"), float("inf")] * 11
    h = t.c.histogram(struct.pack("<%df" % len(floats), *floats), "float32", 4, 0.0, 1.0)
    expect((h.counts, h.below, h.above, h.nan) == ref_hist(floats, 4, 0.0, 1.0, False),
           "float32 with NaN: %r" % h)


def test_fill_each_type(t):
    for type, start, step in (("int32", -7, 3), ("uint32", 4294967290, 1), ("int64", 1 << 40, -5),
                              ("int32", 2147483640, 1), ("float32", 0.5, 0.25)):
        for count in (1, 97, 10007):
            got = t.c.fill(type, count, start, step)
            expect(got == ref_fill(type, count, start, step), "%s x %d" % (type, count))
    expect(t.c.fill("int32", 1000, 1, 2, tile=7) == ref_fill("int32", 1000, 1, 2), "tile 7")


def test_pipeline(t):
    d = data_of(50000)
    steps = [amp.TransformStep("add", 3), amp.HistogramStep(), amp.ReverseStep(),
             amp.HistogramStep()]
    r = t.c.pipeline(steps, d)
    added = ref_transform(d, "add", 3)
    expect(r.data == added[::-1], "the last data step's output")
    expect([h.counts for h in r.histograms] == [ref_byte_hist(added)] * 2, "both histograms")
    r = t.c.pipeline([amp.FillStep("int32", 1000, 0, 1), amp.ReverseStep()])
    expect(r.data == ref_fill("int32", 1000, 0, 1)[::-1], "fill then reverse")
    r = t.c.pipeline([amp.HistogramStep()], d)
    expect(r.data is None and r.histograms[0].counts == ref_byte_hist(d), "histogram only")


def test_started_calls(t):
    ins = [data_of(100 + i, i) for i in range(IN_FLIGHT)]
    calls = [t.c.start([amp.ReverseStep()], d) for d in ins]
    for d, call in zip(ins, calls):
        expect(call.result(TIMEOUT_S).data == d[::-1], "started call's result")
    expect(calls[0].done() and not calls[0].cancel(), "an ended call cannot be cancelled")


def test_devices_status_health(t):
    devs = t.c.devices()
    expect(devs and devs[0].index == 0 and devs[0].name, "a device: %r" % devs)
    before = t.c.status().jobs_completed
    t.c.reverse(b"count me")
    after = t.c.status()
    expect(after.jobs_completed >= before + 1 and after.version, "Status counts the job")
    expect(t.c.health() == "SERVING", "health SERVING")
    t.c.wait_serving(TIMEOUT_S)


# --- streams -------------------------------------------------------------------------------

def test_large_results_stream_by_themselves(t):
    d = data_of(BIG, 3)
    expect(t.c.reverse(d) == d[::-1], "9 MiB reverse")
    expect(t.c.transform(d, "xor", 0x33) == ref_transform(d, "xor", 0x33), "9 MiB xor")
    n = (BIG // 4) + 3
    got = t.c.fill("int32", n, 5, 1)
    expect(len(got) == n * 4 and got[-4:] == struct.pack("<i", 5 + n - 1) and
           got[:8] == struct.pack("<ii", 5, 6), "a fill larger than 4 MiB")
    expect(t.c.histogram(d).counts == ref_byte_hist(d), "9 MiB histogram")


def test_stream_sources(t):
    d = data_of(BIG + 12345, 4)
    steps = [amp.TransformStep("add", 1), amp.HistogramStep()]
    want = ref_transform(d, "add", 1)
    with tempfile.NamedTemporaryFile() as f:
        f.write(d)
        f.flush()
        sources = {"bytes": d, "path": f.name, "file object": open(f.name, "rb"),
                   "generator": (d[i:i + 333333] for i in range(0, len(d), 333333)),
                   "one big piece": [d]}
        for what, src in sources.items():
            call = t.c.stream(steps, src)
            chunks = list(call)
            expect(b"".join(chunks) == want, "stream from %s" % what)
            expect(all(len(c) <= 4 << 20 for c in chunks), "every chunk within 4 MiB")
            expect(call.histograms[0].counts == ref_byte_hist(want), "histogram from %s" % what)
            expect(call.device != "", "device named")
        sources["file object"].close()
        with tempfile.TemporaryFile() as out:
            r = t.c.stream([amp.ReverseStep()], f.name).write_to(out)
            out.seek(0)
            expect(out.read() == d[::-1] and r.data is None, "stream file to file")


def test_stream_file(t):
    """Client.stream_file: chunk by chunk through two regions on the Unix
    socket (no Stream call), else a Stream call: same bytes and counts."""
    from ampclient import _file_regions
    calls = []
    stream = t.c.stream
    t.c.stream = lambda *a, **k: calls.append(a) or stream(*a, **k)
    chunk, _file_regions.CHUNK_BYTES = _file_regions.CHUNK_BYTES, 1 << 20
    d = data_of((5 << 20) + 4320, 9)   # five chunks and a short sixth
    want = ref_transform(ref_transform(d, "xor", 0x5A), "add", 3)
    steps = [amp.TransformStep("xor", 0x5A), amp.TransformStep("add", 3), amp.HistogramStep()]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            src, dst = os.path.join(tmp, "in"), os.path.join(tmp, "out")
            with open(src, "wb") as f:
                f.write(d)
            r = t.c.stream_file(steps, src, dst)
            with open(dst, "rb") as f:
                expect(f.read() == want, "two transforms, path to path")
            expect(r.data is None and r.histograms[0].counts == ref_byte_hist(want) and r.device,
                   "the chunks' histograms add up: %r" % r)
            with open(src, "rb") as fin, tempfile.TemporaryFile() as fout:
                t.c.stream_file([amp.TransformStep("or", 1)], fin, fout)
                fout.seek(0)
                expect(fout.read() == ref_transform(d, "or", 1), "file objects")
            r = t.c.stream_file([amp.HistogramStep("uint32", 8, 0, 1 << 32)], src)
            expect(sum(r.histograms[0].counts) == len(d) // 4, "uint32 counts: %r" % r)
            expect(not calls, "a Stream call was made: %r" % calls)
            # Through a Stream call: a reverse (not per byte), a sub-range,
            # an empty file, chunks past --max-client-region-bytes.
            t.c.stream_file([amp.ReverseStep()], src, dst)
            with open(dst, "rb") as f:
                expect(f.read() == d[::-1], "reverse")
            t.c.stream_file([amp.TransformStep("add", 1, offset=10, length=100)], src, dst)
            with open(dst, "rb") as f:
                expect(f.read() == ref_transform(d, "add", 1, offset=10, length=100), "a sub-range")
            open(src, "wb").close()
            r = t.c.stream_file([amp.HistogramStep()], src)
            expect(r.histograms[0].counts == [0] * 256, "an empty file: %r" % r)
            expect(len(calls) == 3, "%d Stream calls, want 3" % len(calls))
            with open(src, "wb") as f:
                f.write(d)
            _file_regions.CHUNK_BYTES = MAX_CLIENT_REGION_BYTES
            t.c.stream_file([amp.TransformStep("xor", 1)], src, dst)
            with open(dst, "rb") as f:
                expect(f.read() == ref_transform(d, "xor", 1), "regions too large for the uid")
            expect(len(calls) == 4, "the job the regions were refused for was no Stream call")
    finally:
        _file_regions.CHUNK_BYTES = chunk
        t.c.stream = stream


def failing_source():
    yield b"x" * 1000
    raise OSError(5, "the disk failed")


def test_stream_source_error(t):
    try:
        list(t.c.stream([amp.ReverseStep()], failing_source()))
        raise AssertionError("the stream ended well")
    except OSError as e:
        expect(e.strerror == "the disk failed", "the source's own error: %r" % e)


# --- regions -------------------------------------------------------------------------------

def test_region_every_job(t):
    n = 1 << 20
    d = data_of(n, 5)
    with t.c.region(2 * n, data=d) as r:
        inp, outp = r.slice(0, n), r.slice(n, n)
        s = t.c.reverse(inp, out=outp)
        expect((s.offset, s.length) == (n, n) and s.view == d[::-1], "reverse into a region")
        s = t.c.transform(inp, "xor", 0xA5, out=inp)
        expect(bytes(inp.view) == ref_transform(d, "xor", 0xA5), "transform in place")
        expect(t.c.histogram(outp).counts == ref_byte_hist(d), "histogram of a region")
        s = t.c.fill("int64", 1000, -3, 7, out=r.slice(8, 8000))
        expect(bytes(s.view) == ref_fill("int64", 1000, -3, 7), "fill into a region")
    with t.c.region(3 * n, data=d) as r:
        steps = [amp.TransformStep("add", 1), amp.HistogramStep(), amp.ReverseStep()]
        res = t.c.pipeline(steps, r.slice(0, n), out=r.slice(n, 2 * n))
        added = ref_transform(d, "add", 1)
        expect(bytes(r.view[n:2 * n]) == added and bytes(res.data.view) == added[::-1] and
               res.data.offset == 2 * n, "pipeline outputs one after another")
        expect(res.histograms[0].counts == ref_byte_hist(added), "pipeline histogram")
    d = data_of(BIG, 7)
    with t.c.region(BIG, data=d) as r:
        expect(t.c.reverse(r.slice()) == d[::-1], "a region's 9 MiB input, the output as bytes")


def test_region_zero_copy(t):
    n = 4096
    with t.c.region(n) as r:
        view = r.view
        view[:n] = data_of(n, 6)
        t.c.transform(r.slice(), "add", 1, out=r.slice())
        expect(bytes(view) == ref_transform(data_of(n, 6), "add", 1),
               "a view taken before the job shows its output: the same pages")
        try:
            import numpy
        except ImportError:
            print("skip numpy: not installed")
            return
        a = r.array("uint8")
        a[:] = numpy.arange(n, dtype=numpy.uint8)
        t.c.transform(r.slice(), "xor", 0xFF, out=r.slice())
        expect((a == (numpy.arange(n, dtype=numpy.uint8) ^ 0xFF)).all(), "numpy array in place")
        t.c.fill("float32", n // 4, 1.0, 0.5, out=r.slice())
        f = r.array("float32")
        expect(f.dtype == numpy.float32 and (f == 1.0 + 0.5 * numpy.arange(n // 4)).all(),
               "fill seen as float32 array")
        expect(numpy.shares_memory(r.array("int32"), a), "arrays share the mapping")


# --- bad paths -----------------------------------------------------------------------------

def test_bad_arguments(t):
    expect_error(amp.InvalidArgument, lambda: t.c.transform(b"x", "rot13"), "op", "xor")
    expect_error(amp.InvalidArgument, lambda: t.c.histogram(b"x", "int16"), "type", "int32")
    expect_error(amp.InvalidArgument, lambda: t.c.transform(b"x", "add", 300), "params.value")
    expect_error(amp.InvalidArgument, lambda: t.c.transform(b"x", "map", table=b"short"),
                 "params.table", "256")
    expect_error(amp.InvalidArgument, lambda: t.c.pipeline([]), "steps")
    e = expect_error(amp.InvalidArgument, lambda: t.c.histogram(b"abcd", "int32", 0, 0, 1),
                     "bins")
    expect(isinstance(e, ValueError), "InvalidArgument is a ValueError")


def test_too_large(t):
    expect_error(amp.ResourceExhausted, lambda: t.c.fill("int32", 1 << 40), "device memory")
    expect_error(amp.ResourceExhausted, lambda: t.c.region(MAX_CLIENT_REGION_BYTES + 1),
                 "--max-client-region-bytes")
    with t.c.region(4096) as r:
        expect_error(amp.OutOfRange, lambda: amp.Slice(r, 4000, 100), "outside")
        far = amp.Slice(r, 0, 4096)
        far.offset = 4000  # a slice the client did not check: the daemon's answer
        expect_error(amp.OutOfRange, lambda: t.c.reverse(far))
        expect_error(amp.OutOfRange, lambda: t.c.reverse(b"x" * 5000, out=r.slice()), "output")
    expect_error(amp.NotFound, lambda: _released(t, r), "region")


def _released(t, r):
    """A job on a released region's bytes: the daemon no longer has it."""
    stale = amp.Slice.__new__(amp.Slice)
    stale.region, stale.offset, stale.length = r, 0, 16
    return t.c.reverse(stale)


def blocked_input(gate):
    yield b"first chunk"
    gate.wait(TIMEOUT_S)


def test_deadline_and_cancel(t):
    gate = threading.Event()
    call = t.c.stream([amp.ReverseStep()], blocked_input(gate), timeout=0.5)
    e = expect_error(amp.DeadlineExceeded, lambda: list(call))
    expect(isinstance(e, TimeoutError), "DeadlineExceeded is a TimeoutError")
    gate.set()
    gate = threading.Event()
    call = t.c.stream([amp.ReverseStep()], blocked_input(gate))
    threading.Timer(0.2, call.cancel).start()
    expect_error(amp.Cancelled, lambda: list(call))
    gate.set()
    with amp.Client(t.d.address, timeout=0.5) as c:
        gate = threading.Event()
        expect_error(amp.DeadlineExceeded,
                     lambda: list(c.stream([amp.HistogramStep()], blocked_input(gate))))
        gate.set()


def test_tokens_on_tcp(t):
    with amp.Client(t.tcp, token="wrong-token") as c:
        expect_error(amp.Unauthenticated, lambda: c.reverse(b"abc"), "bearer token")
    with amp.Client(t.tcp) as c:
        expect_error(amp.Unauthenticated, lambda: c.reverse(b"abc"))
    with amp.Client(t.tcp, token=TOKEN) as c:
        expect(c.reverse(b"abc") == b"cba", "token accepted")
        expect_error(amp.InvalidArgument, lambda: c.region(16), "unix:")
    with amp.Client(t.tcp, token_file=t.token_file) as c:
        expect(c.reverse(b"abc") == b"cba", "token from a file")


class T:
    pass


def main():
    t = T()
    tmp = tempfile.mkdtemp(prefix="ampclient-test-")
    t.token_file = os.path.join(tmp, "tokens")
    with open(t.token_file, "w") as f:
        f.write("# the daemon's file serves the client too\npy %s\n" % TOKEN)
    os.chmod(t.token_file, 0o600)
    t.tcp = "127.0.0.1:%d" % free_port()
    t.d = Daemon(["--listen", t.tcp, "--token-file", t.token_file,
                  "--max-client-region-bytes", str(MAX_CLIENT_REGION_BYTES)])
    try:
        t.c = amp.Client(t.d.address, timeout=TIMEOUT_S)
        failed = run_cases(module_cases(globals()), t)
        t.c.close()
    finally:
        status = t.d.stop()
        os.unlink(t.token_file)
        os.rmdir(tmp)
    if status != 0:
        print("FAIL ampd exited %d" % status)
        failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
