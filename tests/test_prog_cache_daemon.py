# SPDX-License-Identifier: MIT
"""test_prog_cache_daemon.py: ampd's kernel cache (--cache-dir) through a
real ampd.

One cold start fills a cache (every program built: the miss); each case
then starts ampd on a copy of it and reads the daemon's log line "NAME: N
of M kernel programs from the cache DIR": a second start builds nothing
(the hit), and leaves no temporary file; entries with changed bytes,
truncated, with a garbage header or holding another program's entry are
built anew and replaced, so the start after takes every program again;
--cache-dir none keeps nothing; a directory that cannot be made is said
once and ampd serves; a PoCL cache of garbage (which aborted every start
inside PoCL, issue 36) does not stop the start. Every start must answer a
job. tests/test_prog_cache.c checks the keys and files without a device.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon  # noqa: E402

AMPCTL = os.environ["AMPCTL_BIN"]
TIMEOUT_S = 240
POLL_S = 0.05
CACHE_LINE = re.compile(r"(\d+) of (\d+) kernel programs from the cache (\S+)")


def log_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


class Run:
    """An ampd on cache dir (--cache-dir), its log in work/ampd-N.log."""
    count = 0

    def __init__(self, work, cache, env=None):
        Run.count += 1
        self.log_path = os.path.join(work, "ampd-%d.log" % Run.count)
        saved = dict(os.environ)
        os.environ.update(env or {})
        try:
            with open(self.log_path, "w", encoding="utf-8") as log:
                self.daemon = Daemon(("--cache-dir", cache), stderr=log)
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def served(self):
        """Waits until the devices are ready, runs a job, stops ampd; the
        log's text."""
        p = subprocess.run([AMPCTL, "-a", self.daemon.address, "health", "--wait", "2m"],
                           capture_output=True, text=True, timeout=TIMEOUT_S)
        expect(p.returncode == 0, "health: %s" % p.stderr)
        p = subprocess.run([AMPCTL, "-a", self.daemon.address, "reverse", "-o", "-", "cache"],
                           capture_output=True, text=True, timeout=TIMEOUT_S)
        expect(p.returncode == 0 and p.stdout == "ehcac", "reverse: %r %s" % (p.stdout, p.stderr))
        status = self.daemon.stop()
        expect(status == 0, "ampd exited %d" % status)
        return log_text(self.log_path)


def counts(log):
    """(from the cache, programs) of the log's cache line."""
    m = CACHE_LINE.search(log)
    expect(m is not None, "no cache line in the log:\n" + log)
    return int(m.group(1)), int(m.group(2))


def entries(cache):
    return sorted(os.listdir(cache))


def copy_of(seed, work):
    dst = tempfile.mkdtemp(dir=work)
    shutil.rmtree(dst)
    shutil.copytree(seed, dst)
    return dst


def test_miss_then_hit(seed, work):
    hits, programs = counts(seed["log"])
    expect(hits == 0 and programs > 0, "the first start built every program: %d of %d"
           % (hits, programs))
    expect(len(seed["entries"]) == programs, "one entry per program: %r" % seed["entries"])
    cache = copy_of(seed["dir"], work)
    log = Run(work, cache).served()
    expect(counts(log) == (programs, programs), "a second start builds nothing:\n" + log)
    expect("building it anew" not in log, log)


def test_no_temporary_left(seed, work):
    expect(all(re.fullmatch(r"[0-9a-f]{64}\.bin", e) for e in seed["entries"]),
           "only entries after a start: %r" % seed["entries"])


def damage(path, how):
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        if how == "bytes":
            f.seek(size // 2)
            b = f.read(1)
            f.seek(size // 2)
            f.write(bytes([b[0] ^ 0xFF]))
        elif how == "truncated":
            f.truncate(size // 3)
        elif how == "header":
            f.write(b"\x00garbage\xff" * 8)


def test_damaged_entries_rebuilt(seed, work):
    cache = copy_of(seed["dir"], work)
    names = entries(cache)
    expect(len(names) >= 4, "entries to damage: %r" % names)
    for name, how in zip(names, ("bytes", "truncated", "header")):
        damage(os.path.join(cache, name), how)
    # Another program's entry under a name: a mismatch, not that program.
    shutil.copyfile(os.path.join(cache, names[4 % len(names)]), os.path.join(cache, names[3]))
    log = Run(work, cache).served()
    hits, programs = counts(log)
    expect(hits == programs - 4, "four built anew:\n" + log)
    expect(log.count("building it anew") == 4, "each damaged entry said:\n" + log)
    expect(entries(cache) == names, "replaced, nothing left beside: %r" % entries(cache))
    log = Run(work, cache).served()
    expect(counts(log) == (programs, programs), "the replacements load:\n" + log)


def test_cache_off(seed, work):
    cache = os.path.join(work, "off")
    run = Run(work, "none")
    log = run.served()
    expect(CACHE_LINE.search(log) is None, "no cache line with --cache-dir none:\n" + log)
    expect(not os.path.exists(cache), "nothing made")


def test_unwritable_dir(seed, work):
    blocker = os.path.join(work, "a-file")
    with open(blocker, "w", encoding="ascii") as f:
        f.write("not a directory\n")
    log = Run(work, os.path.join(blocker, "cache")).served()
    said = [line for line in log.splitlines() if "cannot" in line and "kernel cache" in line]
    expect(len(said) == 1, "said once:\n" + log)
    hits, programs = counts(log)
    expect(hits == 0 and programs > 0, log)


def pocl_files(root):
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]


def test_damaged_pocl_cache(seed, work):
    """PoCL's own cache, filled by an ampd without ours, then garbage (a
    crash or a full disk mid-write): ampd with its cache and the unit's
    POCL_KERNEL_CACHE=0 still starts."""
    pocl = os.path.join(work, "pocl")
    env = {"POCL_CACHE_DIR": pocl}
    os.environ.pop("POCL_KERNEL_CACHE", None)
    Run(work, "none", env).served()
    env["POCL_KERNEL_CACHE"] = "0"   # as the unit sets it
    files = pocl_files(pocl)
    expect(files, "PoCL cached nothing in %s" % pocl)
    for path in files:
        size = os.path.getsize(path)
        with open(path, "wb") as f:
            f.write(b"\xde\xad" * (size // 2 + 1))
    # ampd's cache made under the unit's environment: a cold start, then
    # a warm one, both beside the damaged PoCL cache.
    cache = os.path.join(work, "pocl-damaged-cache")
    Run(work, cache, env).served()
    log = Run(work, cache, env).served()
    hits, programs = counts(log)
    expect(hits == programs, log)


def main():
    work = tempfile.mkdtemp(prefix="ampd-prog-cache-")
    try:
        seed_dir = os.path.join(work, "seed")
        t0 = time.monotonic()
        log = Run(work, seed_dir).served()
        print("cold start and stop: %.1f s" % (time.monotonic() - t0), flush=True)
        seed = {"dir": seed_dir, "log": log, "entries": entries(seed_dir)}
        return 0 if run_cases(module_cases(globals()), seed, work) == 0 else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
