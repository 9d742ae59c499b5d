# SPDX-License-Identifier: MIT
"""test_socket_activation.py: ampd serves the sockets systemd passes.

systemd-socket-activate (no systemd as PID 1 needed) binds the sockets an
ampd.socket unit would and execs ampd with them in $LISTEN_FDS. Checks:
- a Unix listener, its PATH.regions socket and a TCP listener passed
  together: a job through ampctl on each listener, a region registered on
  the passed region socket, the --listen address not opened, and the
  socket files left in place after ampd drains and exits 0 (they are the
  service manager's);
- a Unix listener passed alone: ampd makes its region socket beside it;
- a datagram socket passed: ampd refuses to start, naming the descriptor.
Prints one line per check (support/cases.py).
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import module_cases, run_cases  # noqa: E402
from daemon_proc import free_port  # noqa: E402

AMPD = os.environ["AMPD_BIN"]
AMPCTL = os.environ["AMPCTL_BIN"]
START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 60
POLL_S = 0.05


class Activated:
    """ampd under systemd-socket-activate with listen (its -l arguments)."""

    def __init__(self, work, listen, extra=(), datagram=False):
        self.log_path = os.path.join(work, "ampd.log")
        args = ["systemd-socket-activate"] + (["--datagram"] if datagram else [])
        for a in listen:
            args += ["-l", a]
        self.log = open(self.log_path, "w", encoding="utf-8")
        # The activator execs ampd in its own process: this pid is ampd's.
        self.proc = subprocess.Popen(args + [AMPD, *extra], stderr=self.log)
        self.first = listen[0]

    def poke(self):
        """The activator starts ampd on the first connection: make it."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(self.first)
                s.close()
                return
            except OSError:
                assert self.proc.poll() is None, "exited before listening:\n" + self.output()
                time.sleep(POLL_S)
        raise AssertionError("no listener at %s" % self.first)

    def wait_serving(self):
        deadline = time.monotonic() + START_TIMEOUT_S
        while "ampd: serving on" not in self.output():
            assert self.proc.poll() is None, "ampd exited:\n" + self.output()
            assert time.monotonic() < deadline, "ampd not serving:\n" + self.output()
            time.sleep(POLL_S)

    def output(self):
        with open(self.log_path, encoding="utf-8") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            status = self.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            status = self.proc.wait()
        self.log.close()
        return status


def ampctl(*args):
    p = subprocess.run([AMPCTL, *args], capture_output=True, text=True, timeout=START_TIMEOUT_S)
    assert p.returncode == 0, "ampctl %s: exit %d: %s" % (args, p.returncode, p.stderr)
    return p.stdout


def register_region(path):
    """REGISTER one sealed memfd on the region socket at path; the reply."""
    import fcntl
    fd = os.memfd_create("act", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 4096)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(START_TIMEOUT_S)
    s.connect(path)
    socket.send_fds(s, [b"REGISTER\n"], [fd])
    reply = s.recv(256).decode()
    s.close()
    os.close(fd)
    return reply


def test_unix_tcp_and_regions():
    with tempfile.TemporaryDirectory(prefix="ampd-act-") as work:
        sock = os.path.join(work, "ampd.sock")
        regions = sock + ".regions"
        port = free_port()
        unused = os.path.join(work, "unused.sock")
        d = Activated(work, [sock, regions, "127.0.0.1:%d" % port],
                      ["--listen", "unix:" + unused, "--tcp-require-token", "off"])
        try:
            d.poke()
            d.wait_serving()
            assert ampctl("-a", "unix:" + sock, "reverse", "-o", "-", "activated") == "detavitca"
            assert ampctl("-a", "127.0.0.1:%d" % port, "reverse", "-o", "-", "tcp") == "pct"
            reply = register_region(regions)
            assert reply.startswith("OK ") and reply.endswith(" 4096\n"), reply
            assert not os.path.exists(unused), "--listen was opened although sockets were passed"
            out = d.output()
            assert "listening on unix:%s (passed)" % sock in out, out
            assert "regions on unix:%s (passed)" % regions in out, out
            assert "listening on 127.0.0.1:%d (passed)" % port in out, out
        finally:
            status = d.stop()
        assert status == 0, "ampd exited %d:\n%s" % (status, d.output())
        for path in (sock, regions):
            assert os.path.exists(path), "%s was removed: it is the service manager's" % path


def test_unix_alone_gets_regions():
    with tempfile.TemporaryDirectory(prefix="ampd-act-") as work:
        sock = os.path.join(work, "alone.sock")
        d = Activated(work, [sock])
        try:
            d.poke()
            d.wait_serving()
            reply = register_region(sock + ".regions")
            assert reply.startswith("OK "), reply
            assert ampctl("-a", "unix:" + sock, "reverse", "-o", "-", "alone") == "enola"
        finally:
            status = d.stop()
        assert status == 0, "ampd exited %d:\n%s" % (status, d.output())
        assert not os.path.exists(sock + ".regions"), "ampd left its own region socket behind"


def test_datagram_refused():
    with tempfile.TemporaryDirectory(prefix="ampd-act-") as work:
        port = free_port()
        d = Activated(work, ["127.0.0.1:%d" % port], datagram=True)
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            # The activator starts ampd on traffic, once it has bound the port.
            while d.proc.poll() is None and time.monotonic() < deadline:
                u.sendto(b"wake", ("127.0.0.1", port))
                time.sleep(POLL_S)
        finally:
            u.close()
            status = d.stop()
        out = d.output()
        assert status == 1, "ampd exited %d with a datagram socket:\n%s" % (status, out)
        assert "passed descriptor 3 is not a listening Unix or TCP stream socket" in out, out


def main():
    return 0 if run_cases(module_cases(globals())) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
