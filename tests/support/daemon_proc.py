# SPDX-License-Identifier: MIT
"""daemon_proc.py: run a real ampd for the Python tests (the C tests use
daemon_proc.c; same contract).

Starts $AMPD_BIN on a Unix socket in a fresh temporary directory, waits
until the socket accepts a connection (PoCL builds kernels at startup,
slowly under ASan), and stops it with SIGTERM, returning its exit status
(nonzero when LeakSanitizer found a leak at exit).
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 60
POLL_S = 0.05
# A test that crashes must not leave its daemon behind: setpriv (util-linux)
# sets the parent-death signal and execs ampd. Not a preexec_fn: Python calls
# it unsafe in a process with threads (a test's gRPC channel has them), and
# one test hung in Popen once; without it Popen runs nothing before exec.
DIE_WITH_PARENT = ("setpriv", "--pdeathsig", "TERM", "--")


def vm_rss(pid):
    """The resident memory of process pid, in bytes (VmRSS)."""
    with open("/proc/%d/status" % pid, encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def free_port():
    """A 127.0.0.1 port that was free a moment ago, for a listener of a test's own."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Daemon:
    def __init__(self, extra_args=(), stderr=None, preexec_fn=None):
        """stderr: a file for the daemon's log (None: the test's own);
        preexec_fn: run in the child before ampd starts (resource limits)."""
        self.bin = os.environ.get("AMPD_BIN")
        if not self.bin:
            raise RuntimeError("AMPD_BIN is not set")
        self.dir = tempfile.mkdtemp(prefix="ampd-pytest-")
        self.sock_path = os.path.join(self.dir, "ampd.sock")
        self.address = "unix:" + self.sock_path
        loops = os.environ.get("AMPD_TEST_IO_THREADS")
        if loops and "--io-threads" not in extra_args:
            extra_args = (*extra_args, "--io-threads", loops)
        self.proc = subprocess.Popen([*DIE_WITH_PARENT, self.bin, "--listen", self.address,
                                      *extra_args], stderr=stderr, preexec_fn=preexec_fn)
        try:
            self._wait_ready()
        except Exception:
            self.stop()
            raise

    def _can_connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(self.sock_path)
            return True
        except OSError:
            return False
        finally:
            s.close()

    def _tcp_listening(self):
        """Whether every plain TCP --listen of the command line accepts: ampd
        binds its listeners one after another, the Unix one (ours, first)
        before them, so a call to a TCP one right after start could be
        refused."""
        args = self.proc.args
        for i, a in enumerate(args[:-1]):
            v = args[i + 1]
            if a != "--listen" or v.startswith(("unix:", "tls:")):
                continue
            host, _, port = v.rpartition(":")
            try:
                socket.create_connection((host.strip("[]"), int(port)), timeout=1).close()
            except (OSError, ValueError):
                return False
        return True

    def _wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("ampd exited during startup with %d" % self.proc.returncode)
            if self._can_connect() and self._tcp_listening():
                return
            time.sleep(POLL_S)
        raise RuntimeError("ampd not ready after %d s" % START_TIMEOUT_S)

    def stop(self):
        """SIGTERM and wait; returns the exit status (128+N for signal N)."""
        status = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        status = self.proc.returncode
        shutil.rmtree(self.dir, ignore_errors=True)
        return 128 - status if status < 0 else status
