# SPDX-License-Identifier: MIT
"""test_hostile_files.py: files ampd reads cannot hang it (issue 33, items
6 and 8, and the token file's BOM and NUL).

A FIFO named as the token file, the TLS certificate or the config file used
to block ampd in open() at start-up (before it listened; it did not even
heed SIGTERM) or on SIGHUP (then every client waited). Each must now be
refused at once, naming the file and that it is a FIFO; on SIGHUP the
settings in force stay (the old token still works over TCP meanwhile) and
no descriptor is left behind. Config lines of any length: a commented-out
"listen =" past byte 1023 stays a comment, and a later error names its
true line. A token file with a UTF-8 BOM is read (its first token works);
one with a NUL byte is refused naming the line.
Prints one line per check (support/cases.py).
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon, free_port  # noqa: E402

AMPD = os.environ.get("AMPD_BIN", "ampd")
# Start-up under ASan builds kernels slowly; a hang is far longer still.
START_TIMEOUT_S = 90
CALL_TIMEOUT_S = 10
LOG_WAIT_S = 30
POLL_S = 0.05
TOKEN = "files-test-token-0123456789"
LONG_LINE = 1023   # the old parser's buffer, less its NUL


class Tmp:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ampd-files-")

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, data, mode=0o600):
        p = self.path(name)
        with open(p, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
        os.chmod(p, mode)
        return p

    def fifo(self, name):
        p = self.path(name)
        os.mkfifo(p, 0o600)
        return p

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def start(args):
    """ampd with args, which must stop at start-up: (exit status, stderr)."""
    try:
        p = subprocess.run([AMPD, *args], capture_output=True, timeout=START_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise AssertionError("ampd %s hung at start-up" % args) from None
    return p.returncode, p.stderr.decode(errors="replace")


def refused(args, *words):
    rc, err = start(args)
    expect(rc != 0, "ampd %s started: %s" % (args, err))
    for w in words:
        expect(w in err, "no %r in: %s" % (w, err))


def reverse_on(ch, token):
    """The status code of a Reverse with token on the channel ch."""
    try:
        reply = ch.unary_unary("/amp.v1.Amp/Reverse")(
            b"\x0a\x03abc", timeout=CALL_TIMEOUT_S,
            metadata=[("authorization", "Bearer " + token)])
        expect(reply[2:5] == b"cba", "reply %r" % reply)
        return grpc.StatusCode.OK
    except grpc.RpcError as e:
        return e.code()


def reverse_code(address, token):
    with grpc.insecure_channel(address) as ch:
        return reverse_on(ch, token)


def test_fifo_at_startup():
    t = Tmp()
    try:
        fifo = t.fifo("fifo")
        port = "127.0.0.1:%d" % free_port()
        refused(["--listen", port, "--token-file", fifo], "--token-file " + fifo, "a FIFO")
        refused(["--config", fifo], "--config " + fifo, "a FIFO")
        refused(["--listen", "tls:" + port, "--tcp-require-token", "off", "--tls-cert", fifo,
                 "--tls-key", fifo], "--tls-cert " + fifo, "a FIFO")
        refused(["--listen", port, "--token-file", t.dir], "a directory")
    finally:
        t.close()


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def fds_back_to(pid, want):
    """The daemon's descriptor count once it is want again, or after
    LOG_WAIT_S: the files renamed back are read again by the secret watch
    (secret_watch.h) a moment later, its descriptor open meanwhile; a leak
    stays."""
    deadline = time.monotonic() + LOG_WAIT_S
    while fds(pid) != want and time.monotonic() < deadline:
        time.sleep(POLL_S)
    return fds(pid)


def sighup(d, log, *words):
    """SIGHUP, then wait for each of words in the log after it."""
    start_at = os.path.getsize(log.name)
    os.kill(d.proc.pid, signal.SIGHUP)
    deadline = time.monotonic() + LOG_WAIT_S
    while time.monotonic() < deadline:
        with open(log.name, encoding="utf-8", errors="replace") as f:
            new = f.read()[start_at:]
        if all(w in new for w in words):
            return new
        time.sleep(POLL_S)
    raise AssertionError("after SIGHUP, no %r in: %s" % (words, new))


def test_fifo_on_sighup():
    t = Tmp()
    log = tempfile.NamedTemporaryFile(prefix="ampd-log-")
    tokens = t.write("tokens", "good %s\n" % TOKEN)
    conf = t.write("conf", "request-timeout = 0\n")
    port = free_port()
    tcp = "127.0.0.1:%d" % port
    d = Daemon(("--listen", tcp, "--token-file", tokens, "--config", conf), stderr=log)
    # One connection throughout: a new one per call would be closed by the
    # daemon a moment after the client, and the count below could catch it.
    ch = grpc.insecure_channel(tcp)
    try:
        expect(reverse_on(ch, TOKEN) == grpc.StatusCode.OK, "the token is not served")
        before = fds(d.proc.pid)
        for name, path in (("--token-file", tokens), ("--config", conf)):
            os.rename(path, path + ".real")
            os.mkfifo(path, 0o600)
            t0 = time.monotonic()
            sighup(d, log, "%s %s: a FIFO" % (name, path))
            took = time.monotonic() - t0
            expect(took < CALL_TIMEOUT_S, "the reload took %.1f s" % took)
            # The settings in force stay: the old token is still served.
            code = reverse_on(ch, TOKEN)
            expect(code == grpc.StatusCode.OK, "after a FIFO as %s: %s" % (name, code))
            os.unlink(path)
            os.rename(path + ".real", path)
        after = fds_back_to(d.proc.pid, before)
        expect(after == before, "descriptors %d, were %d" % (after, before))
    finally:
        ch.close()
        status = d.stop()
        log.close()
        t.close()
    expect(status == 0, "ampd exited with status %d" % status)


def test_config_long_lines():
    t = Tmp()
    try:
        sock = t.path("hidden.sock")
        # The tail past byte 1023 of a comment once parsed as a setting.
        comment = "#" + " " * (LONG_LINE - 1) + "listen = unix:" + sock + "\n"
        conf = t.write("conf", comment + "max-jobs = 4\nno-such-key = 1\n")
        refused(["--config", conf], "%s:3: unknown key \"no-such-key\"" % conf)
        expect(not os.path.exists(sock), "the comment's listen address was opened")
        # A long value is one value, not a value and a setting.
        conf = t.write("conf", "max-jobs = " + "4" * (2 * LONG_LINE) + "\n")
        refused(["--config", conf], "%s:1:" % conf, "--max-jobs")
        conf = t.write("conf", b"max-jobs = 4\nmax\x00-jobs = 8\n")
        refused(["--config", conf], "%s:2: a NUL byte" % conf)
    finally:
        t.close()


def test_token_bom_and_nul():
    t = Tmp()
    try:
        port = "127.0.0.1:%d" % free_port()
        nul = t.write("nul", b"good %s\x00bad %s\n" % (TOKEN.encode(), TOKEN.encode()))
        refused(["--listen", port, "--token-file", nul], "%s:1: a NUL byte" % nul)
        bom = t.write("bom", b"\xef\xbb\xbfgood " + TOKEN.encode() + b"\n")
        d = Daemon(("--listen", port, "--token-file", bom))
        try:
            code = reverse_code(port, TOKEN)
        finally:
            status = d.stop()
        expect(code == grpc.StatusCode.OK, "the token after a BOM: %s" % code)
        expect(status == 0, "ampd exited with status %d" % status)
    finally:
        t.close()


def main():
    return 0 if run_cases(module_cases(globals())) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
