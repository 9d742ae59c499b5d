#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_architecture.py: docs/architecture.md's boundaries, checked on the
sources, so that breaking one fails the suite instead of waiting for a
reader to notice.

- Socket I/O (send, recv, accept, connect, socket, libuv stream reads and
  writes; in daemon/ and common/ also read and write, kept for sockets:
  eventfds use eventfd_read/eventfd_write) only in the files that own sockets:
  daemon/ listen.c and region_sock.c, client/ conn.c, connect.c and
  region.c, common/iov_send.c, which the writer thread of both ends
  (common/sock_writer.c) sends with, and common/sock_reader.c, the daemon
  socket's reader thread.
- OpenCL (any cl* call, <CL/...>) only in the device layer: daemon/dev*.c
  and op*.c and their private headers.
- Includes follow the layers: common/ includes nothing of daemon/ or
  client/; client/ and ampctl/ nothing of daemon/; daemon/ nothing of
  client/ or ampctl/ (of kernels/, only kernel_abi.h); the HTTP/2 core (h2*.c) none of the socket, rpc or
  scheduler headers; nothing outside the device layer its private headers.

Comments and string literals are stripped first, so prose may name a call.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SOCKET_CALL = re.compile(
    r"\b(recv|recvfrom|recvmsg|send|sendto|sendmsg|accept|accept4|connect|socket|socketpair|"
    r"uv_read_start|uv_write|uv_try_write|uv_try_writev)\s*\(")
# Plain descriptor I/O: the client library and ampctl read and write the
# user's files with it; in the daemon and common/ it is only for sockets
# (eventfds go through eventfd_read/eventfd_write, as in loop_wake.c).
FD_CALL = re.compile(r"\b(read|readv|write|writev)\s*\(")
SOCKET_OWNERS = {"daemon/listen.c", "daemon/region_sock.c",
                 "client/conn.c", "client/connect.c", "client/region.c",
                 "common/iov_send.c", "common/sock_reader.c"}

OPENCL = re.compile(r"\bcl[A-Z][A-Za-z0-9]*\s*\(|#\s*include\s*<CL/")
DEVICE_PRIVATE = {"dev_internal.h", "op.h"}

INCLUDE = re.compile(r'#\s*include\s*"([^"]+)"')


def strip(src):
    """src without comments and string or character literals (their
    contents become spaces, so line numbers stay)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def sources(*dirs):
    for d in dirs:
        for name in sorted(os.listdir(os.path.join(ROOT, d))):
            if name.endswith((".c", ".h")):
                path = f"{d}/{name}"
                with open(os.path.join(ROOT, path)) as f:
                    raw = f.read()
                yield path, name, raw, strip(raw)


def headers_of(d):
    return {n for n in os.listdir(os.path.join(ROOT, d)) if n.endswith(".h")}


def is_device_layer(name):
    return name.startswith(("dev", "op")) or name in DEVICE_PRIVATE


def check():
    problems = []
    daemon_h = headers_of("daemon")
    client_h = headers_of("client") | headers_of("client/include")
    ampctl_h = headers_of("ampctl")
    common_h = headers_of("common")
    for path, name, raw, code in sources("daemon", "client", "common", "ampctl"):
        layer = path.split("/")[0]
        calls = list(SOCKET_CALL.finditer(code))
        if layer in ("daemon", "common"):
            calls += FD_CALL.finditer(code)
        for m in calls:
            if path not in SOCKET_OWNERS:
                line = code.count("\n", 0, m.start()) + 1
                problems.append(f"{path}:{line}: socket I/O ({m.group(1)}) outside the files "
                                "that own sockets")
        for m in OPENCL.finditer(code):
            if not (layer == "daemon" and is_device_layer(name)):
                line = code.count("\n", 0, m.start()) + 1
                problems.append(f"{path}:{line}: OpenCL outside the device layer")
        # Include names come from the raw text: stripping blanks the quotes' contents.
        for m in INCLUDE.finditer(raw):
            inc = os.path.basename(m.group(1))
            line = raw.count("\n", 0, m.start()) + 1
            own = {"daemon": daemon_h, "client": client_h, "ampctl": ampctl_h,
                   "common": common_h}[layer]
            if inc in own or inc in common_h or inc.endswith(".pb-c.h"):
                pass
            elif layer in ("client", "ampctl") and inc == "amp.h":
                pass
            elif layer == "daemon" and inc in ("kernels.h", "kernel_abi.h"):
                pass   # kernels/: generated into the build tree; what host and kernels share
            else:
                problems.append(f'{path}:{line}: includes "{m.group(1)}" from another layer')
            if layer == "daemon" and inc in DEVICE_PRIVATE and not is_device_layer(name):
                problems.append(f"{path}:{line}: {inc} is the device layer's own header")
            if layer == "daemon" and name.startswith("h2") and (
                    inc.startswith(("conn", "listen", "rpc", "sched", "io_loop", "server"))):
                problems.append(f"{path}:{line}: the HTTP/2 core includes {inc}")
    return problems


def self_test():
    """The checks must be able to fail: each rule on a made-up file."""
    assert SOCKET_CALL.search(strip("int f(void) { return send(fd, b, n, 0); }"))
    assert FD_CALL.search(strip("n = write(fd, b, n);"))
    assert not SOCKET_CALL.search(strip('/* send(...) */ const char *s = "write(";'))
    assert OPENCL.search(strip("x = clCreateBuffer(ctx, 0, 1, 0, &rc);"))
    assert not OPENCL.search(strip("// clFinish(q) happens in dev_exec.c"))


if __name__ == "__main__":
    self_test()
    found = check()
    for p in found:
        print(p)
    print(f"test_architecture: {len(found)} problem(s)")
    sys.exit(1 if found else 0)
