# SPDX-License-Identifier: MIT
"""daemon_proc.py: run a real ampd for the Python tests (the C tests use
daemon_proc.c; same contract).

Starts $AMPD_BIN on a Unix socket in a fresh temporary directory, waits
until it sends READY=1 to its $NOTIFY_SOCKET, a datagram socket in that
directory, as systemd would see it (ampd listens at once, but runs jobs
only once its devices are open: PoCL builds kernels then, slowly under
ASan), and stops it with SIGTERM, returning its exit status (nonzero when
LeakSanitizer found a leak at exit).
"""
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time

START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 60
POLL_S = 0.05
NOTIFY_MAX = 4096  # one sd_notify datagram
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


# Ports the kernel hands out for connect() and port 0 lie in
# ip_local_port_range (32768-60999 by default): a port taken there and
# released is soon another test's source port. One below that range, free on
# every address, is not (support/hostile.h draws from the same range).
PORT_LOW, PORT_HIGH = 20000, 32768


def free_port():
    """A TCP port free on every address a moment ago, for a test's own listener."""
    rng = random.Random(os.getpid() ^ time.time_ns())
    for _ in range(1000):
        port = rng.randrange(PORT_LOW, PORT_HIGH)
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port in %d-%d" % (PORT_LOW, PORT_HIGH - 1))


class Daemon:
    def __init__(self, extra_args=(), stderr=None, preexec_fn=None, ampd_bin=None, env=None,
                 wait_ready=True):
        """stderr: a file for the daemon's log (None: the test's own);
        preexec_fn: run in the child before ampd starts (resource limits);
        ampd_bin: the daemon (default $AMPD_BIN); env: more environment for it;
        wait_ready: False returns once it runs, for a test that watches its
        start (wait_ready() and notified() then)."""
        self.bin = ampd_bin or os.environ.get("AMPD_BIN")
        if not self.bin:
            raise RuntimeError("AMPD_BIN is not set")
        self.dir = tempfile.mkdtemp(prefix="ampd-pytest-")
        self.sock_path = os.path.join(self.dir, "ampd.sock")
        self.address = "unix:" + self.sock_path
        self.notify_path = os.path.join(self.dir, "notify")
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        self.states = []  # every line ampd sent to its notify socket, in order
        loops = os.environ.get("AMPD_TEST_IO_THREADS")
        if loops and "--io-threads" not in extra_args:
            extra_args = (*extra_args, "--io-threads", loops)
        child_env = dict(os.environ, NOTIFY_SOCKET=self.notify_path, **(env or {}))
        self.proc = subprocess.Popen([*DIE_WITH_PARENT, self.bin, "--listen", self.address,
                                      *extra_args], stderr=stderr, preexec_fn=preexec_fn,
                                     env=child_env)
        if not wait_ready:
            return
        try:
            self.wait_ready()
        except Exception:
            self.stop()
            raise

    def listening(self):
        """Whether the Unix socket accepts a connection now."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(self.sock_path)
            return True
        except OSError:
            return False
        finally:
            s.close()

    def notified(self, timeout=0.0):
        """Reads what ampd has sent to its notify socket, waiting up to
        timeout seconds for the first datagram; returns self.states."""
        while select.select([self.notify], [], [], timeout)[0]:
            self.states += self.notify.recv(NOTIFY_MAX).decode().splitlines()
            timeout = 0
        return self.states

    def wait_ready(self):
        """Until ampd sends READY=1: its devices are open, every socket serves."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("ampd exited during startup with %d" % self.proc.returncode)
            if "READY=1" in self.notified(POLL_S):
                return
        raise RuntimeError("ampd not ready after %d s" % START_TIMEOUT_S)

    def wait_listening(self):
        """Until the Unix socket accepts a connection."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("ampd exited during startup with %d" % self.proc.returncode)
            if self.listening():
                return
            time.sleep(POLL_S)
        raise RuntimeError("ampd not listening after %d s" % START_TIMEOUT_S)

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
        self.notify.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return 128 - status if status < 0 else status
