# SPDX-License-Identifier: MIT
"""pyclient.py: for the tests of python/ampclient: the package of the
build tree as `amp` ($AMP_PYTHON_DIR, which tests/CMakeLists.txt sets,
else the python/ folder beside $AMPD_BIN: a test run by hand from the
build tree), and the computations here that each result is checked
against."""
import os
import struct
import sys

from cases import expect


def import_ampclient():
    where = os.environ.get("AMP_PYTHON_DIR") or \
        os.path.join(os.path.dirname(os.path.abspath(os.environ["AMPD_BIN"])), "python")
    sys.path.insert(0, where)
    import ampclient
    import ampclient.aio  # noqa: F401 - the tests use both
    return ampclient


amp = import_ampclient()


def data_of(n, seed=1):
    """n bytes that differ by position and seed, cheaply."""
    block = bytes((i * 131 + seed * 17 + (i >> 8)) & 0xFF for i in range(65536))
    return (block * (n // len(block) + 1))[:n]


def ref_transform(data, op, value=0, table=None, offset=0, length=None):
    end = len(data) if length is None else offset + length
    fn = {"add": lambda b: (b + value) & 0xFF, "xor": lambda b: b ^ value,
          "and": lambda b: b & value, "or": lambda b: b | value, "set": lambda b: value,
          "map": lambda b: table[b]}[op]
    mapped = bytes(fn(b) for b in range(256))
    return data[:offset] + data[offset:end].translate(mapped) + data[end:]


def ref_byte_hist(data):
    counts = [0] * 256
    for b in range(256):
        counts[b] = data.count(bytes([b]))
    return counts


def ref_hist(values, bins, lo, hi, clamp):
    counts, below, above, nan = [0] * bins, 0, 0, 0
    for v in values:
        if v != v:
            nan += 1
            continue
        if v < lo:
            below += 1
            k = 0 if clamp else None
        elif v >= hi:
            above += 1
            k = bins - 1 if clamp else None
        else:
            k = min(int((v - lo) * bins / (hi - lo)), bins - 1)
        if k is not None:
            counts[k] += 1
    return counts, below, above, nan


def ref_fill(type, count, start, step):
    fmt = amp.steps.ELEMENT_FORMATS[type]
    if type == "float32":
        return b"".join(struct.pack(fmt, start + k * step) for k in range(count))
    bits = struct.calcsize(fmt) * 8
    mask = (1 << bits) - 1
    vals = [(start + k * step) & mask for k in range(count)]
    if type != "uint32":
        vals = [v - (1 << bits) if v >> (bits - 1) else v for v in vals]
    return b"".join(struct.pack(fmt, v) for v in vals)


def expect_error(cls, fn, *words):
    try:
        fn()
    except amp.AmpError as e:
        expect(isinstance(e, cls), "%s, want %s" % (e, cls.__name__))
        expect(e.code == cls.code, "code %s, want %s" % (e.code, cls.code))
        for w in words:
            expect(w in e.message, "%r not in %r" % (w, e.message))
        return e
    raise AssertionError("no %s" % cls.__name__)
