# SPDX-License-Identifier: MIT
"""region_line.py: a client of ampd's region socket (docs/regions.md), for
the Python tests: one line out with its descriptors, one line back."""
import socket


def region_socket(d, timeout=None):
    """A connection to the region socket of the Daemon d (no timeout: block)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if timeout is not None:
        s.settimeout(timeout)
    s.connect(d.sock_path + ".regions")
    return s


def ask(rsock, line, fds=()):
    """Sends line (bytes, ending in a newline) with fds; the answer line."""
    socket.send_fds(rsock, [line], list(fds))
    answer = b""
    while not answer.endswith(b"\n"):
        got = rsock.recv(1)
        if not got:
            raise RuntimeError("region socket closed")
        answer += got
    return answer.decode().rstrip("\n")
