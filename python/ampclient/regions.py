# SPDX-License-Identifier: MIT
"""regions.py: shared-memory regions, by docs/regions.md.

A region is a memfd sealed against shrinking and growing, mapped here and
handed to ampd over its region socket (PATH.regions beside the gRPC socket
PATH) with SCM_RIGHTS; jobs then read their input from it and write their
output into it, and no data byte crosses a socket. Region.view is a
memoryview of the mapping and Region.array() a numpy array on it: the
bytes a job wrote are read where they are, without a copy.

The region socket speaks one line at a time, so RegionSocket holds a lock
around each request and its answer; its connection is the regions' life
(closing it releases every region it registered).
"""
import fcntl
import mmap
import os
import socket
import threading

from .errors import AmpError, InvalidArgument, from_status_name
from .steps import ELEMENT_FORMATS

REGION_SOCKET_SUFFIX = ".regions"
ANSWER_MAX = 4096  # an answer line is short: "OK <id> <size>" or ERROR with a message
SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


# Linux's madvise(2) advice (5.14 and later), which Python's mmap does not
# name: fault in every page of a range, writable, in one call.
MADV_POPULATE_WRITE = 23

def region_socket_path(address):
    """The region socket of a unix: address; InvalidArgument for TCP ones,
    which have no regions."""
    if not address.startswith("unix:"):
        raise InvalidArgument("regions need the daemon's Unix socket (unix:PATH), not %r; over "
                              "TCP, stream the data (Client.stream)" % address)
    path = address[len("unix:"):]
    if path.startswith("//"):  # unix:///abs/path
        path = path[2:]
    return path + REGION_SOCKET_SUFFIX


class RegionSocket:
    """One connection to the daemon's region socket."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            self.sock.connect(path)
        except OSError as e:
            self.sock.close()
            raise from_status_name("UNAVAILABLE", "region socket %s: %s" % (path, e.strerror)) \
                from None

    def ask(self, line, fds=()):
        """Sends line with fds attached; the answer's words after OK, or the
        AmpError its ERROR line names."""
        with self.lock:
            if self.sock is None:
                raise from_status_name("FAILED_PRECONDITION", "the client is closed")
            socket.send_fds(self.sock, [line], list(fds))
            answer = b""
            while not answer.endswith(b"\n"):
                got = self.sock.recv(ANSWER_MAX)
                if not got:
                    raise from_status_name("UNAVAILABLE", "region socket %s closed" % self.path)
                answer += got
        words = answer.decode("utf-8", "replace").rstrip("\n").split(" ", 2)
        if words[0] == "OK":
            return words[1:]
        if words[0] == "ERROR" and len(words) >= 2:
            raise from_status_name(words[1], words[2] if len(words) > 2 else "")
        raise from_status_name("INTERNAL", "region socket: unexpected answer %r" % answer)

    def register(self, fd):
        """REGISTER fd: (id, size)."""
        words = self.ask(b"REGISTER\n", [fd])
        return int(words[0]), int(words[1].split()[0])

    def release(self, region_id):
        self.ask(b"RELEASE %d\n" % region_id)

    def close(self):
        with self.lock:
            if self.sock is not None:
                self.sock.close()
                self.sock = None


def _dtype(dtype):
    """numpy and the numpy dtype of dtype (a numpy dtype, or one of ampd's
    element type names: "int32", "float32", ...)."""
    try:
        import numpy
    except ImportError:
        raise ImportError("ampclient: array() needs numpy (python3-numpy); "
                          "the memoryview (view) needs nothing") from None
    return numpy, numpy.dtype(ELEMENT_FORMATS.get(dtype, dtype))


class Slice:
    """Bytes [offset, offset + length) of a region: a job's input or
    output (proto RegionSlice). view and array() show them in place."""

    def __init__(self, region, offset, length):
        if offset < 0 or length < 0 or offset + length > region.size:
            raise from_status_name("OUT_OF_RANGE", "slice [%d, %d) is outside the region's %d "
                                   "bytes" % (offset, offset + length, region.size))
        self.region, self.offset, self.length = region, offset, length

    def __len__(self):
        return self.length

    def __bytes__(self):
        return bytes(self.view)

    def __repr__(self):
        return "Slice(region=%d, offset=%d, length=%d)" % (self.region.id, self.offset,
                                                         self.length)

    @property
    def view(self):
        """A memoryview of the bytes, in the shared mapping (no copy)."""
        return self.region.view[self.offset:self.offset + self.length]

    def array(self, dtype="uint8"):
        """A numpy array on the bytes (no copy); dtype a numpy dtype or one
        of ampd's element type names ("int32", "float32", ...)."""
        np, dt = _dtype(dtype)
        return np.frombuffer(self.region.map, dtype=dt, count=self.length // dt.itemsize,
                             offset=self.offset)

    def to_proto(self, msg):
        msg.region, msg.offset, msg.length = self.region.id, self.offset, self.length


class Region:
    """size bytes of memory shared with ampd (Client.region makes one).

    The bytes live in a sealed memfd mapped here; data, if given, is copied
    in before the daemon maps it (docs/regions.md: pages written before
    REGISTER are mapped in then). Release it (or use `with`) when done;
    closing the client releases every region it made. A memoryview or
    array still held after release keeps the mapping alive here, not in
    the daemon."""

    def __init__(self, rsock, size, data=None, file=None, populate=False):
        if not isinstance(size, int) or size < 1:
            raise InvalidArgument("region size: want an int >= 1, not %r" % (size,))
        fd = os.memfd_create("ampclient", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, size)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
            self.map = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            self.size = size
            if populate:
                # Every page committed at once (~20x faster than a fault
                # per page), before REGISTER, so the daemon maps them all.
                self.map.madvise(MADV_POPULATE_WRITE)
            if data is not None:
                self.view[:len(data)] = data
            if file is not None:
                _read_into(file, self.view)
            self.rsock = rsock
            self.id, _ = rsock.register(fd)
        except BaseException:
            if getattr(self, "map", None) is not None:
                self.map.close()
            raise
        finally:
            os.close(fd)  # both mappings keep the memory

    @property
    def view(self):
        """A memoryview of the whole region (no copy)."""
        if self.map is None:
            raise from_status_name("FAILED_PRECONDITION", "region released")
        return memoryview(self.map)

    def array(self, dtype="uint8", offset=0, count=None):
        """A numpy array on the region from offset, count elements (default:
        as many as fit), no copy."""
        _, dt = _dtype(dtype)
        if count is None:
            count = (self.size - offset) // dt.itemsize
        return self.slice(offset, count * dt.itemsize).array(dtype)

    def slice(self, offset=0, length=None):
        """Bytes [offset, offset + length) (default: to the end) as a Slice."""
        return Slice(self, offset, self.size - offset if length is None else length)

    def release(self):
        """Releases the region in the daemon and drops this mapping."""
        if self.map is None:
            return
        m, self.map = self.map, None
        try:
            self.rsock.release(self.id)
        except AmpError:
            if self.rsock.sock is not None:
                raise
        finally:
            try:
                m.close()
            except BufferError:
                pass  # views still exported: the mapping goes with the last one

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __repr__(self):
        return "Region(id=%s, size=%d)" % (getattr(self, "id", None), self.size)


def _read_into(file, view):
    """Reads a file (path or binary file object) into view, up to its end;
    the bytes read."""
    f = open(file, "rb") if isinstance(file, (str, bytes, os.PathLike)) else file
    try:
        done = 0
        while done < len(view):
            got = f.readinto(view[done:])
            if not got:
                break
            done += got
    finally:
        if f is not file:
            f.close()
    return done
