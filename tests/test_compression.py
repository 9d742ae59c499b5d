#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_compression.py: stock grpcio with message compression on (issue 38,
item 1): a client that compresses every request message (gzip or deflate,
as grpc-js does once compression is on) gets every job kind and a stream
answered right, each result against a computation here. Both through raw
grpcio stubs with compression=grpc.Compression.Gzip / Deflate, and through
ampclient with grpc.default_compression_algorithm. ampd's bad paths (bad
gzip, a bomb, an unknown grpc-encoding) are test_hostile_compression.c's.
Ends with ampd exiting 0 (no leak under ASan)."""
import os
import sys

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon  # noqa: E402
from pyclient import amp, data_of, ref_byte_hist, ref_fill, ref_transform  # noqa: E402

from ampclient import _proto  # noqa: E402 - the message classes, for raw stubs

TIMEOUT_S = 120
COMPRESSIONS = {"gzip": grpc.Compression.Gzip, "deflate": grpc.Compression.Deflate}
# grpc_compression_algorithm in grpc core: what the channel option takes.
ALGORITHMS = {"deflate": 1, "gzip": 2}
SIZES = (0, 1, 1000, 100003, 3 << 20)   # 3 MiB: several DATA frames, under 4 MiB
STREAM_LEN = 5 << 20
CHUNK = 256 << 10


class T:
    d = None


def test_raw_unary_reverse():
    for name, comp in COMPRESSIONS.items():
        with grpc.insecure_channel(T.d.address, compression=comp) as ch:
            fn = ch.unary_unary(_proto.SERVICE + "Reverse",
                                request_serializer=lambda m: m.SerializeToString(),
                                response_deserializer=_proto.DataReply.FromString)
            for n in SIZES:
                d = data_of(n, n + 1)
                r = fn(_proto.ReverseRequest(data=d), timeout=TIMEOUT_S)
                expect(r.data == d[::-1], "%s reverse of %d bytes" % (name, n))


def test_raw_stream():
    d = data_of(STREAM_LEN, 7)
    want = ref_transform(d, "xor", 0x5A)
    for name, comp in COMPRESSIONS.items():
        with grpc.insecure_channel(T.d.address, compression=comp) as ch:
            fn = ch.stream_stream(_proto.SERVICE + "Stream",
                                  request_serializer=lambda m: m.SerializeToString(),
                                  response_deserializer=_proto.StreamReply.FromString)
            header = _proto.StreamRequest(header=_proto.JobHeader(total_length=len(d)))
            header.header.steps.add().CopyFrom(amp.TransformStep("xor", 0x5A).to_proto())
            reqs = [header] + [_proto.StreamRequest(data=d[i:i + CHUNK])
                               for i in range(0, len(d), CHUNK)]
            out = b"".join(r.data for r in fn(iter(reqs), timeout=TIMEOUT_S))
            expect(out == want, "%s stream of %d bytes" % (name, len(d)))


def client_cases(c, name):
    d = data_of(200003, 3)
    expect(c.reverse(d) == d[::-1], "%s reverse" % name)
    expect(c.transform(d, "add", 9) == ref_transform(d, "add", 9), "%s transform" % name)
    expect(c.histogram(d).counts == ref_byte_hist(d), "%s histogram" % name)
    expect(c.fill("int32", 5000, 3, 2) == ref_fill("int32", 5000, 3, 2), "%s fill" % name)
    r = c.pipeline([amp.TransformStep("xor", 1), amp.HistogramStep(), amp.ReverseStep()], d)
    x = ref_transform(d, "xor", 1)
    expect(r.data == x[::-1] and r.histograms[0].counts == ref_byte_hist(x),
           "%s pipeline" % name)
    s = data_of(STREAM_LEN, 9)
    call = c.stream([amp.TransformStep("or", 0x80), amp.HistogramStep()],
                    (s[i:i + CHUNK] for i in range(0, len(s), CHUNK)))
    got = b"".join(call)
    want = ref_transform(s, "or", 0x80)
    expect(got == want and call.histograms[0].counts == ref_byte_hist(want),
           "%s stream" % name)


def test_ampclient_every_job_kind():
    for name, alg in ALGORITHMS.items():
        c = amp.Client(T.d.address, timeout=TIMEOUT_S,
                       options=[("grpc.default_compression_algorithm", alg)])
        try:
            client_cases(c, name)
        finally:
            c.close()


def main():
    T.d = Daemon()
    try:
        failed = run_cases(module_cases(globals()))
    finally:
        status = T.d.stop()
    if status != 0:
        print("FAIL ampd exited with status %d" % status)
        failed += 1
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
