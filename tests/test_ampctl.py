# SPDX-License-Identifier: MIT
"""test_ampctl.py: ampctl end to end against a real ampd.

Runs $AMPCTL_BIN as a script would: arguments, files, stdin and pipes;
checks stdout bytes, stderr messages and the documented exit codes
(0 ok, 1 refused by the daemon, 2 usage, 3 cannot connect, 4 local I/O).
Prints one line per check (support/cases.py).
"""
import fcntl
import grp
import json
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon  # noqa: E402

AMPCTL = os.environ.get("AMPCTL_BIN", "ampctl")
CALL_TIMEOUT_S = 300
EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_CONNECT, EXIT_IO = 0, 1, 2, 3, 4


class Ctx:
    daemon = None
    tmp = None


def run(args, stdin=b"", env_extra=None, address=True):
    """Runs ampctl; returns (exit code, stdout bytes, stderr text)."""
    env = dict(os.environ)
    env.pop("AMP_ADDRESS", None)
    if env_extra:
        env.update(env_extra)
    argv = [AMPCTL] + (["--address", Ctx.daemon.address] if address else []) + args
    p = subprocess.run(argv, input=stdin, capture_output=True, env=env, timeout=CALL_TIMEOUT_S)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def expect_rc(got, want, err=""):
    expect(got == want, "exit %d, want %d; stderr: %s" % (got, want, err.strip()))


def tmpfile(name, data=None):
    path = os.path.join(Ctx.tmp, name)
    if data is not None:
        with open(path, "wb") as f:
            f.write(data)
    return path


def pattern(n, seed=7):
    return bytes((i * 131 + seed + (i >> 8)) & 0xFF for i in range(n))


# --- reverse -----------------------------------------------------------------

def test_reverse_argument():
    rc, out, err = run(["reverse", "stressed"])
    expect_rc(rc, EXIT_OK, err)
    expect(out == b"desserts", "stdout %r" % out)  # exact bytes, no newline added


def test_permission_denied_names_the_group():
    """A user outside the socket's group is told which group to join."""
    if os.getuid() != 0:
        print("skip: needs root to run ampctl as another user")
        return
    nobody = 65534

    def drop():
        os.setgroups([])
        os.setgid(nobody)
        os.setuid(nobody)
    os.chmod(Ctx.daemon.dir, 0o755)   # the directory is passable; the socket (0660) is not
    p = subprocess.run([AMPCTL, "--address", Ctx.daemon.address, "health"], capture_output=True,
                       text=True, timeout=CALL_TIMEOUT_S, preexec_fn=drop)
    group = grp.getgrgid(os.stat(Ctx.daemon.sock_path).st_gid).gr_name
    expect(p.returncode == EXIT_CONNECT and "Permission denied" in p.stderr
           and "group %s" % group in p.stderr and "usermod -aG %s" % group in p.stderr,
           "exit %d: %s" % (p.returncode, p.stderr))


def progress_lines(cols):
    """ampctl's progress output for a 32 MiB stream with stderr on a
    pseudo-terminal of cols columns: the texts it drew, each redraw one,
    and how many lines it ended."""
    src = tmpfile("progress-in.bin", pattern(32 << 20))
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    env = dict(os.environ)
    env.pop("AMP_ADDRESS", None)
    p = subprocess.Popen([AMPCTL, "--address", Ctx.daemon.address, "--stream-threshold", "1M",
                          "transform", "--op", "add", "--value", "1", "-i", src, "-o",
                          tmpfile("progress-out.bin")], stderr=slave, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:   # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    expect(p.wait(timeout=CALL_TIMEOUT_S) == 0, "ampctl exit %r: %r" % (p.returncode, out))
    text = out.decode().replace("\x1b[K", "").replace("\r\n", "\n")
    return [t for t in re.split(r"[\r\n]", text) if t], text.count("\n")


def test_progress_fits_the_terminal():
    for cols in (40, 80):
        lines, ended = progress_lines(cols)
        expect(lines and ended == 1, "%d columns: %d lines ended: %r" % (cols, ended, lines))
        wide = [t for t in lines if len(t) > cols - 1]
        expect(not wide, "%d columns: drawn wider: %r" % (cols, wide))
        expect(all("MB/s" not in t for t in lines), "MB/s beside MiB: %r" % lines)
    expect(lines[-1].startswith("[") and "32.0/32.0 MiB 100%" in lines[-1]
           and "MiB/s" in lines[-1], "80 columns, last: %r" % lines[-1])


def test_json_refused_where_it_means_nothing():
    for cmd in (["reverse", "abc"], ["transform", "--op", "add", "--value", "1"], ["top"]):
        rc, out, err = run(["--json"] + cmd, stdin=b"xyz")
        expect_rc(rc, EXIT_USAGE, err)
        expect("--json" in err and cmd[0] in err and not out, "%s: %r %r" % (cmd[0], out, err))


def test_busy_poll_option():
    for us in ("0", "10000"):   # off, and the longest: the same answers
        rc, out, err = run(["--busy-poll", us, "reverse", "stressed"])
        expect_rc(rc, EXIT_OK, err)
        expect(out == b"desserts", "--busy-poll %s: stdout %r" % (us, out))
    for bad in ("10001", "-1", "x"):
        rc, out, err = run(["--busy-poll", bad, "reverse", "stressed"])
        expect_rc(rc, EXIT_USAGE, err)
        expect("--busy-poll" in err, "the usage error names the option: " + err)


def test_server_timing_option():
    """--server-timing: the job's own stage times from the daemon on
    stderr, the result unchanged; without it, nothing of them."""
    rc, out, err = run(["--server-timing", "reverse", "stressed"])
    expect_rc(rc, EXIT_OK, err)
    expect(out == b"desserts", "stdout %r" % out)
    line = [l for l in err.splitlines() if "server-timing:" in l]
    expect(len(line) == 1, "one server-timing line on stderr: %r" % err)
    for stage in ("request", "queue", "run", "deliver", "total"):
        expect(stage + ";dur=" in line[0], "no %s in %r" % (stage, line[0]))
    rc, out, err = run(["reverse", "stressed"])
    expect_rc(rc, EXIT_OK, err)
    expect("server-timing" not in err, "not asked, yet: %r" % err)


def test_reverse_file_to_file():
    data = pattern(100003) + b"\0tail"
    src, dst = tmpfile("in.bin", data), tmpfile("out.bin")
    rc, out, err = run(["reverse", "-i", src, "-o", dst])
    expect_rc(rc, EXIT_OK, err)
    expect(out == b"", "stdout not empty with -o")
    with open(dst, "rb") as f:
        expect(f.read() == data[::-1], "file contents differ")


def test_reverse_stdin():
    data = pattern(4097)
    rc, out, err = run(["reverse"], stdin=data)
    expect_rc(rc, EXIT_OK, err)
    expect(out == data[::-1], "stdin reverse differs")
    rc, out, err = run(["reverse", "-i", "-"], stdin=b"abc")
    expect_rc(rc, EXIT_OK, err)
    expect(out == b"cba", "'-i -' reverse gave %r" % out)
    rc, out, err = run(["reverse"], stdin=b"")
    expect_rc(rc, EXIT_OK, err)
    expect(out == b"", "empty input gave %r" % out)


def test_address_from_environment():
    rc, out, err = run(["reverse", "ab"], env_extra={"AMP_ADDRESS": Ctx.daemon.address},
                       address=False)
    expect_rc(rc, EXIT_OK, err)
    expect(out == b"ba", "stdout %r" % out)


# --- transform ---------------------------------------------------------------

def test_transform_add_and_range():
    data = pattern(1000)
    rc, out, err = run(["transform", "--op", "add", "--value", "200", "--offset", "10",
                        "--length", "100"], stdin=data)
    expect_rc(rc, EXIT_OK, err)
    want = data[:10] + bytes((b + 200) & 0xFF for b in data[10:110]) + data[110:]
    expect(out == want, "add over a range differs")


def test_transform_map_lut():
    table = bytes(255 - i for i in range(256))
    lut = tmpfile("lut.bin", table)
    data = pattern(777)
    rc, out, err = run(["transform", "--op", "map", "--lut", lut], stdin=data)
    expect_rc(rc, EXIT_OK, err)
    expect(out == bytes(table[b] for b in data), "map differs")


def test_transform_bad_lut_is_usage_error():
    lut = tmpfile("short.lut", b"x" * 255)
    rc, out, err = run(["transform", "--op", "map", "--lut", lut], stdin=b"abc")
    expect_rc(rc, EXIT_USAGE, err)
    expect("256" in err, "stderr does not explain the table size: %s" % err)


# --- hist ----------------------------------------------------------------------

def test_hist_json_has_counts():
    data = pattern(65536) + b"A" * 1000
    rc, out, err = run(["--json", "hist"], stdin=data)
    expect_rc(rc, EXIT_OK, err)
    obj = json.loads(out)
    for key in ("counts", "below", "above", "nan", "device"):
        expect(key in obj, "json lacks %s: %s" % (key, out[:200]))
    expect(len(obj["counts"]) == 256, "%d counts" % len(obj["counts"]))
    expect(sum(obj["counts"]) == len(data), "counts sum %d" % sum(obj["counts"]))
    expect(obj["counts"][ord("A")] == data.count(b"A"), "bin 'A' wrong")


def test_hist_piped_table():
    values = [0.5, 1.5, 1.6, 3.9, -1.0, 10.0]
    rc, out, err = run(["hist", "--type", "float32", "--bins", "4", "--range", "0:4"],
                       stdin=struct.pack("<6f", *values))
    expect_rc(rc, EXIT_OK, err)
    rows = [line.split() for line in out.decode().splitlines()]
    expect(len(rows) == 4, "rows: %r" % rows)
    expect([float(r[0]) for r in rows] == [0, 1, 2, 3], "bin_lo column %r" % rows)
    expect([float(r[1]) for r in rows] == [1, 2, 3, 4], "bin_hi column %r" % rows)
    expect([int(r[2]) for r in rows] == [1, 2, 0, 1], "counts %r" % rows)


def test_hist_bad_params_refused():
    rc, out, err = run(["hist", "--type", "float32", "--bins", "0", "--range", "0:1"],
                       stdin=b"")
    expect_rc(rc, EXIT_REFUSED, err)
    expect(err.startswith("ampctl: ") and "params.bins" in err, "stderr: %s" % err)
    rc, out, err = run(["hist", "--type", "int32", "--range", "5:1"], stdin=b"\0" * 8)
    expect_rc(rc, EXIT_REFUSED, err)
    # the socket path names the unary call's field, regions the pipeline step's
    expect("params.lo" in err or "steps[0].histogram.lo" in err, "stderr: %s" % err)


# --- fill ----------------------------------------------------------------------

def test_fill_text_and_binary():
    rc, out, err = run(["fill", "--type", "int32", "--count", "10", "--start", "5", "--step",
                        "3", "--format", "text"])
    expect_rc(rc, EXIT_OK, err)
    expect(out.decode().split() == [str(5 + 3 * k) for k in range(10)], "text %r" % out)
    rc, out, err = run(["fill", "--type", "int64", "--count", "4", "--start", "-2"])
    expect_rc(rc, EXIT_OK, err)
    expect(out == struct.pack("<4q", -2, -1, 0, 1), "binary %r" % out)
    dst = tmpfile("fill.txt")
    rc, out, err = run(["fill", "--type", "float32", "--count", "3", "--start", "0.5",
                        "--step", "0.25", "--format", "text", "-o", dst])
    expect_rc(rc, EXIT_OK, err)
    with open(dst) as f:
        expect([float(x) for x in f.read().split()] == [0.5, 0.75, 1.0], "float text")


def test_fill_bad_params_refused():
    rc, out, err = run(["fill", "--type", "int32", "--count", "100", "--tile", "1073741824"])
    expect_rc(rc, EXIT_REFUSED, err)
    expect(err.startswith("ampctl: ") and "tile" in err, "stderr: %s" % err)


# --- devices, status, health --------------------------------------------------------

def test_devices_table_and_json():
    rc, out, err = run(["devices"])
    expect_rc(rc, EXIT_OK, err)
    lines = out.decode().splitlines()
    expect(len(lines) >= 2 and "INDEX" in lines[0] and "*" in out.decode(), "table %r" % lines)
    rc, out, err = run(["--json", "devices"])
    expect_rc(rc, EXIT_OK, err)
    devs = json.loads(out)
    expect(isinstance(devs, list) and devs and devs[0]["name"], "json %r" % devs)
    expect(sum(1 for d in devs if d["default"]) == 1, "one default device")


def test_status_and_health():
    rc, out, err = run(["--json", "status"])
    expect_rc(rc, EXIT_OK, err)
    st = json.loads(out)
    expect(st["version"] and st["connections"] >= 1, "status %r" % st)
    rc, out, err = run(["health"])
    expect_rc(rc, EXIT_OK, err)
    expect(out == b"SERVING\n", "health printed %r" % out)


# --- text from a hostile daemon ----------------------------------------------------

def pb_varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def pb_bytes(field, data):
    return pb_varint(field << 3 | 2) + pb_varint(len(data)) + data


def pb_uint(field, n):
    return pb_varint(field << 3) + pb_varint(n)


# A title change, a screen clear, a bell and a CSI both as C0 ESC and as C1
# (U+009B, which UTF-8 terminals may act on): nothing of it may reach a
# terminal raw.
EVIL = "\x1b]0;pwned\x07\x1b[2J\u009b31m\x7f"
EVIL_RAW = ("\x1b", "\x07", "\u009b", "\x7f")


def fake_daemon(path):
    """A gRPC server on unix:path that answers amp.v1 as a hostile daemon
    would: control characters in every string it can send."""
    import grpc
    from concurrent import futures
    evil = EVIL.encode()
    device = pb_uint(1, 0) + pb_bytes(2, b"gpu" + evil) + pb_bytes(5, b"cpu" + evil) \
        + pb_uint(6, 1 << 30) + pb_uint(10, 1)
    replies = {
        "/amp.v1.Amp/ListDevices": pb_bytes(1, device),
        "/amp.v1.Amp/Status": pb_bytes(1, b"9.9" + evil[:20])
                              + pb_bytes(11, pb_bytes(1, b"q" + evil[:8]) + pb_uint(2, 1)),
    }

    def handler(method):
        def answer(request, context):
            if method in replies:
                return replies[method]
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "refused" + EVIL)
        return grpc.unary_unary_rpc_method_handler(answer)

    class Generic(grpc.GenericRpcHandler):
        def service(self, details):
            return handler(details.method)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[Generic()])
    server.add_insecure_port("unix:" + path)
    server.start()
    return server


def test_daemon_text_is_escaped():
    path = os.path.join(Ctx.tmp, "evil.sock")
    server = fake_daemon(path)
    try:
        checks = [(["devices"], EXIT_OK, "gpu\\x1b]0;pwned\\x07"),
                  (["--json", "devices"], EXIT_OK, "\\u001b]0;pwned\\u0007"),
                  (["status"], EXIT_OK, "9.9\\x1b]0;pwned\\x07\\x1b[2J\\xc2\\x9b"),
                  (["reverse", "abc"], EXIT_REFUSED, "refused\\x1b]0;pwned\\x07\\x1b[2J"
                                                    "\\xc2\\x9b31m\\x7f")]
        for args, want_rc, shown in checks:
            p = subprocess.run([AMPCTL, "--address", "unix:" + path] + args, capture_output=True,
                               timeout=CALL_TIMEOUT_S)
            text = (p.stdout + p.stderr).decode("utf-8", errors="strict")
            expect_rc(p.returncode, want_rc, text)
            expect(shown in text, "%s: %r lacks %r" % (args, text, shown))
            for c in EVIL_RAW:
                expect(c not in text, "%s printed %r raw: %r" % (args, c, text))
    finally:
        server.stop(None)
    # The real daemon's text is untouched.
    rc, out, err = run(["devices"])
    expect_rc(rc, EXIT_OK, err)
    expect("\\x" not in out.decode(), "devices escaped plain text: %r" % out)


def stage_calls():
    rc, out, err = run(["--json", "status"])
    expect_rc(rc, EXIT_OK, err)
    return json.loads(out)["stages"]


def test_bench_counts_and_json():
    before = stage_calls()
    rc, out, err = run(["--json", "bench", "-n", "200", "-c", "2", "-k", "transform", "-s", "1K"])
    expect_rc(rc, EXIT_OK, err)
    # Every call of the bench (and each connection's warm-up) went through
    # every stage the daemon times.
    after = stage_calls()
    names = ["request", "queue", "run", "deliver", "reply", "total"]
    # "stream" (Stream calls) shows once one has run.
    expect(sorted(set(after) - {"stream"}) == sorted(names), "stages %r" % after)
    for name in names:
        moved = after[name]["calls"] - before[name]["calls"]
        expect(moved >= 202, "stage %s counted %d calls, want >= 202" % (name, moved))
        s = after[name]
        expect(s["p50_us"] <= s["p90_us"] <= s["p99_us"], "stage %s %r" % (name, s))
    expect(after["total"]["sum_us"] >= after["run"]["sum_us"], "total %r" % after)
    b = json.loads(out)
    expect(b["calls"] == 200 and b["failed"] == 0 and b["connections"] == 2, "bench %r" % b)
    lat = b["latency_us"]
    expect(0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99.9"] <= lat["max"], "lat %r" % lat)
    # Many calls in flight per connection (started calls and amp_wait).
    rc, out, err = run(["--json", "bench", "-n", "500", "-c", "2", "-f", "16", "-k", "hist",
                        "-s", "2K"])
    expect_rc(rc, EXIT_OK, err)
    b = json.loads(out)
    expect(b["calls"] == 500 and b["failed"] == 0 and b["in_flight"] == 16, "bench %r" % b)
    rc, out, err = run(["bench", "-d", "0.3", "-k", "fill", "-s", "64"])
    expect_rc(rc, EXIT_OK, err)
    expect(b"calls/s" in out and b"p99.9" in out, "bench table %r" % out)
    # Refused calls are counted by error, and the exit status says so.
    rc, out, err = run(["--json", "--device", "7", "bench", "-n", "5"])
    expect_rc(rc, EXIT_REFUSED, err)
    b = json.loads(out)
    expect(b["calls"] == 0 and b["failed"] == 5 and sum(b["errors"].values()) == 5, "bench %r" % b)


# --- exit codes ------------------------------------------------------------------------

def test_usage_errors_exit_2():
    cases = [
        ["frobnicate"],
        [],
        ["reverse", "--bogus"],
        ["reverse", "a", "b"],
        ["reverse", "text", "-i", "file"],
        ["transform", "--value", "1"],
        ["transform", "--op", "add", "--value", "256"],
        ["transform", "--op", "rot13", "--value", "1"],
        ["hist", "--type", "int32"],
        ["hist", "--range", "1-2"],
        ["fill", "--type", "int32"],
        ["fill", "--type", "int32", "--count", "12x"],
        ["--timeout", "soon", "devices"],
        ["--priority", "urgent", "devices"],
        ["--priority", "", "devices"],
        ["--max-queue-time", "soon", "devices"],
        ["--max-queue-time", "0", "devices"],
        ["--max-queue-time", "5000000s", "devices"],
        ["bench", "-k", "sort"],
        ["bench", "-c", "0"],
        ["bench", "-d", "-1"],
        ["bench", "-k", "fill", "-s", "6"],
        ["bench", "-f", "0"],
        ["bench", "-k", "fill", "-f", "2"],
    ]
    for args in cases:
        rc, out, err = run(args)
        expect(rc == EXIT_USAGE, "%r: exit %d, want 2; stderr %s" % (args, rc, err.strip()))
        expect(err.startswith("ampctl"), "%r: stderr %r" % (args, err))
    rc, out, err = run(["--address", "nonsense", "reverse", "x"], address=False)
    expect_rc(rc, EXIT_USAGE, err)


def test_no_daemon_exits_3():
    missing = "unix:" + os.path.join(Ctx.tmp, "nobody.sock")
    rc, out, err = run(["--address", missing, "reverse", "x"], address=False)
    expect_rc(rc, EXIT_CONNECT, err)
    expect("nobody.sock" in err, "stderr: %s" % err)
    rc, out, err = run(["--address", missing, "health"], address=False)
    expect_rc(rc, EXIT_CONNECT, err)


def test_health_wait_outlasts_the_start():
    late = os.path.join(Ctx.tmp, "late.sock")
    argv = [AMPCTL, "--address", "unix:" + late, "health", "--wait", "%ds" % CALL_TIMEOUT_S]
    waiter = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(0.3)
        expect(waiter.poll() is None, "health --wait gave up before ampd started")
        d = Daemon(extra_args=("--listen", "unix:" + late))
        try:
            out, err = waiter.communicate(timeout=CALL_TIMEOUT_S)
        finally:
            d.stop()
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    expect_rc(waiter.returncode, EXIT_OK, err.decode(errors="replace"))
    expect(out == b"SERVING\n", "stdout %r" % out)


def test_health_wait_ends_at_its_deadline():
    missing = "unix:" + os.path.join(Ctx.tmp, "nobody.sock")
    start = time.monotonic()
    rc, out, err = run(["--address", missing, "health", "--wait", "300ms"], address=False)
    took = time.monotonic() - start
    expect_rc(rc, EXIT_CONNECT, err)
    expect("nobody.sock" in err, "stderr names the address: %s" % err)
    expect(took >= 0.3, "gave up after %.3f s, before its 300 ms" % took)
    rc, out, err = run(["health", "--wait", "2x"])
    expect_rc(rc, EXIT_USAGE, err)
    expect("--wait" in err, "the usage error names the option: " + err)


def test_local_io_errors_exit_4():
    rc, out, err = run(["reverse", "-i", os.path.join(Ctx.tmp, "missing.bin")])
    expect_rc(rc, EXIT_IO, err)
    expect("missing.bin" in err, "stderr: %s" % err)
    rc, out, err = run(["reverse", "x", "-o", os.path.join(Ctx.tmp, "no", "such", "dir")])
    expect_rc(rc, EXIT_IO, err)


def test_help_and_version():
    rc, out, err = run(["--help"])
    expect_rc(rc, EXIT_OK, err)
    text = out.decode()
    for word in ("reverse", "transform", "hist", "fill", "devices", "status", "health",
                 "Exit status"):
        expect(word in text, "--help lacks %s" % word)
    for cmd in ("reverse", "transform", "hist", "fill", "devices", "status", "health"):
        rc, out, err = run([cmd, "--help"])
        expect_rc(rc, EXIT_OK, err)
        expect(out.startswith(b"Usage: ampctl"), "%s --help: %r" % (cmd, out[:60]))
    rc, out, err = run(["--version"])
    expect_rc(rc, EXIT_OK, err)
    expect(out.startswith(b"ampctl "), "version %r" % out)


# --- pipeline ------------------------------------------------------------------

def test_pipeline_transform_then_hist():
    data = pattern(100003, seed=3)
    src, dst = tmpfile("pipe-in.bin", data), tmpfile("pipe-out.bin")
    rc, out, err = run(["pipeline", "-i", src, "-o", dst, "transform:add:3:10:1000", "hist",
                        "reverse"])
    expect_rc(rc, EXIT_OK, err)
    added = data[:10] + bytes((b + 3) & 0xFF for b in data[10:1010]) + data[1010:]
    with open(dst, "rb") as f:
        expect(f.read() == added[::-1], "data output is not the last data step's")
    lines = out.decode().splitlines()
    expect(len(lines) == 1, "one histogram line, got %r" % lines[:3])
    obj = json.loads(lines[0])
    want = [0] * 256
    for b in added:
        want[b] += 1
    expect(obj["step"] == 1 and obj["counts"] == want, "histogram of step 1 differs")


def test_pipeline_fill_reads_no_input():
    # stdin is left open and empty: a leading fill must not wait for it
    rc, out, err = run(["pipeline", "fill:int32:5:10:-2"])
    expect_rc(rc, EXIT_OK, err)
    expect(out == struct.pack("<5i", 10, 8, 6, 4, 2), "fill output %r" % out)
    dst = tmpfile("pipe-fill.bin")
    rc, out, err = run(["pipeline", "-o", dst, "fill:float32:4:0.5:1", "hist:float32:2:0:4"])
    expect_rc(rc, EXIT_OK, err)
    expect(json.loads(out)["counts"] == [2, 2], "hist of the fill: %s" % out)


def test_pipeline_usage_and_refusals():
    for args in (["pipeline"], ["pipeline", "bogus"], ["pipeline", "transform:add"],
                 ["pipeline", "transform:add:256"], ["pipeline", "hist:int64:4:0:1"],
                 ["pipeline", "reverse:1"], ["pipeline", "transform:add:1", "hist"]):
        rc, out, err = run(args, stdin=b"abc")
        expect_rc(rc, EXIT_USAGE, err)
        expect(err.startswith("ampctl: "), "%r: stderr %s" % (args, err))
    rc, out, err = run(["pipeline", "transform:add:1:5", "hist"], stdin=b"abc")
    expect_rc(rc, EXIT_USAGE, err)  # data and histograms both on stdout
    rc, out, err = run(["pipeline", "-o", tmpfile("pipe-refused.bin"), "reverse",
                        "hist:float32:4:1:0"], stdin=b"abcd")
    expect_rc(rc, EXIT_REFUSED, err)
    expect("steps[1].histogram" in err, "stderr: %s" % err)
    rc, out, err = run(["pipeline", "--help"])
    expect_rc(rc, EXIT_OK, err)
    expect(out.startswith(b"Usage: ampctl pipeline"), "help %r" % out[:40])


# --- streamed inputs (--stream-threshold) ------------------------------------------

STREAM_LEN = (5 << 19) + 333  # 2.5 MiB and a tail: several 1 MiB chunks
SMALL_THRESHOLD = "1M"


def stream_data():
    return pattern(STREAM_LEN, seed=29)


def test_stream_transform_file_and_pipe():
    data = stream_data()
    want = bytes((b + 7) & 0xFF for b in data)
    src, dst = tmpfile("stream-in.bin", data), tmpfile("stream-out.bin")
    args = ["--transport", "socket",
            "--stream-threshold", SMALL_THRESHOLD, "transform", "--op", "add", "--value", "7"]
    rc, out, err = run(args + ["-i", src, "-o", dst])
    expect_rc(rc, EXIT_OK, err)
    expect(err == "", "stderr not empty without a terminal: %r" % err)  # no progress bar
    with open(dst, "rb") as f:
        expect(f.read() == want, "streamed file output differs")
    rc, out, err = run(args, stdin=data)  # a pipe: size unknown, read incrementally
    expect_rc(rc, EXIT_OK, err)
    expect(out == want, "streamed pipe output differs")
    expect(err == "", "stderr: %r" % err)


def test_stream_reverse_file_and_pipe():
    data = stream_data()
    src = tmpfile("stream-rev.bin", data)
    rc, out, err = run(["--transport", "socket",
                        "--stream-threshold", SMALL_THRESHOLD, "reverse", "-i", src])
    expect_rc(rc, EXIT_OK, err)
    expect(out == data[::-1], "streamed reverse of a file differs")
    rc, out, err = run(["--transport", "socket",
                        "--stream-threshold", SMALL_THRESHOLD, "reverse"], stdin=data)
    expect_rc(rc, EXIT_OK, err)
    expect(out == data[::-1], "streamed reverse of a pipe differs")


def test_stream_hist_matches_unary():
    data = stream_data() + b"Z" * 70000
    rc, out, err = run(["--transport", "socket",
                        "--json", "--stream-threshold", SMALL_THRESHOLD, "hist"], stdin=data)
    expect_rc(rc, EXIT_OK, err)
    streamed = json.loads(out)
    rc, out, err = run(["--transport", "socket", "--json", "hist"], stdin=data)  # unary
    expect_rc(rc, EXIT_OK, err)
    unary = json.loads(out)
    want = [0] * 256
    for b in data:
        want[b] += 1
    expect(streamed["counts"] == want, "streamed counts differ from the data")
    expect(unary["counts"] == want, "unary counts differ from the data")


def test_stream_refusal_exits_1():
    src = tmpfile("stream-f32.bin", stream_data()[:-1])  # whole float32 elements
    rc, out, err = run(["--transport", "socket",
                        "--stream-threshold", "0", "hist", "--type", "float32", "--bins", "0",
                        "--range", "0:1", "-i", src])
    expect_rc(rc, EXIT_REFUSED, err)
    expect(err.startswith("ampctl: ") and "bins" in err, "stderr: %s" % err)


def test_stream_pipeline():
    data = stream_data()
    src, dst = tmpfile("stream-pipe.bin", data), tmpfile("stream-pipe.out")
    rc, out, err = run(["--transport", "socket",
                        "--stream-threshold", SMALL_THRESHOLD, "pipeline", "-i", src, "-o", dst,
                        "hist", "transform:xor:15", "hist"])
    expect_rc(rc, EXIT_OK, err)
    xored = bytes(b ^ 15 for b in data)
    with open(dst, "rb") as f:
        expect(f.read() == xored, "streamed pipeline output differs")
    hists = [json.loads(line) for line in out.decode().splitlines()]
    expect([h["step"] for h in hists] == [0, 2], "steps %r" % [h["step"] for h in hists])
    for h, d in zip(hists, (data, xored)):
        want = [0] * 256
        for b in d:
            want[b] += 1
        expect(h["counts"] == want, "streamed histogram of step %d differs" % h["step"])


def test_stream_pipeline_with_reverse_from_a_pipe():
    # A reverse holds the whole input on the device: ampctl reads a pipe
    # whole to learn its length first (it sent none, and the daemon refused
    # the transform's range against a length of 0).
    data = stream_data()
    dst = tmpfile("stream-pipe-rev.out")
    rc, out, err = run(["--transport", "socket", "--stream-threshold", SMALL_THRESHOLD,
                        "pipeline", "-o", dst, "transform:xor:5", "reverse"], stdin=data)
    expect_rc(rc, EXIT_OK, err)
    with open(dst, "rb") as f:
        expect(f.read() == bytes(b ^ 5 for b in data)[::-1], "streamed xor+reverse differs")


def run_with_tty_stderr(args, src):
    """Runs ampctl with stderr on a pseudo-terminal; returns (exit code, stderr text)."""
    import pty
    master, slave = pty.openpty()
    argv = [AMPCTL, "--address", Ctx.daemon.address] + args
    with open(src, "rb") as stdin:
        p = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 4096)
        except OSError:  # EIO: every writer of the terminal is gone
            break
        if not b:
            break
        chunks.append(b)
    os.close(master)
    rc = p.wait(timeout=CALL_TIMEOUT_S)
    return rc, b"".join(chunks).decode(errors="replace")


def test_stream_progress_only_on_a_terminal():
    data = stream_data()
    src, dst = tmpfile("stream-tty.bin", data), tmpfile("stream-tty.out")
    args = ["--transport", "socket", "--stream-threshold", SMALL_THRESHOLD, "transform", "--op",
            "xor", "--value", "1", "-i", src, "-o", dst]
    rc, err = run_with_tty_stderr(args, src)
    expect_rc(rc, EXIT_OK, err)
    expect("MiB/s" in err and "100%" in err, "no progress bar on a terminal: %r" % err)
    with open(dst, "rb") as f:
        expect(f.read() == bytes(b ^ 1 for b in data), "output differs with a progress bar")
    rc, err = run_with_tty_stderr(["--no-progress"] + args, src)
    expect_rc(rc, EXIT_OK, err)
    expect(err == "", "--no-progress still drew: %r" % err)
    rc, err = run_with_tty_stderr(args[:2] + args[4:], src)  # default threshold: no stream
    expect_rc(rc, EXIT_OK, err)
    expect(err == "", "a unary call drew a progress bar: %r" % err)


def test_stream_options_checked():
    rc, out, err = run(["--stream-threshold", "lots", "reverse", "x"])
    expect_rc(rc, EXIT_USAGE, err)
    expect("--stream-threshold" in err, "stderr: %s" % err)
    src = tmpfile("stream-same.bin", b"abc" * 100)
    rc, out, err = run(["--transport", "socket", "--stream-threshold", "0", "transform", "--op",
                        "add", "--value", "1", "-i", src, "-o", src])
    expect_rc(rc, EXIT_USAGE, err)
    expect("input file" in err, "stderr: %s" % err)
    with open(src, "rb") as f:
        expect(f.read() == b"abc" * 100, "the input was overwritten")


def test_transports_give_identical_bytes():
    """Regions (shm) against the socket path (socket, and auto, which
    takes it for one job), for a file and a pipe, one step and a pipeline."""
    data = stream_data()
    src = tmpfile("transport-in.bin", data)
    jobs = [["transform", "--op", "xor", "--value", "90"], ["reverse"], ["--json", "hist"],
            ["pipeline", "transform:add:3", "reverse", "hist"]]
    for job in jobs:
        outs = {}
        for transport in ("auto", "shm", "socket"):
            for how in ("file", "pipe"):
                pre = ["--transport", transport] + (job[:1] if job[0] == "--json" else [])
                cmd = job[1:] if job[0] == "--json" else job
                if cmd[0] == "pipeline":
                    dst = tmpfile("transport-%s-%s.bin" % (transport, how))
                    cmd = cmd[:1] + ["-o", dst] + cmd[1:]
                if how == "file" or cmd[0] == "pipeline":
                    rc, out, err = run(pre + cmd[:1] + ["-i", src] + cmd[1:])
                else:
                    rc, out, err = run(pre + cmd, stdin=data)
                expect_rc(rc, EXIT_OK, err)
                if cmd[0] == "pipeline":
                    with open(dst, "rb") as f:
                        out += f.read()
                outs[(transport, how)] = out
        first = outs[("socket", "file")]
        for k, v in outs.items():
            expect(v == first, "%s: %s output differs from the socket's" % (" ".join(job), k))
    # fill has no input; its binary output comes through a region too.
    fills = {}
    for transport in ("auto", "shm", "socket"):
        rc, out, err = run(["--transport", transport, "fill", "--type", "float32", "--count",
                            "300000", "--start", "1.5", "--step", "0.25", "--format", "binary"])
        expect_rc(rc, EXIT_OK, err)
        fills[transport] = out
    expect(len(fills["socket"]) == 1200000, "fill output of %d bytes" % len(fills["socket"]))
    expect(fills["auto"] == fills["socket"] == fills["shm"], "fill output differs by transport")


def test_transport_shm_needs_a_unix_socket():
    rc, out, err = run(["--address", "127.0.0.1:1", "--transport", "shm", "reverse", "abc"],
                       address=False)
    expect_rc(rc, EXIT_CONNECT, err)   # reverse TEXT is one call: it only fails to connect
    rc, out, err = run(["--transport", "sideways", "reverse", "abc"])
    expect_rc(rc, EXIT_USAGE, err)
    expect("--transport" in err, "stderr: %s" % err)


# --- conventions: options anywhere, suggestions, terminals, durations, addresses ----

def test_common_options_after_the_command():
    data = pattern(5000) + b"Q" * 77
    src = tmpfile("conv-hist.bin", data)
    rc, before, err = run(["--json", "hist", "-i", src])
    expect_rc(rc, EXIT_OK, err)
    for args in (["hist", "--json", "-i", src], ["hist", "-i", src, "-j"],
                 ["hist", "-i", src, "--js"], ["hist", "--timeout=2s", "-i", src, "--json"]):
        rc, out, err = run(args)
        expect_rc(rc, EXIT_OK, err)
        expect(out == before, "%r printed %r" % (args, out[:80]))
    # A value-taking common option after the command, and the address too.
    rc, out, err = run(["reverse", "abc", "--address", Ctx.daemon.address, "-t", "5s"],
                       address=False)
    expect_rc(rc, EXIT_OK, err)
    expect(out == b"cba", "reverse gave %r" % out)
    # The command's own option of the same letter wins: bench -d is its duration.
    rc, out, err = run(["bench", "-d", "0.2", "-k", "fill", "--json"])
    expect_rc(rc, EXIT_OK, err)
    expect(json.loads(out)["calls"] > 0, "bench %r" % out)
    # `--` ends the options: what follows is TEXT, even "--json".
    rc, out, err = run(["reverse", "--", "--json"])
    expect_rc(rc, EXIT_OK, err)
    expect(out == b"nosj--", "reverse -- --json gave %r" % out)
    # Values of a command's options are not taken for options.
    dst = tmpfile("-j")
    rc, out, err = run(["reverse", "xy", "-o", dst])
    expect_rc(rc, EXIT_OK, err)
    with open(dst, "rb") as f:
        expect(f.read() == b"yx", "-o -j wrote elsewhere")
    # Bad values and unknown options after the command are usage errors.
    for args in (["devices", "--timeout", "soon"], ["devices", "--bogus"],
                 ["reverse", "x", "--transport"]):
        rc, out, err = run(args)
        expect_rc(rc, EXIT_USAGE, err)
    rc, out, err = run(["status", "--version"])
    expect_rc(rc, EXIT_OK, err)
    expect(out.startswith(b"ampctl "), "--version after a command: %r" % out)


def test_mistyped_command_suggests():
    for typed, want in (("revrese", "reverse"), ("hsit", "hist"), ("stat", "status"),
                        ("devcies", "devices"), ("transfrom", "transform")):
        rc, out, err = run([typed, "x"])
        expect_rc(rc, EXIT_USAGE, err)
        expect("did you mean '%s'?" % want in err, "%s: stderr %s" % (typed, err))
    rc, out, err = run(["help", "pipline"])
    expect_rc(rc, EXIT_USAGE, err)
    expect("did you mean 'pipeline'?" in err, "stderr %s" % err)
    rc, out, err = run(["zzzzzz"])
    expect_rc(rc, EXIT_USAGE, err)
    expect("unknown command 'zzzzzz'" in err and "did you mean" not in err, "stderr %s" % err)


def test_mistyped_option_suggests():
    for args, want in ((["reverse", "--ouput", "x", "ab"], "--output"),
                       (["--adress", "unix:/x", "health"], "--address"),
                       (["fill", "--formt", "binary"], "--format"),
                       (["status", "--jsn"], "--json"),
                       (["devices", "--timout", "1s"], "--timeout")):
        rc, out, err = run(args)
        expect_rc(rc, EXIT_USAGE, err)
        expect("did you mean '%s'?" % want in err, "%s: stderr %s" % (args, err))
    # Far from every option, or a known one short of its value: no guess.
    for args in (["reverse", "--zzzzzz", "ab"], ["reverse", "--output"]):
        rc, out, err = run(args)
        expect_rc(rc, EXIT_USAGE, err)
        expect("did you mean" not in err, "%s: stderr %s" % (args, err))


def test_timeout_durations():
    for value in ("500ms", "2s", "1m", "1.5s", "3000", "0"):
        rc, out, err = run(["--timeout", value, "reverse", "ab"])
        expect_rc(rc, EXIT_OK, err)
        expect(out == b"ba", "--timeout %s: %r" % (value, out))
    for value in ("2x", "-1s", "s", "1e3", "0x10", "5000h", ""):
        rc, out, err = run(["--timeout", value, "devices"])
        expect_rc(rc, EXIT_USAGE, err)
        expect("--timeout" in err, "%r: stderr %s" % (value, err))
    rc, out, err = run(["--help"], address=False)
    expect("a bare number is milliseconds" in out.decode(), "--help does not say bare = ms")


def test_timeout_covers_connecting():
    """A listener whose accept queue is full never takes the connection."""
    import socket
    import time
    path = os.path.join(Ctx.tmp, "full.sock")
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsock.bind(path)
    lsock.listen(0)
    fillers = []
    try:
        for _ in range(8):  # fill the queue: later connects would block
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.setblocking(False)
            try:
                c.connect(path)
            except (BlockingIOError, OSError):
                c.close()
                break
            fillers.append(c)
        t0 = time.monotonic()
        rc, out, err = run(["--address", "unix:" + path, "--timeout", "300ms", "health"],
                           address=False)
        took = time.monotonic() - t0
    finally:
        for c in fillers:
            c.close()
        lsock.close()
    expect_rc(rc, EXIT_CONNECT, err)
    expect(took < 10, "connecting took %.1f s with --timeout 300ms" % took)


def test_url_addresses_say_what_to_write():
    cases = [("http://localhost:50051", "write localhost:50051"),
             ("https://example.com:443/", "write example.com:443"),
             ("grpc://10.0.0.1:7000", "write 10.0.0.1:7000"),
             ("http://localhost", "write localhost:PORT"),
             ("unix://run/ampd.sock", "unix:///run/ampd.sock")]
    for addr, hint in cases:
        rc, out, err = run(["--address", addr, "status"], address=False)
        expect_rc(rc, EXIT_USAGE, err)
        expect(hint in err, "%s: stderr %s" % (addr, err))
    rc, out, err = run(["status", "-a", "http://h:1"], address=False)  # after the command too
    expect_rc(rc, EXIT_USAGE, err)
    expect("write h:1" in err, "stderr %s" % err)


def run_on_tty(args, stdin=b""):
    """Runs ampctl with stdout on a pseudo-terminal; returns (exit code,
    terminal bytes, stderr text). The terminal is raw, so its bytes are
    exactly what ampctl wrote."""
    import pty
    import tty
    master, slave = pty.openpty()
    tty.setraw(slave)
    argv = [AMPCTL, "--address", Ctx.daemon.address] + args
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    p.stdin.write(stdin)
    p.stdin.close()
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:  # EIO: every writer of the terminal is gone
            break
        if not b:
            break
        chunks.append(b)
    os.close(master)
    err = p.stderr.read().decode(errors="replace")
    rc = p.wait(timeout=CALL_TIMEOUT_S)
    return rc, b"".join(chunks), err


def test_terminal_text_gets_a_newline():
    rc, out, err = run_on_tty(["reverse", "hello"])
    expect_rc(rc, EXIT_OK, err)
    expect(out == b"olleh\n", "tty got %r" % out)
    rc, out, err = run_on_tty(["reverse"], stdin=b"\nabc")  # already ends a line
    expect_rc(rc, EXIT_OK, err)
    expect(out == b"cba\n", "tty got %r" % out)
    rc, out, err = run_on_tty(["transform", "--op", "xor", "--value", "32"], stdin=b"ampd")
    expect_rc(rc, EXIT_OK, err)
    expect(out == b"AMPD\n", "tty got %r" % out)
    rc, out, err = run_on_tty(["reverse", "hello", "-o", "-"])  # -o -: exact bytes
    expect_rc(rc, EXIT_OK, err)
    expect(out == b"olleh", "tty with -o - got %r" % out)
    rc, out, err = run(["reverse", "hello"])  # a pipe: exact bytes
    expect(out == b"olleh", "pipe got %r" % out)


def test_terminal_refuses_binary_output():
    data = pattern(3000)
    src = tmpfile("tty-bin.bin", data)
    jobs = [["reverse", "-i", src],
            ["transform", "--op", "add", "--value", "1", "-i", src],
            ["fill", "--type", "int32", "--count", "8", "--format", "binary"],
            ["pipeline", "-i", src, "transform:xor:3"],
            ["--transport", "socket", "--stream-threshold", "1K", "reverse", "-i", src],
            ["--transport", "shm", "reverse", "-i", src]]
    for args in jobs:
        rc, out, err = run_on_tty(args)
        expect_rc(rc, EXIT_USAGE, err)
        expect(out == b"", "%r wrote %d bytes to the terminal" % (args, len(out)))
        expect("terminal" in err and "-o -" in err, "%r: stderr %s" % (args, err))
        rc, out, err = run_on_tty(args + ["-o", "-"])
        expect_rc(rc, EXIT_OK, err)
        expect(len(out) >= 32, "%r -o - wrote %d bytes" % (args, len(out)))
    # Text outputs are not data: histograms and status still print.
    rc, out, err = run_on_tty(["hist", "-i", src])
    expect_rc(rc, EXIT_OK, err)
    rc, out, err = run_on_tty(["status"])
    expect_rc(rc, EXIT_OK, err)
    expect(b"version" in out.lower(), "status on a tty: %r" % out[:80])
    rc, out, err = run_on_tty(["fill", "--type", "int32", "--count", "3", "--start", "0",
                               "--step", "1"])  # fill picks text for a terminal
    expect_rc(rc, EXIT_OK, err)
    expect(out.split() == [b"0", b"1", b"2"], "fill on a tty: %r" % out)


def bash_complete(line):
    """Completes line (the cursor at its end) with the generated script;
    returns COMPREPLY's words."""
    p = subprocess.run([AMPCTL, "completion", "bash"], capture_output=True, timeout=60)
    expect_rc(p.returncode, EXIT_OK, p.stderr.decode())
    words = line.split(" ")
    script = p.stdout.decode() + (
        "\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\n_ampctl\nprintf '%%s\\n' \"${COMPREPLY[@]}\"\n"
        % (" ".join("'%s'" % w for w in words), len(words) - 1))
    r = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, timeout=60)
    expect(r.returncode == 0, "bash: %s" % r.stderr.decode())
    return r.stdout.decode().split()


def test_bash_completion_from_the_tables():
    commands = ["reverse", "transform", "hist", "fill", "pipeline", "devices", "status",
                "health", "bench", "completion", "top"]
    expect(sorted(bash_complete("ampctl ")) == sorted(commands), "commands")
    expect(bash_complete("ampctl re") == ["reverse"], "re")
    expect(bash_complete("ampctl help pi") == ["pipeline"], "help pi")
    got = bash_complete("ampctl transform --")
    for opt in ("--op", "--lut", "--value", "--json", "--timeout", "--address"):
        expect(opt in got, "transform -- lacks %s: %r" % (opt, got))
    expect("--bins" not in got, "transform offers hist's --bins")
    expect(bash_complete("ampctl --json hist --c") == ["--clamp"], "hist --c")
    expect(bash_complete("ampctl hist -i ") == [], "a file comes after -i")  # bash's default
    # Every long option of every command's --help is offered.
    for cmd in commands:
        rc, out, err = run([cmd, "--help"], address=False)
        offered = bash_complete("ampctl %s --" % cmd)
        for opt in set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", out.decode())):
            if opt != "--stream-threshold":  # named in prose, a common option: offered too
                expect(opt in offered, "%s --help names %s, completion lacks it" % (cmd, opt))


def test_bash_completion_of_values():
    """Options whose value is one of a set complete its words (the parser's
    own table, ampctl/choice.h); other values stay file names."""
    cases = {
        "ampctl transform --op ": ["add", "xor", "and", "or", "set", "map"],
        "ampctl transform --op x": ["xor"],
        "ampctl --transport ": ["auto", "shm", "socket"],
        "ampctl --priority h": ["high"],
        "ampctl reverse --priority n": ["normal"],
        "ampctl bench -k ": ["reverse", "transform", "hist", "fill"],
        "ampctl bench --kind f": ["fill"],
        "ampctl fill --format t": ["text"],
        "ampctl hist --type u": ["uint8", "uint32"],
        "ampctl fill --type f": ["float32"],
    }
    for line, want in cases.items():
        got = bash_complete(line)
        expect(sorted(got) == sorted(want), "%r: %r, not %r" % (line, got, want))
    expect(bash_complete("ampctl hist -i u") == [], "a file comes after -i")
    # Each word the completion offers is one the parser takes.
    for op in bash_complete("ampctl transform --op "):
        rc, _, err = run(["transform", "--op", op, "--help"], address=False)
        expect_rc(rc, EXIT_OK, err)


# --- -o FILE appears whole or not at all ----------------------------------------

def leftovers(name):
    return [f for f in os.listdir(Ctx.tmp) if f.startswith(name + ".ampctl-")]


def test_failed_stream_leaves_output_as_it_was():
    src = tmpfile("whole-in.bin", pattern(4096))
    keep = tmpfile("whole-keep.bin", b"earlier result\n")
    rc, _, err = run(["--stream-threshold", "1", "--device", "7", "transform", "--op", "xor",
                      "--value", "1", "-i", src, "-o", keep])
    expect_rc(rc, EXIT_REFUSED, err)
    with open(keep, "rb") as f:
        expect(f.read() == b"earlier result\n", "a failed stream changed its -o file")
    rc, _, err = run(["--stream-threshold", "1", "--device", "7", "transform", "--op", "xor",
                      "--value", "1", "-i", src, "-o", tmpfile("whole-new.bin")])
    expect_rc(rc, EXIT_REFUSED, err)
    expect(not os.path.exists(tmpfile("whole-new.bin")), "a failed stream created its -o file")
    expect(not leftovers("whole-keep.bin") and not leftovers("whole-new.bin"),
           "temporaries left: %r" % os.listdir(Ctx.tmp))
    rc, _, err = run(["--stream-threshold", "1", "transform", "--op", "xor", "--value", "1",
                      "-i", src, "-o", keep])
    expect_rc(rc, EXIT_OK, err)
    with open(keep, "rb") as f:
        expect(f.read() == bytes(b ^ 1 for b in pattern(4096)), "the result")
    rc, _, err = run(["reverse", "abc", "-o", os.devnull])   # not a regular file: in place
    expect_rc(rc, EXIT_OK, err)


def test_interrupted_stream_leaves_no_file():
    fifo = tmpfile("whole-fifo")
    os.mkfifo(fifo)
    out = tmpfile("whole-interrupted.bin")
    env = dict(os.environ)
    env.pop("AMP_ADDRESS", None)
    p = subprocess.Popen([AMPCTL, "--address", Ctx.daemon.address, "--no-progress",
                          "--stream-threshold", "64K", "transform", "--op", "add", "--value",
                          "1", "-i", fifo, "-o", out],
                         env=env, stderr=subprocess.PIPE)
    with open(fifo, "wb") as w:
        w.write(pattern(1 << 20))   # past --stream-threshold: the stream is under way
        w.flush()
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while not leftovers("whole-interrupted.bin"):
            expect(time.monotonic() < deadline and p.poll() is None,
                   "no temporary beside the output (%r)" % os.listdir(Ctx.tmp))
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=CALL_TIMEOUT_S)
    expect(p.returncode == -signal.SIGINT, "exit %r after SIGINT" % p.returncode)
    expect(not os.path.exists(out) and not leftovers("whole-interrupted.bin"),
           "an interrupted stream left %r" % os.listdir(Ctx.tmp))


def main():
    Ctx.tmp = tempfile.mkdtemp(prefix="ampctl-test-")
    Ctx.daemon = Daemon()
    try:
        failed = run_cases(module_cases(globals()))
    finally:
        status = Ctx.daemon.stop()
        subprocess.run(["rm", "-rf", Ctx.tmp])
    if status != 0:
        failed += 1
        print("FAIL ampd exited with status %d" % status)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
