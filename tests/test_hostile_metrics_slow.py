# SPDX-License-Identifier: MIT
"""test_hostile_metrics_slow.py: slow connections cannot blind Prometheus
(issue 33, item 7).

The metrics listener has 16 slots, and libmicrohttpd's idle timeout was
reset by every byte: 16 connections trickling a byte a second held every
slot for good and each scrape timed out. Now one address holds only a few
slots, and a request must arrive whole within a deadline however its bytes
are spaced. Here 64 connections from 16 loopback addresses trickle a byte
every TRICKLE_S: a scrape from another address must get its page while
they do, each trickler must be cut within the deadline, and afterwards a
scrape is immediate and the daemon's descriptors are back to where they
were.
Prints one line per check (support/cases.py).
"""
import os
import re
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon  # noqa: E402

SLOW = 64
SLOW_ADDRESSES = 16         # 127.0.0.10 up
SCRAPER = "127.0.0.2"
TRICKLE_S = 1
DEADLINE_S = 5              # metrics.c's METRICS_DEADLINE_S
SCRAPE_TIMEOUT_S = 2 * DEADLINE_S
CUT_WITHIN_S = 3 * DEADLINE_S   # the deadline, with room for a loaded machine
SETTLE_S = 10
POLL_S = 0.1


def scrape(host, port):
    """Seconds one GET /metrics from SCRAPER took, or None if it failed."""
    t0 = time.monotonic()
    s = socket.socket()
    s.settimeout(SCRAPE_TIMEOUT_S)
    try:
        s.bind((SCRAPER, 0))
        s.connect((host, port))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: ampd\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    except OSError:
        return None
    finally:
        s.close()
    return time.monotonic() - t0 if data.startswith(b"HTTP/1.1 200") and b"ampd_" in data else None


class Trickle:
    """SLOW connections, each sending one byte of a request line every
    TRICKLE_S until the daemon ends it; alive() counts those still open."""

    def __init__(self, host, port):
        self.socks = []
        for i in range(SLOW):
            s = socket.socket()
            s.bind(("127.0.0.%d" % (10 + i % SLOW_ADDRESSES), 0))
            s.connect((host, port))   # accepted by the kernel even when MHD is full
            self.socks.append(s)
        self.open = set(self.socks)
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _run(self):
        while not self.done.wait(TRICKLE_S):
            for s in list(self.open):
                try:
                    s.send(b"G")
                    s.setblocking(False)
                    if s.recv(1) == b"":
                        raise OSError("closed")
                except BlockingIOError:
                    pass
                except OSError:
                    with self.lock:
                        self.open.discard(s)
                finally:
                    s.setblocking(True)

    def alive(self):
        with self.lock:
            return len(self.open)

    def close(self):
        self.done.set()
        self.thread.join()
        for s in self.socks:
            s.close()


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def test_slow_connections_do_not_blind_scrapes():
    log = tempfile.NamedTemporaryFile(prefix="ampd-log-")
    d = Daemon(("--metrics-listen", "127.0.0.1:0"), stderr=log)
    trickle = None
    try:
        with open(log.name, encoding="utf-8", errors="replace") as f:
            m = re.search(r"metrics on http://(\S+):(\d+)/metrics", f.read())
        expect(m, "no 'metrics on' line in the log")
        host, port = m.group(1), int(m.group(2))
        expect(scrape(host, port) is not None, "a scrape failed before any slow client")
        before = fds(d.proc.pid)

        trickle = Trickle(host, port)
        t0 = time.monotonic()
        took = scrape(host, port)
        expect(took is not None, "no scrape while %d connections trickle" % SLOW)
        # The deadline cuts each trickler, however often it sends.
        while trickle.alive() and time.monotonic() - t0 < CUT_WITHIN_S + DEADLINE_S:
            time.sleep(POLL_S)
        expect(trickle.alive() == 0, "%d trickling connections still open after %.0f s"
               % (trickle.alive(), time.monotonic() - t0))
        trickle.close()
        trickle = None

        took = scrape(host, port)
        expect(took is not None and took < DEADLINE_S, "a scrape after the trickle: %s" % took)
        deadline = time.monotonic() + SETTLE_S
        while fds(d.proc.pid) > before and time.monotonic() < deadline:
            # libmicrohttpd frees a connection it has closed when its thread
            # next runs: a scrape makes it run (its own connection is gone
            # once the reply has been read and the socket closed).
            scrape(host, port)
            time.sleep(POLL_S)
        # At most: the first scrape's connection may still have been open.
        expect(fds(d.proc.pid) <= before,
               "descriptors %d after the trickle, %d before" % (fds(d.proc.pid), before))
    finally:
        if trickle:
            trickle.close()
        status = d.stop()
        log.close()
    expect(status == 0, "ampd exited with status %d" % status)


def main():
    return 0 if run_cases(module_cases(globals())) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
