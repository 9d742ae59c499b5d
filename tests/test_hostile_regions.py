# SPDX-License-Identifier: MIT
"""test_hostile_regions.py: a local client attacking through the region
socket (issue 33 items 1 and 3), over real sockets against a real ampd.

- A sealed sparse memfd registered as a region makes ampd commit nothing:
  the memfd stays unallocated and ampd's RSS does not grow, while the
  pages a client did write are mapped in (what keeps regions fast).
- One uid's regions are bounded by --max-client-region-bytes: past it a
  REGISTER is refused naming the limit, while another uid registers and
  runs a job through its own region; the charge returns when the client
  closes.
- Descriptors waiting on the region socket are capped per uid.
- Under ulimit -n 256, one uid opening region connections that hold
  descriptors never takes the daemon's reserve: its descriptor count stays
  below the limit minus the reserve, and another uid's device job (a
  kernel load, which on the old code failed and aborted ampd) is served;
  the descriptors return when the client goes.

The other uid is a child that drops to uid 65534 when the test runs as
root; otherwise that part runs as the test's own uid.
"""
import fcntl
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon, vm_rss  # noqa: E402
from region_line import ask, region_socket  # noqa: E402

SOURCE = os.environ.get("AMP_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AMPCTL = os.environ.get("AMPCTL_BIN", "ampctl")
MIB = 1 << 20
SPARSE_BYTES = 1 << 30
CLIENT_SHARE = 3 * SPARSE_BYTES // 2       # --max-client-region-bytes: one sparse region fits
SETTLE_S = 2.0        # what the old code populated in this time: hundreds of MiB
RSS_SLACK_MIB = 32    # ampd's own RSS moves this much without any region
WRITTEN_MIB = 64      # pages a client wrote: mapped in by the registration
NOBODY = 65534
NOFILE = 256          # the ulimit -n
RESERVE = 64          # fd_reserve.h's FD_RESERVE_COUNT
PEER_FDS_MAX = 8      # region_sock.c's REGION_SOCK_PEER_FDS_MAX
FDS_PER_CONN = 4      # what the attacker attaches to each line it never ends
JOB_BYTES = MIB       # a device job (above --host-max-bytes)
TIMEOUT_S = 60


def other_uid():
    """preexec_fn for a child of another uid, or None when not root."""
    if os.getuid() != 0:
        return None

    def drop():
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    return drop


def sealed_memfd(size):
    fd = os.memfd_create("hostile", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    return fd


def allocated(fd):
    return os.fstat(fd).st_blocks * 512


def rss_mib(d):
    return vm_rss(d.proc.pid) // (1024 * 1024)


def open_fds(d):
    return len(os.listdir("/proc/%d/fd" % d.proc.pid))


def fd_names(d):
    """What ampd's descriptors are, for a failure's message."""
    fds = sorted(os.listdir("/proc/%d/fd" % d.proc.pid), key=int)
    return " ".join("%s=%s" % (f, os.readlink("/proc/%d/fd/%s" % (d.proc.pid, f))) for f in fds)


def wait_for(cond, what):
    """what: the failure's message, or a function that makes it then."""
    deadline = time.monotonic() + TIMEOUT_S
    while not cond():
        if time.monotonic() >= deadline:
            raise AssertionError(what() if callable(what) else what)
        time.sleep(0.05)


def shared_daemon(args=(), preexec_fn=None):
    d = Daemon(["--socket-mode", "0666", *args], preexec_fn=preexec_fn)
    os.chmod(d.dir, 0o755)   # the other uid reaches the sockets
    return d


def ampctl_job(d, transport, preexec_fn):
    """A transform of JOB_BYTES by another uid, checked against Python."""
    data = os.urandom(JOB_BYTES)
    p = subprocess.run([AMPCTL, "--address", d.address, "--timeout", "%ds" % TIMEOUT_S,
                        "--transport", transport, "transform", "--op", "xor", "--value", "90"],
                       input=data, capture_output=True, preexec_fn=preexec_fn,
                       timeout=TIMEOUT_S)
    expect(p.returncode == 0, "ampctl: exit %d: %s" % (p.returncode, p.stderr.decode()))
    expect(p.stdout == bytes(b ^ 90 for b in data), "ampctl: wrong result")


# --- item 1: region memory ----------------------------------------------------------

def test_sparse_region_not_committed():
    d = shared_daemon(["--max-client-region-bytes", str(CLIENT_SHARE)])
    try:
        rsock = region_socket(d, TIMEOUT_S)
        rss0 = rss_mib(d)
        sparse = sealed_memfd(SPARSE_BYTES)
        answer = ask(rsock, b"REGISTER\n", [sparse])
        expect(answer == "OK 1 %d" % SPARSE_BYTES, answer)
        time.sleep(SETTLE_S)
        expect(allocated(sparse) == 0,
               "ampd allocated %d MiB of a sparse memfd" % (allocated(sparse) // MIB))
        grown = rss_mib(d) - rss0
        expect(grown < RSS_SLACK_MIB, "ampd's RSS grew %d MiB for a sparse region" % grown)
        # pages the client wrote are mapped in (jobs find them ready), no others
        written = sealed_memfd(SPARSE_BYTES // 4)
        with open("/proc/self/fd/%d" % written, "r+b", buffering=0) as f:
            f.write(b"\x5a" * (WRITTEN_MIB * MIB))
        rss1 = rss_mib(d)
        answer = ask(rsock, b"REGISTER\n", [written])
        expect(answer.startswith("OK 2 "), answer)
        wait_for(lambda: rss_mib(d) - rss1 >= WRITTEN_MIB, "the written pages are not mapped in")
        time.sleep(SETTLE_S / 2)
        expect(allocated(written) == WRITTEN_MIB * MIB,
               "ampd allocated %d MiB of a memfd with %d MiB written"
               % (allocated(written) // MIB, WRITTEN_MIB))
        os.close(sparse)
        os.close(written)
        rsock.close()
    finally:
        status = d.stop()
    expect(status == 0, "ampd exited %d" % status)


def test_client_region_share():
    d = shared_daemon(["--max-client-region-bytes", str(CLIENT_SHARE)])
    try:
        rsock = region_socket(d, TIMEOUT_S)
        fds = [sealed_memfd(SPARSE_BYTES) for _ in range(2)]
        expect(ask(rsock, b"REGISTER\n", [fds[0]]).startswith("OK "), "the first region")
        answer = ask(rsock, b"REGISTER\n", [fds[1]])
        expect(answer.startswith("ERROR RESOURCE_EXHAUSTED --max-client-region-bytes (%d)"
                                 % CLIENT_SHARE) and "uid %d" % os.getuid() in answer, answer)
        # another connection of the same uid shares the same charge
        more = region_socket(d, TIMEOUT_S)
        answer = ask(more, b"REGISTER\n", [fds[1]])
        expect(answer.startswith("ERROR RESOURCE_EXHAUSTED --max-client-region-bytes"), answer)
        # another uid is served meanwhile, through a region of its own
        ampctl_job(d, "shm", other_uid())
        # the charge returns with the connection that made it
        rsock.close()
        wait_for(lambda: ask(more, b"REGISTER\n", [fds[1]]).startswith("OK "),
                 "the closed connection's bytes were not given back")
        more.close()
        for fd in fds:
            os.close(fd)
    finally:
        status = d.stop()
    expect(status == 0, "ampd exited %d" % status)


# --- item 3: descriptors ------------------------------------------------------------

def test_pending_descriptors_per_peer():
    d = shared_daemon()
    try:
        memfds = [os.memfd_create("held") for _ in range(FDS_PER_CONN)]
        warm = region_socket(d, TIMEOUT_S)   # whatever the first connection opens for good
        expect(ask(warm, b"REGISTER\n", memfds).startswith("ERROR INVALID_ARGUMENT"), "warm-up")
        warm.close()
        time.sleep(SETTLE_S / 4)
        base = open_fds(d)
        conns = [region_socket(d, TIMEOUT_S) for _ in range(PEER_FDS_MAX)]
        for s in conns:
            socket.send_fds(s, [b"REGISTER"], memfds)
        time.sleep(SETTLE_S / 4)
        held = open_fds(d) - base
        expect(held <= len(conns) + PEER_FDS_MAX,
               "%d connections of one uid hold %d descriptors" % (len(conns), held))
        refused = 0
        for s in conns:
            s.settimeout(SETTLE_S)
            try:
                refused += s.recv(200).startswith(b"ERROR RESOURCE_EXHAUSTED uid ")
            except OSError:
                pass
        expect(refused >= len(conns) - PEER_FDS_MAX // FDS_PER_CONN,
               "only %d connections refused" % refused)
        for s in conns:
            s.close()
        for fd in memfds:
            os.close(fd)
        wait_for(lambda: open_fds(d) <= base,
                 lambda: "descriptors not given back: %d, %d at the start: %s" % (
                     open_fds(d), base, fd_names(d)))
    finally:
        status = d.stop()
    expect(status == 0, "ampd exited %d" % status)


WELL_BEHAVED = r"""
import os, sys, grpc
sys.path.insert(0, sys.argv[2])
import amp_pb2 as pb
ch = grpc.insecure_channel(sys.argv[1])
grpc.channel_ready_future(ch).result(timeout=60)
print("ready", flush=True)
sys.stdin.readline()
data = os.urandom(int(sys.argv[3]))
fn = ch.unary_unary("/amp.v1.Amp/Transform", request_serializer=lambda m: m.SerializeToString(),
                    response_deserializer=pb.DataReply.FromString)
r = fn(pb.TransformRequest(data=data, params=pb.TransformParams(op=pb.TRANSFORM_OP_XOR,
       value=90)), timeout=60)
print("ok" if r.data == bytes(b ^ 90 for b in data) else "wrong", flush=True)
"""


def generate_stubs():
    out = tempfile.mkdtemp(prefix="amp-pb2-")
    subprocess.run(["protoc", "-I", os.path.join(SOURCE, "proto"), "--python_out", out,
                    os.path.join(SOURCE, "proto", "amp.proto")], check=True)
    os.chmod(out, 0o755)
    return out


def test_descriptor_reserve():
    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))
    # one uid may hold far more than its share, so that it reaches the reserve
    d = shared_daemon(["--max-peer-connections", "1000", "--max-connections", "1000"],
                      preexec_fn=low_limit)
    stubs = generate_stubs()
    conns, helper = [], None
    try:
        # A first device job (the driver may keep a descriptor from its first
        # kernel launch, PoCL a /dev/null) before the count to come back to.
        subprocess.run([AMPCTL, "--address", d.address, "--device", "cpu", "transform", "--op",
                        "add", "--value", "1", "-o", os.devnull], input=bytes(JOB_BYTES),
                       check=True, timeout=TIMEOUT_S)
        base = open_fds(d)
        helper = subprocess.Popen([sys.executable, "-c", WELL_BEHAVED, d.address, stubs,
                                   str(JOB_BYTES)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, preexec_fn=other_uid())
        expect(helper.stdout.readline().strip() == "ready", "the well-behaved client")
        # region connections, each a descriptor in ampd (what they could
        # attach is capped per uid, test_pending_descriptors_per_peer)
        last, still = -1, 0
        while still < 3 and len(conns) < NOFILE:
            try:
                conns.append(region_socket(d, TIMEOUT_S))
            except OSError:
                break
            if len(conns) % 8 == 0:
                time.sleep(0.05)
                n = open_fds(d)
                still, last = (still + 1 if n == last else 0), n
        time.sleep(SETTLE_S / 4)
        peak = open_fds(d)
        expect(peak <= NOFILE - RESERVE,
               "ampd holds %d descriptors of %d: the reserve is gone" % (peak, NOFILE))
        # a device job (a kernel load) from another uid, meanwhile
        helper.stdin.write("go\n")
        helper.stdin.flush()
        got = helper.stdout.readline().strip()
        helper.wait(TIMEOUT_S)
        expect(got == "ok", "the well-behaved client's job: %r" % got)
        expect(d.proc.poll() is None, "ampd died: %s" % d.proc.returncode)
        for s in conns:
            s.close()
        conns = []
        wait_for(lambda: open_fds(d) <= base,
                 lambda: "descriptors not given back: %d, %d at the start: %s" % (
                     open_fds(d), base, fd_names(d)))
    finally:
        for s in conns:
            s.close()
        if helper and helper.poll() is None:
            helper.kill()
            helper.wait()
        shutil.rmtree(stubs, ignore_errors=True)
        status = d.stop()
    expect(status == 0, "ampd exited %d" % status)


def main():
    return 1 if run_cases(module_cases(globals())) else 0


if __name__ == "__main__":
    sys.exit(main())
