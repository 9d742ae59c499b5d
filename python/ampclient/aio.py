# SPDX-License-Identifier: MIT
"""aio.py: the asyncio client (grpc.aio), the blocking client's twin.

Every job method is a coroutine with the blocking client's arguments and
results; stream() returns an async iterator of output chunks. Cancel a job
by cancelling its task (the call ends CANCELLED in the daemon); timeout=
is its deadline. Jobs, streams and regions are built by the same code as
the blocking client's (_jobs.py, regions.py); a region's set-up (copying
data in, REGISTER) runs in a worker thread, off the event loop.
"""
import asyncio

import grpc
import grpc.aio

from . import _jobs, _proto
from ._channel import CHANNEL_OPTIONS, Target
from .client import _health_status
from .errors import error, from_rpc_error
from .regions import Region, RegionSocket, region_socket_path
from .steps import FillStep, HistogramStep, ReverseStep, TransformStep


class StreamCall:
    """A Stream job in progress: `async for chunk in call` yields the
    output as it arrives; afterwards histograms and device are set."""

    def __init__(self, call, requests):
        self._call, self._requests = call, requests
        self._state = _jobs.StreamState()

    async def __aiter__(self):
        try:
            async for reply in self._call:
                chunk = self._state.take(reply)
                if chunk:
                    yield chunk
        except grpc.RpcError as e:
            if self._requests.error is not None:
                raise self._requests.error
            raise from_rpc_error(e) from None
        except asyncio.CancelledError:
            if self._requests.error is None:
                raise
            raise self._requests.error

    @property
    def histograms(self):
        return self._state.histograms

    @property
    def device(self):
        return self._state.device

    async def result(self):
        """Runs the stream to its end: a Result with the output joined."""
        data = b"".join([chunk async for chunk in self])
        return _jobs.Result(data, self.histograms, self.device)

    async def write_to(self, file):
        """Runs the stream to its end, writing the output to file."""
        async for chunk in self:
            file.write(chunk)
        return _jobs.Result(None, self.histograms, self.device)

    def cancel(self):
        return self._call.cancel()


class Client:
    """ampclient.Client's arguments, on an asyncio event loop; use it as
    `async with ampclient.aio.Client(...) as c:` or await close()."""

    def __init__(self, address=None, *, token=None, token_file=None, tls_ca=None, tls_cert=None,
                 tls_key=None, credentials=None, timeout=None, priority=None, max_queue_time=None,
                 metadata=(), options=()):
        self._target = Target(address, token, token_file, tls_ca, tls_cert, tls_key, credentials,
                              priority, max_queue_time, metadata)
        self.address = self._target.address
        self.timeout = timeout
        opts = CHANNEL_OPTIONS + list(options)
        if self._target.credentials is not None:
            self._channel = grpc.aio.secure_channel(self._target.target, self._target.credentials,
                                                    opts)
        else:
            self._channel = grpc.aio.insecure_channel(self._target.target, opts)
        self._rsock = None

    def _kw(self, timeout, priority):
        return {"timeout": self.timeout if timeout is None else timeout,
                "metadata": self._target.call_metadata(priority)}

    async def _call(self, method, request, reply_class, timeout, priority):
        fn = self._channel.unary_unary(method, request_serializer=_jobs.serialize,
                                       response_deserializer=reply_class.FromString)
        try:
            return await fn(request, **self._kw(timeout, priority))
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None

    async def _job(self, steps, data, out, device, timeout, priority, one_step):
        steps = _jobs.check_steps(steps)
        if not _jobs.fits_unary(steps, data, out):
            source = data.view if isinstance(data, _jobs.Slice) else data
            return await self.stream(steps, source, device=device, timeout=timeout,
                                     priority=priority).result()
        u = _jobs.Unary(steps, data, out, device, one_step)
        return u.decode(await self._call(u.method, u.request, u.reply_class, timeout, priority))

    async def reverse(self, data, *, out=None, device="", timeout=None, priority=None):
        return (await self._job([ReverseStep()], data, out, device, timeout, priority, True)).data

    async def transform(self, data, op, value=0, *, table=None, offset=0, length=None, out=None,
                        device="", timeout=None, priority=None):
        step = TransformStep(op, value, table, offset, length)
        return (await self._job([step], data, out, device, timeout, priority, True)).data

    async def histogram(self, data, type="uint8", bins=0, lo=0.0, hi=0.0, *, clamp=False,
                        device="", timeout=None, priority=None):
        step = HistogramStep(type, bins, lo, hi, clamp)
        return (await self._job([step], data, None, device, timeout, priority,
                                True)).histograms[0]

    async def fill(self, type, count, start=0, step=1, *, tile=0, out=None, device="",
                   timeout=None, priority=None):
        steps = [FillStep(type, count, start, step, tile)]
        return (await self._job(steps, None, out, device, timeout, priority, True)).data

    async def pipeline(self, steps, data=None, *, out=None, device="", timeout=None,
                       priority=None):
        return await self._job(steps, data, out, device, timeout, priority, False)

    def stream(self, steps, source=None, *, total_length=None, device="", timeout=None,
               priority=None):
        """A StreamCall (async iterable) running steps over source, as
        ampclient.Client.stream; an iterable source may be an async one."""
        steps = _jobs.check_steps(steps)
        fn = self._channel.stream_stream(_proto.SERVICE + "Stream",
                                         response_deserializer=_proto.StreamReply.FromString)
        if hasattr(source, "__aiter__"):
            requests = _jobs.SourceError(_async_requests(steps, source, device, total_length))
            it = requests.__aiter__()
        else:
            requests = _jobs.SourceError(_jobs.stream_requests(steps, source, device, total_length))
            it = iter(requests)
        return StreamCall(fn(it, **self._kw(timeout, priority)), requests)

    async def region(self, size, *, data=None, file=None, populate=False):
        """A Region (ampclient.Client.region), set up in a worker thread."""
        if self._rsock is None:
            self._rsock = RegionSocket(region_socket_path(self.address))
        return await asyncio.to_thread(Region, self._rsock, size, data, file, populate)

    async def devices(self, *, timeout=None):
        return list((await self._call(_proto.SERVICE + "ListDevices", _proto.ListDevicesRequest(),
                                      _proto.ListDevicesReply, timeout, None)).devices)

    async def status(self, *, timeout=None):
        return await self._call(_proto.SERVICE + "Status", _proto.StatusRequest(),
                                _proto.StatusReply, timeout, None)

    async def health(self, service="", *, timeout=None):
        reply = await self._call(_proto.HEALTH_SERVICE + "Check",
                                 _proto.HealthCheckRequest(service=service),
                                 _proto.HealthCheckResponse, timeout, None)
        return _health_status(reply)

    async def wait_serving(self, timeout=None, service=""):
        fn = self._channel.unary_stream(_proto.HEALTH_SERVICE + "Watch",
                                        request_serializer=_jobs.serialize,
                                        response_deserializer=_proto.HealthCheckResponse.FromString)
        call = fn(_proto.HealthCheckRequest(service=service), wait_for_ready=True,
                  **self._kw(timeout, None))
        try:
            async for reply in call:
                if _health_status(reply) == "SERVING":
                    call.cancel()
                    return
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None
        raise error(grpc.StatusCode.UNAVAILABLE, "health Watch ended before SERVING")

    async def close(self):
        if self._rsock is not None:
            self._rsock.close()
        await self._channel.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()


async def _async_requests(steps, source, device, total_length):
    yield _jobs.serialize(_jobs.stream_header(steps, device, total_length or 0))
    async for piece in source:
        for chunk in _jobs.source_chunks([piece]):
            yield _jobs.data_request(chunk)
