# SPDX-License-Identifier: MIT
"""client.py: the blocking client, one gRPC channel to one ampd.

Every job method blocks until the job's result is back and raises an
AmpError subclass for any status but OK; start() returns a Call to wait on
or cancel instead. stream() yields the output as it arrives. The client
is safe to share between threads (gRPC's channel is, and the region socket
takes one request at a time).
"""
import grpc

from . import _file_regions, _jobs, _proto
from ._channel import CHANNEL_OPTIONS, Target
from .errors import error, from_rpc_error
from .regions import Region, RegionSocket, region_socket_path
from .steps import FillStep, HistogramStep, ReverseStep, TransformStep


def _health_status(reply):
    return _proto.HealthCheckResponse.DESCRIPTOR.enum_types_by_name["ServingStatus"] \
        .values_by_number[reply.status].name


class Call:
    """A started unary job: result() waits for its Result, cancel() stops
    it (the call then ends CANCELLED)."""

    def __init__(self, future, decode):
        self._future, self._decode = future, decode

    def result(self, timeout=None):
        """The job's Result; waits up to timeout seconds (None: until it
        ends), DeadlineExceeded when it has not ended by then."""
        try:
            return self._decode(self._future.result(timeout=timeout))
        except grpc.FutureTimeoutError:
            raise error(grpc.StatusCode.DEADLINE_EXCEEDED, "no result within %s s (the call goes "
                        "on; cancel() stops it)" % timeout) from None
        except grpc.FutureCancelledError:
            raise error(grpc.StatusCode.CANCELLED, "the call was cancelled") from None
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None

    def cancel(self):
        """Cancels the call; False when it had ended already."""
        return self._future.cancel()

    def done(self):
        return self._future.done()


class StreamCall:
    """A Stream job in progress: iterating yields the output (the last data
    step's bytes) chunk by chunk as the daemon sends them; afterwards
    histograms holds the histogram steps' results and device where it ran.
    cancel() stops it."""

    def __init__(self, responses, requests):
        self._responses, self._requests = responses, requests
        self._state = _jobs.StreamState()

    def __iter__(self):
        try:
            for reply in self._responses:
                chunk = self._state.take(reply)
                if chunk:
                    yield chunk
        except grpc.RpcError as e:
            if self._requests.error is not None:
                raise self._requests.error
            raise from_rpc_error(e) from None

    @property
    def histograms(self):
        return self._state.histograms

    @property
    def device(self):
        return self._state.device

    def result(self):
        """Runs the stream to its end: a Result with the output joined."""
        data = b"".join(self)
        return _jobs.Result(data, self.histograms, self.device)

    def write_to(self, file):
        """Runs the stream to its end, writing the output to file (a binary
        file object); a Result without data."""
        for chunk in self:
            file.write(chunk)
        return _jobs.Result(None, self.histograms, self.device)

    def cancel(self):
        self._responses.cancel()


class _Unopened:
    """A file object the caller opened: used as is, left open."""

    def __init__(self, f):
        self.f = f

    def __enter__(self):
        return self.f

    def __exit__(self, *exc):
        return False


def _opened(file, mode):
    """A context giving a binary file object for a path (opened here and
    closed after), a file object (as is) or None."""
    if file is None or hasattr(file, "read" if "r" in mode else "write"):
        return _Unopened(file)
    return open(file, mode)


def _drained(call):
    """Runs a StreamCall to its end, dropping its data: its Result."""
    for _ in call:
        pass
    return _jobs.Result(None, call.histograms, call.device)


class Client:
    """A connection to ampd.

    address: unix:PATH, HOST:PORT or tls:HOST:PORT (default $AMP_ADDRESS,
    else unix:/run/ampd/ampd.sock); token or token_file (default
    $AMP_TOKEN_FILE): the bearer token TCP listeners require; tls_ca,
    tls_cert, tls_key: PEM files for a tls: address (default: the system's
    CAs, no client certificate), or credentials, a grpc.ChannelCredentials;
    timeout: each call's deadline in seconds (None: none), which a method's
    own timeout= overrides; priority and max_queue_time: ampd's
    amp-priority and amp-max-queue-time metadata for every call; metadata:
    more (key, value) pairs. device= on a job is ampd's placement: "" (the
    daemon chooses), "gpu", "cpu" or a ListDevices index as a string.
    """

    def __init__(self, address=None, *, token=None, token_file=None, tls_ca=None, tls_cert=None,
                 tls_key=None, credentials=None, timeout=None, priority=None, max_queue_time=None,
                 metadata=(), options=()):
        self._target = Target(address, token, token_file, tls_ca, tls_cert, tls_key, credentials,
                              priority, max_queue_time, metadata)
        self.address = self._target.address
        self.timeout = timeout
        opts = CHANNEL_OPTIONS + list(options)
        if self._target.credentials is not None:
            self._channel = grpc.secure_channel(self._target.target, self._target.credentials, opts)
        else:
            self._channel = grpc.insecure_channel(self._target.target, opts)
        self._rsock = None
        self._callables = {}

    # --- plumbing -------------------------------------------------------------------------

    def _unary(self, method, reply_class):
        key = (method, reply_class)
        fn = self._callables.get(key)
        if fn is None:
            fn = self._channel.unary_unary(method, request_serializer=_jobs.serialize,
                                           response_deserializer=reply_class.FromString)
            self._callables[key] = fn
        return fn

    def _kw(self, timeout, priority):
        return {"timeout": self.timeout if timeout is None else timeout,
                "metadata": self._target.call_metadata(priority)}

    def _call(self, method, request, reply_class, timeout, priority):
        try:
            return self._unary(method, reply_class)(request, **self._kw(timeout, priority))
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None

    def _job(self, steps, data, out, device, timeout, priority, one_step):
        steps = _jobs.check_steps(steps)
        if not _jobs.fits_unary(steps, data, out):
            source = data.view if isinstance(data, _jobs.Slice) else data
            return self.stream(steps, source, device=device, timeout=timeout,
                               priority=priority).result()
        u = _jobs.Unary(steps, data, out, device, one_step)
        return u.decode(self._call(u.method, u.request, u.reply_class, timeout, priority))

    # --- jobs -----------------------------------------------------------------------------

    def reverse(self, data, *, out=None, device="", timeout=None, priority=None):
        """data reversed: bytes, or a Slice of out (a region Slice) holding
        it. data: bytes-like, or a Slice of a region."""
        return self._job([ReverseStep()], data, out, device, timeout, priority, True).data

    def transform(self, data, op, value=0, *, table=None, offset=0, length=None, out=None,
                  device="", timeout=None, priority=None):
        """data with op applied per byte (add, xor, and, or, set with value;
        map with table, 256 bytes), within [offset, offset + length)."""
        step = TransformStep(op, value, table, offset, length)
        return self._job([step], data, out, device, timeout, priority, True).data

    def histogram(self, data, type="uint8", bins=0, lo=0.0, hi=0.0, *, clamp=False, device="",
                  timeout=None, priority=None):
        """A Histogram of data: 256 bins of bytes, or bins uniform bins over
        [lo, hi) of uint32, int32 or float32 elements."""
        step = HistogramStep(type, bins, lo, hi, clamp)
        return self._job([step], data, None, device, timeout, priority, True).histograms[0]

    def fill(self, type, count, start=0, step=1, *, tile=0, out=None, device="", timeout=None,
             priority=None):
        """count elements A[k] = start + k*step of type (int32, uint32,
        int64, float32), little-endian bytes (or a Slice of out)."""
        steps = [FillStep(type, count, start, step, tile)]
        return self._job(steps, None, out, device, timeout, priority, True).data

    def pipeline(self, steps, data=None, *, out=None, device="", timeout=None, priority=None):
        """Steps as one job on the device: a Result with the last data
        step's output (with out, every data step's output goes into it,
        one after another) and every histogram step's Histogram."""
        return self._job(steps, data, out, device, timeout, priority, False)

    def start(self, steps, data=None, *, out=None, device="", timeout=None, priority=None):
        """Starts a job (one unary call) without waiting: a Call."""
        steps = _jobs.check_steps(steps)
        u = _jobs.Unary(steps, data, out, device, True)
        future = self._unary(u.method, u.reply_class).future(u.request,
                                                             **self._kw(timeout, priority))
        return Call(future, u.decode)

    def stream(self, steps, source=None, *, total_length=None, device="", timeout=None,
               priority=None):
        """A StreamCall running steps over source: bytes-like data, a path,
        a binary file object or an iterable of bytes-like chunks, sent in
        chunks as the daemon takes them. total_length: the input's bytes
        (default: known for data, paths and regular files, else 0)."""
        steps = _jobs.check_steps(steps)
        fn = self._channel.stream_stream(_proto.SERVICE + "Stream",
                                         response_deserializer=_proto.StreamReply.FromString)
        requests = _jobs.SourceError(_jobs.stream_requests(steps, source, device, total_length))
        return StreamCall(fn(iter(requests), **self._kw(timeout, priority)), requests)

    def stream_file(self, steps, src, dst=None, *, device="", timeout=None, priority=None):
        """Runs steps over the file src (a path or binary file object) and
        writes the last data step's output to dst (a path or binary file
        object; None when every step is a histogram): a Result with the
        histograms and no data.

        On a unix: address, per-byte steps (transforms over the whole
        input, histograms) go chunk by chunk through two shared-memory
        regions, a job per 16 MiB, which grpcio's Stream call cannot
        match (_file_regions.py); anything else is stream(...).write_to().
        timeout then bounds each chunk's job."""
        steps = _jobs.check_steps(steps)
        with _opened(src, "rb") as fin, _opened(dst, "wb") as fout:
            if self.address.startswith("unix:") and _file_regions.chunk_local(steps):
                kw = {"device": device, "timeout": timeout, "priority": priority}
                result = _file_regions.run(self, steps, fin, fout, kw)
                if result is not None:
                    return result
            call = self.stream(steps, fin, device=device, timeout=timeout, priority=priority)
            return call.write_to(fout) if fout is not None else _drained(call)

    # --- regions --------------------------------------------------------------------------

    def region(self, size, *, data=None, file=None, populate=False):
        """A Region of size bytes shared with the daemon (a unix: address
        only), data or the start of file (a path or binary file object)
        copied in first. populate: commit all its memory now, much faster
        than page by page as it is first written (by either side)."""
        if self._rsock is None:
            self._rsock = RegionSocket(region_socket_path(self.address))
        return Region(self._rsock, size, data, file, populate)

    # --- the daemon -----------------------------------------------------------------------

    def devices(self, *, timeout=None):
        """ListDevices: a list of amp.v1.Device messages."""
        return list(self._call(_proto.SERVICE + "ListDevices", _proto.ListDevicesRequest(),
                               _proto.ListDevicesReply, timeout, None).devices)

    def status(self, *, timeout=None):
        """Status: an amp.v1.StatusReply message."""
        return self._call(_proto.SERVICE + "Status", _proto.StatusRequest(), _proto.StatusReply,
                          timeout, None)

    def health(self, service="", *, timeout=None):
        """grpc.health.v1 Check: "SERVING", "NOT_SERVING", ..."""
        reply = self._call(_proto.HEALTH_SERVICE + "Check",
                           _proto.HealthCheckRequest(service=service),
                           _proto.HealthCheckResponse, timeout, None)
        return _health_status(reply)

    def wait_serving(self, timeout=None, service=""):
        """Watches health until SERVING (ampd opens its devices after it
        starts listening); DeadlineExceeded after timeout seconds."""
        fn = self._channel.unary_stream(_proto.HEALTH_SERVICE + "Watch",
                                        request_serializer=_jobs.serialize,
                                        response_deserializer=_proto.HealthCheckResponse.FromString)
        replies = fn(_proto.HealthCheckRequest(service=service), wait_for_ready=True,
                     **self._kw(timeout, None))
        try:
            for reply in replies:
                if _health_status(reply) == "SERVING":
                    replies.cancel()
                    return
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None
        raise error(grpc.StatusCode.UNAVAILABLE, "health Watch ended before SERVING")

    def close(self):
        """Closes the channel and the region socket (releasing the regions)."""
        if self._rsock is not None:
            self._rsock.close()
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
