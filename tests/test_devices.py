# SPDX-License-Identifier: MIT
"""test_devices.py: --devices, which OpenCL devices a real ampd opens.

This host has no GPU: PoCL's CPU device is the only one, and
POCL_DEVICES="basic pthread" makes two that their names tell apart
("basic-..." listed first, "pthread-..." second). Checks that auto and cpu
open the CPU device, that gpu fails the start naming --devices and the
devices there are, that an index opens that one of two (ampctl devices
lists it, numbered 0 among those opened), and that --device must name an
opened device, said so when it does not. Where POCL_DEVICES is unset,
ampd asks PoCL for both drivers itself: only the pthread device is listed,
and the basic one runs its batches of small jobs, right.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon  # noqa: E402

AMPD = os.environ.get("AMPD_BIN", "ampd")
AMPCTL = os.environ.get("AMPCTL_BIN", "ampctl")
CALL_TIMEOUT_S = 120
START_FAIL_TIMEOUT_S = 300      # a start that fails after building kernels, under ASan
EXIT_DEVICES = 1                # ampd's exit status when no device can serve
TWO_DEVICES = "basic pthread"   # PoCL: two CPU devices with different names
FIRST, SECOND = "basic-", "pthread-"


class pocl_devices:
    """POCL_DEVICES=value for the daemons started within."""

    def __init__(self, value):
        self.value = value

    def __enter__(self):
        self.was = os.environ.get("POCL_DEVICES")
        if self.value is None:
            os.environ.pop("POCL_DEVICES", None)
        else:
            os.environ["POCL_DEVICES"] = self.value

    def __exit__(self, *exc):
        if self.was is None:
            os.environ.pop("POCL_DEVICES", None)
        else:
            os.environ["POCL_DEVICES"] = self.was


def listed(args):
    """Starts ampd with args; ampctl's JSON device list; stops it cleanly."""
    d = Daemon(args)
    try:
        p = subprocess.run([AMPCTL, "--address", d.address, "--json", "devices"],
                           capture_output=True, timeout=CALL_TIMEOUT_S)
        expect(p.returncode == 0, "ampctl devices: %s" % p.stderr.decode(errors="replace"))
        return json.loads(p.stdout)
    finally:
        status = d.stop()
        expect(status == 0, "ampd exited %d" % status)


def failed_start(args):
    """Runs ampd with args, which must fail to start; (exit status, stderr)."""
    with tempfile.TemporaryDirectory() as d:   # ampd listens before it opens devices
        p = subprocess.run([AMPD, "--listen", "unix:" + os.path.join(d, "ampd.sock"), *args],
                           capture_output=True, timeout=START_FAIL_TIMEOUT_S)
    return p.returncode, p.stderr.decode(errors="replace")


def names(devs):
    return [(d["index"], d["name"].split("-")[0] + "-", d["type"]) for d in devs]


def test_auto_opens_the_cpu_where_there_is_no_gpu():
    devs = listed(["--devices", "auto"])
    expect([d["type"] for d in devs] == ["cpu"], "auto opened %r" % names(devs))


def test_cpu_opens_the_cpu():
    devs = listed(["--devices", "cpu"])
    expect([d["type"] for d in devs] == ["cpu"] and devs[0]["default"], "cpu: %r" % devs)
    # A CPU device runs its one kernel per family; a GPU names its tuned
    # variants (test_dev_tune covers the choice).
    expect(devs[0]["kernels"] == "cpu kernels", "kernels: %r" % devs[0].get("kernels"))


def test_gpu_fails_the_start_naming_what_exists():
    rc, err = failed_start(["--devices", "gpu"])
    expect(rc == EXIT_DEVICES, "exit %d, want %d: %s" % (rc, EXIT_DEVICES, err))
    expect("--devices gpu matches no device" in err and "0: " in err and "(cpu)" in err,
           "message: %s" % err)


def test_index_out_of_range_fails_the_start():
    rc, err = failed_start(["--devices", "cpu,1"])
    expect(rc == EXIT_DEVICES, "exit %d, want %d: %s" % (rc, EXIT_DEVICES, err))
    expect("--devices cpu,1: there is no device 1" in err, "message: %s" % err)


def test_indices_pick_one_of_two():
    with pocl_devices(TWO_DEVICES):
        both = listed(["--devices", "all"])
        expect(names(both) == [(0, FIRST, "cpu"), (1, SECOND, "cpu")], "all: %r" % names(both))
        second = listed(["--devices", "1"])
        expect(names(second) == [(0, SECOND, "cpu")], "1: %r" % names(second))
        first = listed(["--devices", "0"])
        expect(names(first) == [(0, FIRST, "cpu")], "0: %r" % names(first))


def test_pocl_basic_runs_the_batches_unlisted():
    with pocl_devices(None), tempfile.TemporaryFile("w+") as log:
        d = Daemon(["--devices", "all"], stderr=log)
        try:
            p = subprocess.run([AMPCTL, "--address", d.address, "--json", "devices"],
                               capture_output=True, timeout=CALL_TIMEOUT_S)
            devs = json.loads(p.stdout)
            expect(names(devs) == [(0, SECOND, "cpu")], "listed: %r" % names(devs))
            for data in (b"", b"x", b"batch", bytes(range(256)) * 8):
                p = subprocess.run([AMPCTL, "--address", d.address, "--device", "0",
                                    "reverse", "-i", "-", "-o", "-"], input=data,
                                   capture_output=True, timeout=CALL_TIMEOUT_S)
                expect(p.returncode == 0 and p.stdout == data[::-1],
                       "reverse of %d bytes: %r" % (len(data), p.stderr))
        finally:
            status = d.stop()
        expect(status == 0, "ampd exited %d" % status)
        log.seek(0)
        text = log.read()
        expect("its batches of small jobs run on " + FIRST in text, "log:\n" + text)


def test_default_device_must_be_opened():
    with pocl_devices(TWO_DEVICES):
        devs = listed(["--devices", "1,0", "--device", "1"])
        expect([(n, d["default"]) for n, d in zip(names(devs), devs)] ==
               [((0, FIRST, "cpu"), False), ((1, SECOND, "cpu"), True)], "%r" % devs)
        rc, err = failed_start(["--devices", "1", "--device", "1"])
        expect(rc == EXIT_DEVICES, "exit %d: %s" % (rc, err))
        expect("--device 1: no device 1 among the 1 ampd opened" in err and "--devices" in err,
               "message: %s" % err)
    rc, err = failed_start(["--devices", "cpu", "--device", "gpu"])
    expect(rc == EXIT_DEVICES, "exit %d: %s" % (rc, err))
    expect("--device gpu: no gpu device among those opened (--devices" in err, "message: %s" % err)


def test_no_opencl_names_what_to_install():
    env = dict(os.environ, OCL_ICD_VENDORS="/nonexistent")   # the ICD loader finds no driver
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([AMPD, "--listen", "unix:" + os.path.join(d, "ampd.sock")],
                           capture_output=True, text=True, timeout=60, env=env)
    expect(p.returncode == 1 and "no OpenCL platform found" in p.stderr
           and "pocl-opencl-icd" in p.stderr, "exit %d: %s" % (p.returncode, p.stderr))


def test_bad_list_is_a_usage_error():
    rc, err = failed_start(["--devices", "gpu,,1"])
    expect(rc == 2 and "--devices" in err, "exit %d: %s" % (rc, err))


if __name__ == "__main__":
    sys.exit(1 if run_cases(module_cases(globals())) else 0)
