# SPDX-License-Identifier: MIT
"""_file_regions.py: Client.stream_file's way on a Unix socket: a file
through two shared-memory regions, one chunk per job.

grpcio moves a Stream call's bytes at 0.1-0.5 GB/s (bench/RESULTS.md,
"Python client"), a fraction of what the daemon and the socket can. A
local client has regions instead: each chunk of the file is read into a
region, one unary job runs on it there, and its output is written out from
the region, with no copy through gRPC. Two regions alternate, so the next
chunk is read, and the last one written, while the daemon works on one.

Only steps whose result does not depend on where the input is cut go this
way: transforms over the whole input (per byte) and histograms (their
counts add up); any other job is a Stream call.
"""
from .errors import ResourceExhausted
from .regions import _read_into
from .steps import HistogramStep, Result, TransformStep

# Bytes per job: large enough that a job's fixed cost (a call, a launch)
# is small beside its copies, small enough that two regions of input and
# output stay a few hundred MiB.
CHUNK_BYTES = 16 << 20
REGIONS = 2


def chunk_local(steps):
    """Whether steps give the same bytes and counts run chunk by chunk."""
    return all(isinstance(s, HistogramStep)
               or (isinstance(s, TransformStep) and s.offset == 0 and s.length is None)
               for s in steps)


def _add(total, part):
    """total + part, histograms of one step."""
    if total is None:
        return part
    total.counts = [a + b for a, b in zip(total.counts, part.counts)]
    total.below += part.below
    total.above += part.above
    total.nan += part.nan
    return total


class _Chunk:
    """One region: input in [0, chunk), each data step's output after it."""

    def __init__(self, client, chunk, ndata):
        self.region = client.region(chunk * (1 + ndata), populate=True)
        self.chunk, self.ndata = chunk, ndata
        self.call = self.n = None

    def start(self, client, steps, fin, kw):
        """Reads the next chunk of fin and starts its job; False at the end."""
        self.n = _read_into(fin, self.region.view[:self.chunk])
        if not self.n:
            return False
        out = self.region.slice(self.chunk, self.n * self.ndata) if self.ndata else None
        self.call = client.start(steps, self.region.slice(0, self.n), out=out, **kw)
        return True

    def finish(self, fout):
        """Waits for the job; writes its output to fout; its Result."""
        call, self.call = self.call, None
        result = call.result()
        if fout is not None and self.ndata:   # the last data step's output is the last
            at = self.chunk + (self.ndata - 1) * self.n
            fout.write(self.region.view[at:at + self.n])
        return result

    def abandon(self):
        if self.call is not None:
            self.call.cancel()
            try:
                self.call.result()
            except Exception:  # noqa: BLE001 - the error that got us here is the one raised
                pass
        self.region.release()


def run(client, steps, fin, fout, kw):
    """steps over the binary file fin, CHUNK_BYTES at a time, the last data
    step's output to fout (None: dropped): a Result with the histograms
    summed and no data. None, with nothing read, when the regions cannot
    be had (--max-client-region-bytes), or when fin was empty: a Stream
    call does the job then."""
    ndata = sum(isinstance(s, TransformStep) for s in steps)
    chunks = []
    hists, device = [None] * sum(isinstance(s, HistogramStep) for s in steps), ""
    try:
        for _ in range(REGIONS):
            try:
                chunks.append(_Chunk(client, CHUNK_BYTES, ndata))
            except ResourceExhausted:
                return None
        turn = 0
        busy = None   # the chunk whose job runs while the next is read
        while True:
            c = chunks[turn % REGIONS]
            turn += 1
            more = c.start(client, steps, fin, kw)
            if busy is not None:
                r = busy.finish(fout)
                hists = [_add(t, p) for t, p in zip(hists, r.histograms)]
                device = device or r.device
            if not more:
                break
            busy = c
        if turn == 1:
            return None
    finally:
        for c in chunks:
            c.abandon()
    # At least one job ran: every histogram is summed, named for its first
    # chunk's device as the Result is.
    return Result(None, hists, device)
