# SPDX-License-Identifier: MIT
"""test_python_client_aio.py: ampclient.aio.Client (asyncio) against a real
ampd, and ampclient over TLS.

Every job kind, 200 calls in flight at once on one client, a stream from
bytes, a file and an async generator (results past gRPC's 4 MiB default,
streamed by the client), regions set up off the event loop, each result
against a computation here; then a job task cancelled while its stream
waits for input (the daemon counts it CANCELLED), a deadline, and a
refused value naming its field. Last, the blocking client over a tls:
listener with the test CA. Ends with ampd exiting 0.
"""
import asyncio
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon  # noqa: E402
from tls_daemon import TlsDaemon  # noqa: E402
from pyclient import (amp, data_of, expect_error, ref_byte_hist, ref_fill,  # noqa: E402
                      ref_transform)

TIMEOUT_S = 120
BIG = 9 << 20  # past gRPC's 4 MiB default receive limit: the client must stream
IN_FLIGHT = 200


async def every_job(c):
    d = data_of(30011, 9)
    expect(await c.reverse(d) == d[::-1], "reverse")
    for op, value in (("add", 7), ("xor", 0x5A), ("and", 0x3C), ("or", 0x42), ("set", 1)):
        expect(await c.transform(d, op, value) == ref_transform(d, op, value), op)
    table = bytes(255 - b for b in range(256))
    expect(await c.transform(d, "map", table=table) == ref_transform(d, "map", table=table),
           "map")
    expect((await c.histogram(d)).counts == ref_byte_hist(d), "histogram")
    expect(await c.fill("int64", 999, -4, 3) == ref_fill("int64", 999, -4, 3), "fill")
    r = await c.pipeline([amp.ReverseStep(), amp.HistogramStep()], d)
    expect(r.data == d[::-1] and r.histograms[0].counts == ref_byte_hist(d), "pipeline")
    expect((await c.health()) == "SERVING" and (await c.devices())[0].name and
           (await c.status()).version, "health, devices, status")


def test_every_job(t):
    t.run(every_job)


async def many_in_flight(c):
    ins = [data_of(64 + i, i) for i in range(IN_FLIGHT)]
    outs = await asyncio.gather(*(c.reverse(d) for d in ins))
    expect(outs == [d[::-1] for d in ins], "%d calls at once" % IN_FLIGHT)


def test_many_in_flight(t):
    t.run(many_in_flight)


async def agen(d, piece):
    for i in range(0, len(d), piece):
        await asyncio.sleep(0)
        yield d[i:i + piece]


async def streams(c):
    d = data_of(BIG + 7, 10)
    expect(await c.reverse(d) == d[::-1], "9 MiB reverse streams by itself")
    steps = [amp.TransformStep("xor", 0x11), amp.HistogramStep()]
    want = ref_transform(d, "xor", 0x11)
    with tempfile.NamedTemporaryFile() as f:
        f.write(d)
        f.flush()
        for what, src in (("bytes", d), ("path", f.name), ("async generator", agen(d, 500000))):
            call = c.stream(steps, src)
            chunks = [chunk async for chunk in call]
            expect(b"".join(chunks) == want, "stream from %s" % what)
            expect(call.histograms[0].counts == ref_byte_hist(want), "histogram, %s" % what)


def test_streams(t):
    t.run(streams)


async def failing_source():
    yield b"x" * 1000
    raise OSError(5, "the disk failed")


async def source_error(c):
    try:
        await c.stream([amp.ReverseStep()], failing_source()).result()
        raise AssertionError("the stream ended well")
    except OSError as e:
        expect(e.strerror == "the disk failed", "the source's own error: %r" % e)


def test_stream_source_error(t):
    t.run(source_error)


async def regions(c):
    n = 1 << 16
    d = data_of(n, 11)
    r = await c.region(n, data=d)
    with r:
        s = await c.transform(r.slice(), "add", 2, out=r.slice())
        expect(bytes(s.view) == ref_transform(d, "add", 2), "transform in place")
        expect((await c.histogram(r.slice())).counts == ref_byte_hist(s.view.tobytes()),
               "histogram of a region")


def test_regions(t):
    t.run(regions)


async def never_ending(gate):
    yield b"some input"
    await gate.wait()


async def cancel_and_deadline(c):
    before = {s.code: s.calls for s in (await c.status()).calls_by_status}
    gate = asyncio.Event()
    task = asyncio.ensure_future(c.stream([amp.ReverseStep()], never_ending(gate)).result())
    await asyncio.sleep(0.2)
    task.cancel()
    try:
        await task
        raise AssertionError("the cancelled task returned")
    except asyncio.CancelledError:
        pass
    for _ in range(100):  # the daemon learns of it from the stream's reset
        after = {s.code: s.calls for s in (await c.status()).calls_by_status}
        if after.get("CANCELLED", 0) > before.get("CANCELLED", 0):
            break
        await asyncio.sleep(0.05)
    expect(after.get("CANCELLED", 0) == before.get("CANCELLED", 0) + 1,
           "the daemon counted the call CANCELLED: %r" % after)
    try:
        await c.stream([amp.ReverseStep()], never_ending(gate), timeout=0.3).result()
        raise AssertionError("no deadline")
    except amp.DeadlineExceeded:
        pass
    try:
        await c.transform(b"x", "or", 256)
        raise AssertionError("no error")
    except amp.InvalidArgument as e:
        expect("params.value" in e.message, e.message)
    gate.set()


def test_cancel_and_deadline(t):
    t.run(cancel_and_deadline)


def test_tls(t):
    td = TlsDaemon()
    try:
        with amp.Client("tls:localhost:%d" % td.port, tls_ca=td.file("ca.pem")) as c:
            expect(c.reverse(b"over TLS") == b"SLT revo", "reverse over TLS")
            d = data_of(BIG, 12)
            expect(c.transform(d, "add", 9) == ref_transform(d, "add", 9), "9 MiB over TLS")
        with amp.Client("tls:localhost:%d" % td.port) as c:  # the system's CAs: refused
            expect_error(amp.Unavailable, lambda: c.reverse(b"x", timeout=TIMEOUT_S))
        expect_error(amp.InvalidArgument,
                     lambda: amp.Client("tls:localhost:1", tls_ca="/nonexistent"),
                     "tls_ca", "/nonexistent")
    finally:
        expect(td.stop() == 0, "the TLS ampd exited 0")


class T:
    def run(self, coro_fn):
        async def body():
            async with amp.aio.Client(self.d.address, timeout=TIMEOUT_S) as c:
                await coro_fn(c)
        asyncio.run(body())


def main():
    t = T()
    t.d = Daemon()
    try:
        failed = run_cases(module_cases(globals()), t)
    finally:
        status = t.d.stop()
    if status != 0:
        print("FAIL ampd exited %d" % status)
        failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
