# SPDX-License-Identifier: MIT
"""test_sighup_startup.py: SIGHUP never kills ampd.

systemctl reload (ExecReload=/bin/kill -HUP $MAINPID) may come at any
moment of ampd's start: before the server's loop handles SIGHUP (main.c
ignores it from its start) or while the devices open (the loop handles it
then). Checks that SIGHUP is ignored or caught from ampd's start (SigIgn or
SigCgt in /proc/PID/status), that one sent then leaves it starting and
serving a job, that one sent while it serves is handled (a line on stderr)
and it keeps serving, and that it then drains and exits 0.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

AMPD = os.environ["AMPD_BIN"]
AMPCTL = os.environ["AMPCTL_BIN"]
TIMEOUT_S = 120
POLL_S = 0.01


def survives_sighup(pid):
    """SIGHUP is ignored or caught: no longer its default action, which kills."""
    bit = 1 << (signal.SIGHUP - 1)
    with open("/proc/%d/status" % pid, encoding="ascii") as f:
        for line in f:
            if line.startswith(("SigIgn:", "SigCgt:")) and int(line.split()[1], 16) & bit:
                return True
    return False


def wait_for(what, test, proc):
    deadline = time.monotonic() + TIMEOUT_S
    while not test():
        assert proc.poll() is None, "ampd exited with %d waiting for %s" % (proc.returncode, what)
        assert time.monotonic() < deadline, "no %s within %d s" % (what, TIMEOUT_S)
        time.sleep(POLL_S)


def can_connect(path):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def wait_serving(address):
    """ampd listens first and serves jobs once its devices are open."""
    p = subprocess.run([AMPCTL, "-a", address, "health", "--wait", "%ds" % TIMEOUT_S],
                       capture_output=True, text=True, timeout=TIMEOUT_S + 10)
    assert p.returncode == 0, p.stderr


def reverse(address, text):
    p = subprocess.run([AMPCTL, "-a", address, "reverse", "-o", "-", text], capture_output=True,
                       text=True, timeout=TIMEOUT_S)
    assert p.returncode == 0, p.stderr
    return p.stdout


def main():
    work = tempfile.mkdtemp(prefix="ampd-hup-")
    sock = os.path.join(work, "ampd.sock")
    log_path = os.path.join(work, "ampd.log")
    log = open(log_path, "w", encoding="utf-8")
    proc = subprocess.Popen([AMPD, "--listen", "unix:" + sock], stderr=log)
    try:
        wait_for("SIGHUP ignored or caught at startup", lambda: survives_sighup(proc.pid), proc)
        proc.send_signal(signal.SIGHUP)
        wait_for("the socket", lambda: can_connect(sock), proc)
        wait_serving("unix:" + sock)
        assert reverse("unix:" + sock, "hup") == "puh"
        proc.send_signal(signal.SIGHUP)
        wait_for("the SIGHUP line", lambda: "ampd: SIGHUP" in read(log_path), proc)
        assert reverse("unix:" + sock, "again") == "niaga"
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(TIMEOUT_S)
        assert status == 0, "ampd exited %d after SIGHUPs" % status
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(work, ignore_errors=True)
    print("test_sighup_startup: ok")


if __name__ == "__main__":
    main()
