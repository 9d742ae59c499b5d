# SPDX-License-Identifier: MIT
"""ampclient: Python client of ampd, the GPU job service.

    import ampclient
    with ampclient.Client("unix:/run/ampd/ampd.sock") as c:
        c.reverse(b"stressed")                        # b"desserts"
        c.transform(data, "xor", 0x5a)
        c.histogram(data).counts                      # 256 counts
        for chunk in c.stream([ampclient.ReverseStep()], "big.bin"): ...
        with c.region(n, data=data) as r:             # shared memory, no copies
            c.transform(r.slice(), "add", 1, out=r.slice())
            r.array("uint8")                          # numpy, on the same pages

ampclient.aio.Client is the same with asyncio. python/README.md has more.
"""
from .client import Call, Client, StreamCall
from .errors import (Aborted, AlreadyExists, AmpError, Cancelled, DataLoss, DeadlineExceeded,
                     FailedPrecondition, Internal, InvalidArgument, NotFound, OutOfRange,
                     PermissionDenied, ResourceExhausted, Unauthenticated, Unavailable,
                     Unimplemented, Unknown)
from .regions import Region, Slice
from .steps import FillStep, Histogram, HistogramStep, Result, ReverseStep, TransformStep

__all__ = ["Client", "Call", "StreamCall", "Region", "Slice", "ReverseStep", "TransformStep",
           "HistogramStep", "FillStep", "Histogram", "Result", "AmpError", "Cancelled",
           "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists",
           "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted",
           "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss",
           "Unauthenticated"]
