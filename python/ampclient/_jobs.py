# SPDX-License-Identifier: MIT
"""_jobs.py: jobs as requests and replies, shared by the blocking client
(client.py) and the asyncio one (aio.py), which only differ in how they
make the call.

A job goes as one unary call while its input and its reply fit in gRPC's
default 4 MiB receive limit, and as a Stream call otherwise: the daemon
answers a Stream in chunks that each fit, so a result of any size reaches
a client with stock limits, whatever the daemon's unary-reply rules.
A job on regions is always unary: its reply says where the output went.
"""
import io
import os
import stat

from . import _proto
from .errors import InvalidArgument
from .regions import Slice
from .steps import (FillStep, Histogram, HistogramStep, Result, ReverseStep, TransformStep,
                    data_outputs)

# grpcio's default receive limit, set explicitly on the client's channel:
# a unary reply must fit it. REPLY_ROOM is kept for the reply's fields
# beside its data (the device's name, a histogram step's counts).
RECEIVE_LIMIT = 4 << 20
REPLY_ROOM = 64 << 10
UNARY_MAX_BYTES = RECEIVE_LIMIT - REPLY_ROOM
# Input bytes per Stream message: the size ampctl streams in.
CHUNK_BYTES = 1 << 20

# Unary methods of one-step jobs: request class, reply class.
_ONE_STEP = {
    ReverseStep: ("Reverse", _proto.ReverseRequest, _proto.DataReply),
    TransformStep: ("Transform", _proto.TransformRequest, _proto.DataReply),
    HistogramStep: ("Histogram", _proto.HistogramRequest, _proto.HistogramReply),
    FillStep: ("Fill", _proto.FillRequest, _proto.DataReply),
}
_STEP_FIELD = {ReverseStep: None, TransformStep: "params", HistogramStep: "params",
               FillStep: "params"}
_STEP_KIND = {ReverseStep: "reverse", TransformStep: "transform", HistogramStep: "histogram",
              FillStep: "fill"}


def serialize(msg):
    return msg.SerializeToString()


def check_steps(steps):
    steps = list(steps)
    if not steps:
        raise InvalidArgument("steps: a job needs at least one step")
    for s in steps:
        if type(s) not in _ONE_STEP:
            raise InvalidArgument("steps: %r is not a ReverseStep, TransformStep, HistogramStep "
                                  "or FillStep" % (s,))
    return steps


def input_bytes(data):
    """Bytes of a job's input: bytes-like, a Slice or None."""
    if data is None:
        return 0
    if isinstance(data, Slice):
        return data.length
    return memoryview(data).nbytes


def fits_unary(steps, data, out):
    """Whether the job goes as one unary call (else a Stream)."""
    if out is not None:
        return True
    n = input_bytes(data)
    reply = sum(data_outputs(steps, n))
    return (isinstance(data, Slice) or n <= UNARY_MAX_BYTES) and reply <= UNARY_MAX_BYTES


class Unary:
    """One unary call of a job: method path, request message, how to decode
    its reply into a Result, and the classes for grpc's serializers."""

    def __init__(self, steps, data, out, device, one_step):
        steps = check_steps(steps)
        if (isinstance(data, Slice) and out is not None
                and data.region.rsock is not out.region.rsock):
            raise InvalidArgument("input_region and output_region: regions of different clients")
        self.out = out
        if one_step and len(steps) == 1:
            self._one(steps[0], data, out, device)
        else:
            self._pipeline(steps, data, out, device)
        self.method = _proto.SERVICE + self.name

    def _one(self, step, data, out, device):
        self.name, req_class, self.reply_class = _ONE_STEP[type(step)]
        req = req_class(device=device)
        field = _STEP_FIELD[type(step)]
        if field:
            getattr(req, field).CopyFrom(getattr(step.to_proto(), _STEP_KIND[type(step)]))
        self._data(req, data, out, has_input=not isinstance(step, FillStep))
        self.request = req
        self.decode = self._decode_hist if isinstance(step, HistogramStep) else self._decode_data

    def _pipeline(self, steps, data, out, device):
        self.name, self.reply_class = "Pipeline", _proto.PipelineReply
        req = _proto.PipelineRequest(device=device)
        req.steps.extend(s.to_proto() for s in steps)
        self._data(req, data, out, has_input=True)
        self.request = req
        self.decode = self._decode_pipeline

    def _data(self, req, data, out, has_input):
        if isinstance(data, Slice):
            data.to_proto(req.input_region)
        elif data is not None:
            if not has_input:
                raise InvalidArgument("data: a fill job takes no input")
            req.data = data if isinstance(data, bytes) else bytes(data)
        if out is not None:
            if not hasattr(req, "output_region"):
                raise InvalidArgument("out: a histogram's result comes back in the reply")
            out.to_proto(req.output_region)

    def _slice(self, msg):
        return Slice(self.out.region, msg.offset, msg.length)

    def _decode_data(self, reply):
        data = self._slice(reply.output_region) if reply.HasField("output_region") else reply.data
        return Result(data, (), reply.device)

    def _decode_hist(self, reply):
        return Result(None, [Histogram(reply.histogram, reply.device)], reply.device)

    def _decode_pipeline(self, reply):
        data, hists = None, []
        for r in reply.results:
            if r.HasField("histogram"):
                hists.append(Histogram(r.histogram, reply.device))
            elif r.HasField("output_region"):
                data = self._slice(r.output_region)
            else:
                data = r.data
        return Result(data, hists, reply.device)


def stream_header(steps, device, total_length):
    req = _proto.StreamRequest()
    h = req.header
    h.steps.extend(s.to_proto() for s in check_steps(steps))
    h.device, h.total_length = device, total_length or 0
    return req


def source_length(source):
    """Input bytes a stream source will give, when known (0: unknown)."""
    if source is None:
        return 0
    if isinstance(source, (str, os.PathLike)):
        return os.stat(source).st_size
    if isinstance(source, (bytes, bytearray, memoryview)):
        return memoryview(source).nbytes
    if isinstance(source, io.IOBase) or hasattr(source, "fileno"):
        try:
            st = os.fstat(source.fileno())
            if stat.S_ISREG(st.st_mode):
                return st.st_size - source.tell()
        except (OSError, ValueError, io.UnsupportedOperation):
            pass
    return 0


def _chunks_of(buf):
    mv = memoryview(buf).cast("B")
    for i in range(0, mv.nbytes, CHUNK_BYTES):
        yield bytes(mv[i:i + CHUNK_BYTES])


def _chunks_of_file(f):
    while True:
        chunk = f.read(CHUNK_BYTES)
        if not chunk:
            return
        yield chunk


def source_chunks(source):
    """The input of a stream, in chunks of at most CHUNK_BYTES: from bytes-
    like data, a path (str or os.PathLike), a binary file object, or an
    iterable of bytes-like chunks."""
    if source is None:
        return
    if isinstance(source, (bytes, bytearray, memoryview)):
        yield from _chunks_of(source)
    elif isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            yield from _chunks_of_file(f)
    elif hasattr(source, "read"):
        yield from _chunks_of_file(source)
    else:
        for piece in source:
            if isinstance(piece, bytes) and len(piece) <= CHUNK_BYTES:
                yield piece
            else:
                yield from _chunks_of(piece)


def data_request(chunk):
    """A Stream request message carrying an input chunk, serialized."""
    return _proto.StreamRequest(data=chunk).SerializeToString()


def stream_requests(steps, source, device, total_length):
    """The request messages of a Stream call: the header, then the input."""
    if total_length is None:
        total_length = source_length(source)
    yield serialize(stream_header(steps, device, total_length))
    for chunk in source_chunks(source):
        yield data_request(chunk)


class SourceError:
    """A stream's requests, keeping the exception its source raised (a file
    that failed to read, a generator's own error): gRPC only cancels the
    call then, and the StreamCall raises this instead of CANCELLED."""

    def __init__(self, requests):
        self.requests, self.error = requests, None

    def __iter__(self):
        try:
            yield from self.requests
        except Exception as e:
            self.error = e
            raise

    async def __aiter__(self):
        try:
            async for r in self.requests:
                yield r
        except Exception as e:
            self.error = e
            raise


class StreamState:
    """What a Stream's replies said besides the data: histograms, device."""

    def __init__(self):
        self.histograms, self.device = [], ""

    def take(self, reply):
        """Takes one reply; its data chunk, or None."""
        if reply.device:
            self.device = reply.device
        if reply.HasField("result"):
            self.histograms.append(Histogram(reply.result.histogram, reply.device))
            return None
        return reply.data
