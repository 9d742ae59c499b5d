# SPDX-License-Identifier: MIT
"""steps.py: the steps a job is made of, and what a job gives back.

A job is a list of steps on device-resident data (proto/amp.proto): each
step's output bytes are the next step's input, a histogram step passes its
input on, a fill step ignores it. The classes here only hold parameters and
turn them into amp.v1.Step messages; the daemon validates every value (one
place for each limit), and its INVALID_ARGUMENT names the field. What the
client checks itself is only what a message cannot carry: op and type
names (from the proto's enums) and Python types.
"""
import struct

from . import _proto
from .errors import InvalidArgument

# Element types by the proto's names (ElementType), as struct format codes:
# their sizes give a fill's output bytes, and the same codes are numpy
# dtypes (regions.Region.array).
ELEMENT_FORMATS = {"uint8": "<B", "uint32": "<I", "int32": "<i", "float32": "<f", "int64": "<q"}


def element_type(name, field):
    """ElementType number of name ("int32"), InvalidArgument naming field."""
    try:
        return _proto.enum_value("amp.v1.ElementType", "ELEMENT_TYPE_", name, field)
    except ValueError as e:
        raise InvalidArgument(str(e)) from None


def element_bytes(name):
    return struct.calcsize(ELEMENT_FORMATS[name])


class ReverseStep:
    """Reverse the bytes."""

    def to_proto(self):
        step = _proto.Step()
        step.reverse.SetInParent()
        return step

    def output_bytes(self, n):
        return n


class TransformStep:
    """Per byte: op is add, xor, and, or, set (with value 0..255) or map
    (with table, 256 bytes); offset and length limit it to a sub-range."""

    def __init__(self, op, value=0, table=None, offset=0, length=None):
        try:
            self.op = _proto.enum_value("amp.v1.TransformOp", "TRANSFORM_OP_", op, "op")
        except ValueError as e:
            raise InvalidArgument(str(e)) from None
        self.value, self.table, self.offset, self.length = value, table, offset, length

    def to_proto(self):
        step = _proto.Step()
        t = step.transform
        t.op, t.value, t.offset = self.op, self.value, self.offset
        if self.table is not None:
            t.table = bytes(self.table)
        if self.length is not None:
            t.length = self.length
        return step

    def output_bytes(self, n):
        return n


class HistogramStep:
    """256 bins over bytes (type "uint8", the default), or bins uniform bins
    over [lo, hi) of "uint32", "int32" or "float32" elements; clamp counts
    values outside in the first or last bin as well."""

    def __init__(self, type="uint8", bins=0, lo=0.0, hi=0.0, clamp=False):
        self.type = element_type(type, "type")
        self.bins, self.lo, self.hi, self.clamp = bins, lo, hi, clamp

    def to_proto(self):
        step = _proto.Step()
        h = step.histogram
        h.type, h.bins, h.lo, h.hi = self.type, self.bins, self.lo, self.hi
        h.out_of_range = 1 if self.clamp else 0  # OutOfRange: DROP 0, CLAMP 1
        return step

    def output_bytes(self, n):
        return None  # a histogram, not bytes; the input passes on


class FillStep:
    """count elements of type ("int32", "uint32", "int64", "float32"):
    A[k] = start + k*step (wrapping; float32: fma(k, step, start)), in
    work-groups of tile (0: the daemon chooses)."""

    def __init__(self, type, count, start=0, step=1, tile=0):
        self.type_name = type
        self.type = element_type(type, "type")
        self.count, self.start, self.step, self.tile = count, start, step, tile

    def to_proto(self):
        step = _proto.Step()
        f = step.fill
        f.type, f.count, f.tile = self.type, self.count, self.tile
        if self.type_name == "float32":
            f.start_float, f.step_float = self.start, self.step
        else:
            f.start, f.step = self.start, self.step
        return step

    def output_bytes(self, n):
        return self.count * element_bytes(self.type_name)


def data_outputs(steps, n):
    """Bytes each data step outputs for n input bytes, in step order."""
    out = []
    for s in steps:
        got = s.output_bytes(n)
        if got is not None:
            out.append(got)
            n = got
    return out


class Histogram:
    """A histogram step's result: counts per bin (a list of ints), values
    below lo, at or above hi, NaNs; device names where it ran."""

    def __init__(self, msg, device=""):
        self.counts = list(msg.counts)
        self.below, self.above, self.nan = msg.below, msg.above, msg.nan
        self.device = device

    def __repr__(self):
        return "Histogram(bins=%d, total=%d, below=%d, above=%d, nan=%d)" % (
            len(self.counts), sum(self.counts), self.below, self.above, self.nan)


class Result:
    """What a job gave back: data, the output of its last data step (bytes,
    a regions.Slice when it went into a region, None when it has no data
    step); histograms, one Histogram per histogram step in step order;
    device, where it ran."""

    def __init__(self, data=None, histograms=(), device=""):
        self.data, self.histograms, self.device = data, list(histograms), device

    def __repr__(self):
        n = None if self.data is None else len(self.data)
        return "Result(data=%s bytes, histograms=%d, device=%r)" % (n, len(self.histograms),
                                                                  self.device)
