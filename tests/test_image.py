# SPDX-License-Identifier: MIT
"""test_image.py: ampd's OCI image (deploy/container/Containerfile, built
by scripts/image.sh from this tree's Debian packages on a Debian 12 base
that mmdebstrap makes) runs and answers a job on PoCL.

Where the machine cannot build or run containers, it exits 77 (skipped)
with the reason: not root, podman, mmdebstrap or runc missing, no Debian
archive for the base, or a container that cannot start at all (checked
with the base alone first). Then it must work: the image builds, ampd in
it (as its non-root user) serves a reverse and lists its CPU device over
the host's network, and exits 0 on `podman stop`. The ASan pass skips it:
the image holds the packages' build, which the plain pass tests.
"""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from daemon_proc import free_port  # noqa: E402

SKIPPED = 77
SOURCE = os.environ.get("AMP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
WORK = os.path.join(os.path.dirname(os.path.abspath(os.environ["AMPD_BIN"])), "image")
AMPCTL = os.environ["AMPCTL_BIN"]
PODMAN = ["podman", "--storage-driver", "vfs", "--runtime", "runc"]
# Sandboxed machines refuse raising RLIMIT_NOFILE/NPROC to podman's defaults.
RUN = ["run", "--network=host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
TAG = "localhost/ampd:test"
BUILD_TIMEOUT_S = 540
START_TIMEOUT_S = 120
CALL_TIMEOUT_S = 60


def skip(why):
    print("SKIP " + why)
    return SKIPPED


def run(args, timeout):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def ampctl(address, *args):
    return run([AMPCTL, "--address", address, *args], CALL_TIMEOUT_S)


def main():
    if os.environ.get("ASAN_OPTIONS"):
        return skip("the sanitizer pass: the image holds the packages' build, tested plain")
    if os.geteuid() != 0:
        return skip("not root: podman here runs rootful")
    missing = [t for t in ("podman", "mmdebstrap", "runc") if not shutil.which(t)]
    if missing:
        return skip("%s not installed (scripts/deps.sh installs them)" % ", ".join(missing))
    image_sh = os.path.join(SOURCE, "scripts", "image.sh")
    p = run([image_sh, "--base-only", WORK], BUILD_TIMEOUT_S)
    if p.returncode != 0:
        return skip("no Debian 12 base (mmdebstrap or import failed): " + p.stderr[-400:])
    p = run(PODMAN + RUN + ["--rm", "localhost/ampd-base:bookworm", "true"], START_TIMEOUT_S)
    if p.returncode != 0:
        return skip("this machine cannot run containers: " + p.stderr[-400:])

    t0 = time.monotonic()
    p = run([image_sh, WORK, TAG], BUILD_TIMEOUT_S)
    print("image built in %.0f s" % (time.monotonic() - t0))
    if p.returncode != 0:
        print("FAIL scripts/image.sh: " + p.stderr[-2000:])
        return 1
    address = "127.0.0.1:%d" % free_port()
    p = run(PODMAN + RUN + ["-d", TAG, "--listen", address, "--tcp-require-token", "off"],
            START_TIMEOUT_S)
    if p.returncode != 0:
        print("FAIL podman run: " + p.stderr[-1000:])
        return 1
    cid = p.stdout.strip()
    failed = False
    try:
        for _ in range(START_TIMEOUT_S * 10):
            if ampctl(address, "health").stdout.strip() == "SERVING":
                break
            time.sleep(0.1)
        r = ampctl(address, "reverse", "-o", "-", "stressed")
        ok = r.returncode == 0 and r.stdout == "desserts"
        print("%s reverse in the container: %r" % ("ok  " if ok else "FAIL", r.stdout + r.stderr))
        failed |= not ok
        r = ampctl(address, "--json", "devices")
        ok = r.returncode == 0 and '"type":"cpu"' in r.stdout
        print("%s devices in the container: %s" % ("ok  " if ok else "FAIL", r.stdout.strip()))
        failed |= not ok
    finally:
        run(PODMAN + ["stop", "-t", "30", cid], START_TIMEOUT_S)
        status = run(PODMAN + ["inspect", cid, "--format", "{{.State.ExitCode}}"], 60).stdout.strip()
        logs = run(PODMAN + ["logs", cid], 60)
        run(PODMAN + ["rm", "-f", cid], 60)
    ok = status == "0"
    print("%s ampd in the container exited %s" % ("ok  " if ok else "FAIL", status))
    if not ok or failed:
        print((logs.stdout + logs.stderr)[-3000:])
    return 0 if ok and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
