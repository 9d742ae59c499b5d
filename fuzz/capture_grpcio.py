#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""capture_grpcio.py: calls ampctl does not make, for capture_corpus.sh:
python3-grpcio through tests/test_reflection.py's helpers, on one channel.

    capture_grpcio.py ADDRESS reflection|watch|gzip|deflate

gzip and deflate: a Reverse and a Histogram (whose reply comes back
compressed) with every request message compressed, for h2_inflate.c and
h2_deflate.c.
"""
import os
import sys

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import test_reflection as t  # noqa: E402


COMPRESSIONS = {"gzip": grpc.Compression.Gzip, "deflate": grpc.Compression.Deflate}


def compressed_calls(channel):
    data = bytes(range(256)) * 12   # compressible, a few KiB
    call = channel.unary_unary("/amp.v1.Amp/Reverse")
    call(b"\x0a" + bytes([len(data) & 0x7F | 0x80, len(data) >> 7]) + data, timeout=10)
    hist = channel.unary_unary("/amp.v1.Amp/Histogram")
    hist(b"\x0a" + bytes([len(data) & 0x7F | 0x80, len(data) >> 7]) + data, timeout=10)


def main(address, what):
    if what in COMPRESSIONS:
        with grpc.insecure_channel(address, compression=COMPRESSIONS[what]) as channel:
            compressed_calls(channel)
        return
    t.Ctx.channel = grpc.insecure_channel(address)
    if what == "reflection":
        t.reflect([{"list_services": ""}, {"file_containing_symbol": "amp.v1.Amp"},
                   {"file_by_filename": "grpc/health/v1/health.proto"},
                   {"file_containing_symbol": "amp.v1.NoSuch"},
                   {"all_extension_numbers_of_type": "amp.v1.ReverseRequest"}], "v1alpha")
    else:
        w = t.watch(t.Ctx.channel)
        next(w)
        w.cancel()
    t.Ctx.channel.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
