# SPDX-License-Identifier: MIT
"""test_readme_blocks.py: every shell block of README.md runs as pasted.

The README's ```sh blocks are pasted by new users top to bottom. Each one
either runs here, in order, in one bash (set -e, pipefail) in a scratch
directory whose `build` is this build tree, exactly as written; or the line
before it says `<!-- doc-test: skip: REASON -->` with the reason it cannot
run here (it installs packages, needs systemd or a tool Debian does not
ship). The run must exit 0 and say what the README says it prints
(desserts, configuration ok). Whatever the blocks left running (the ampds
they start in the background) is stopped afterwards with SIGTERM and must
exit.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402

SRC = os.environ.get("AMP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.path.dirname(os.path.abspath(os.environ.get("AMPD_BIN", "build/ampd")))
RUN_TIMEOUT_S = 300
STOP_TIMEOUT_S = 60
MARK = re.compile(r"<!-- doc-test: (.*?) -->\n$")
# Files the blocks make outside their directory, removed before and after.
FIXED_PATHS = ("/tmp/ampd.sock", "/tmp/ampd.sock.regions", "/tmp/ampd-ops.sock",
               "/tmp/ampd-ops.sock.regions")


def blocks():
    """(mark or None, text, line) of every ```sh block, in order."""
    with open(os.path.join(SRC, "README.md"), encoding="utf-8") as f:
        text = f.read()
    out = []
    for m in re.finditer(r"^```sh\n(.*?)^```$", text, re.S | re.M):
        before = text[:m.start()]
        mark = MARK.search(before)
        out.append((mark.group(1) if mark else None, m.group(1), before.count("\n") + 1))
    return out


def test_every_block_runs_or_says_why():
    found = blocks()
    expect(len(found) >= 2, "README.md has %d sh blocks" % len(found))
    for mark, _, line in found:
        if mark is None:
            continue
        m = re.fullmatch(r"skip: (\S.{9,})", mark)
        expect(m is not None, "README.md:%d: a doc-test mark other than 'skip: REASON' "
               "(a reason of 10 characters or more): %r" % (line, mark))
    expect(any(mark is None for mark, _, _ in found), "no README block runs")


def remove_fixed():
    for p in FIXED_PATHS:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def test_blocks_run_as_pasted():
    script = "set -e -o pipefail\n" + "".join(text for mark, text, _ in blocks() if mark is None)
    remove_fixed()
    with tempfile.TemporaryDirectory(prefix="amp-readme-") as d:
        os.symlink(BUILD, os.path.join(d, "build"))
        # The output to a file: the background ampds keep a pipe open, and
        # the run ends when bash does, not when they do.
        with open(os.path.join(d, "out.log"), "w+b") as logf:
            p = subprocess.Popen(["bash", "-c", script], cwd=d, stdout=logf,
                                 stderr=subprocess.STDOUT, start_new_session=True)
            try:
                p.wait(timeout=RUN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            finally:
                stopped = stop_group(p.pid)
                remove_fixed()
            logf.seek(0)
            log = logf.read().decode(errors="replace")
        expect(p.returncode == 0, "the README's blocks exited %d (or ran past %d s):\n%s"
               % (p.returncode, RUN_TIMEOUT_S, log[-3000:]))
        expect(log.count("desserts") >= 2, "no 'desserts' from the Unix and TLS reverses:\n" + log)
        expect("configuration ok" in log, "no 'configuration ok':\n" + log)
        expect(stopped, "what the blocks started did not stop on SIGTERM")


def stop_group(pgid):
    """SIGTERMs what is left of the blocks' process group (their background
    ampds); True when all of it is gone within STOP_TIMEOUT_S."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    for _ in range(STOP_TIMEOUT_S * 10):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        subprocess.run(["sleep", "0.1"])
    os.killpg(pgid, signal.SIGKILL)
    return False


if __name__ == "__main__":
    sys.exit(run_cases(module_cases(globals())))
