#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""capture_grpcio.py: calls ampctl does not make, for capture_corpus.sh:
python3-grpcio through tests/test_reflection.py's helpers, on one channel.

    capture_grpcio.py ADDRESS reflection|watch
"""
import os
import sys

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import test_reflection as t  # noqa: E402


def main(address, what):
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
