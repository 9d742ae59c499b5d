# SPDX-License-Identifier: MIT
"""test_busy_poll.py: --busy-poll against a real ampd.

With it (the default), an I/O loop, a host worker and a device's runner poll
instead of sleeping for a while after their last job. The polling must end:
once the calls stop, the daemon sleeps. So each case loads the daemon with
the calls that poll (tiny jobs on the host path and on the device, many at
once, a stream), then measures the CPU time it takes while nothing calls: a
thread left polling takes up to a whole CPU second per second, an idle
daemon almost none. Results are checked the same
with the option on and off, and its limit is enforced.
"""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon  # noqa: E402

AMPCTL = os.environ.get("AMPCTL_BIN", "ampctl")
CALL_TIMEOUT_S = 300
SETTLE_S = 0.2        # far past any --busy-poll window (at most 10 ms)
IDLE_SAMPLE_S = 1.0
IDLE_CPU_MAX_S = 0.1   # an idle daemon takes ~0; one thread left polling, 0.3-1 s
TICKS = os.sysconf("SC_CLK_TCK")


def ampctl(daemon, args, stdin=b""):
    p = subprocess.run([AMPCTL, "--address", daemon.address] + args, input=stdin,
                       capture_output=True, timeout=CALL_TIMEOUT_S)
    expect(p.returncode == 0, "ampctl %s: exit %d: %s"
           % (" ".join(args), p.returncode, p.stderr.decode(errors="replace").strip()))
    return p.stdout


def cpu_seconds(pid):
    """The process's user + system CPU time, from /proc (all its threads)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS   # utime, stime


def load(daemon):
    """Every kind of call that polls; each result checked."""
    ampctl(daemon, ["bench", "-d", "0.5", "-c", "2", "-f", "8"])           # host path
    ampctl(daemon, ["--device", "0", "bench", "-d", "0.5", "-c", "2", "-f", "4"])
    ampctl(daemon, ["bench", "-k", "hist", "-n", "200"])
    expect(ampctl(daemon, ["reverse", "stressed"]) == b"desserts", "reverse result")
    data = bytes(range(256)) * 4096   # 1 MiB, streamed
    out = ampctl(daemon, ["--stream-threshold", "64K", "--transport", "socket", "transform",
                          "--op", "xor", "--value", "0x5a"], stdin=data)
    expect(out == bytes(b ^ 0x5A for b in data), "streamed transform result")


def idle_cpu(daemon):
    time.sleep(SETTLE_S)
    before = cpu_seconds(daemon.proc.pid)
    time.sleep(IDLE_SAMPLE_S)
    return cpu_seconds(daemon.proc.pid) - before


def check_sleeps_after_load(args):
    d = Daemon(args)
    try:
        for _ in range(2):   # twice: the window opens again after a pause
            load(d)
            used = idle_cpu(d)
            expect(used < IDLE_CPU_MAX_S, "%s: %.2f s of CPU in %.1f s with no call"
                   % (" ".join(args) or "default", used, IDLE_SAMPLE_S))
    finally:
        expect(d.stop() == 0, "daemon exit status")


def test_default_polls_then_sleeps():
    check_sleeps_after_load([])


def test_long_window_polls_then_sleeps():
    check_sleeps_after_load(["--busy-poll", "10000"])


def test_off():
    check_sleeps_after_load(["--busy-poll", "0"])


def test_over_the_limit_refused():
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run([os.environ["AMPD_BIN"], "--listen", "unix:%s/s" % tmp,
                            "--busy-poll", "10001"], capture_output=True, timeout=CALL_TIMEOUT_S)
    err = p.stderr.decode(errors="replace")
    expect(p.returncode != 0, "ampd started with --busy-poll 10001")
    expect("busy-poll" in err, "the refusal names the option: " + err.strip())


if __name__ == "__main__":
    sys.exit(1 if run_cases(module_cases(globals())) else 0)
