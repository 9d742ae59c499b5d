# SPDX-License-Identifier: MIT
"""test_hostile_conn_slots.py: connections that never authenticate cannot
hold the slots of those that do (issue 33, item 2), against a real ampd
with a Unix socket, a plain loopback TCP port and a tls: port, tokens
required on TCP, at the default connection limits.

Each attack comes from five loopback addresses (127.0.0.2..6), each
opening as many connections as --max-peer-connections lets it:
 - idle HTTP/2 connections (preface and SETTINGS only);
 - the same, each with a Health/Watch open (no token needed);
 - half-open TLS handshakes (a ClientHello's first bytes).
Meanwhile a token-bearing client on TCP (another peer: 127.0.0.1) and a
Unix-socket client must be served; afterwards the daemon's connections
and descriptors come back to what they were. A TLS client refused for a
limit is told which (ampctl prints it).
"""
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import free_port  # noqa: E402
from h2_raw import PREFACE, frame, literal  # noqa: E402
from tls_daemon import TlsDaemon  # noqa: E402

AMPCTL = os.environ.get("AMPCTL_BIN", "ampctl")
ATTACKERS = ["127.0.0.%d" % i for i in range(2, 7)]
PER_PEER = 64            # --max-peer-connections' default
TLS_PER_PEER = 80        # 400 handshakes in all, as the figure
TOKEN = "conn-slots-token_0123456789"
HANDSHAKE_S = 1          # --handshake-timeout in the TLS case
CALL_TIMEOUT_S = 60
SETTLE_S = 15            # for connections and descriptors to come back
READ_S = 5               # for the daemon's first bytes on an attack connection
POLL_S = 0.1
EXIT_OK = 0
IO_LOOPS = 16            # --io-threads
# A lingering close or two, and libuv's reserve descriptor (/dev/null, for
# accepting past EMFILE) that each loop opens once, at its first connection.
DESCRIPTOR_SLACK = 4 + IO_LOOPS

H2_HEADERS, H2_DATA, H2_SETTINGS = 1, 0, 4
FLAG_END_STREAM, FLAG_END_HEADERS = 1, 4
PARTIAL_HELLO = bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01])


class Ctx:
    tls = None          # the daemon (tls_daemon.TlsDaemon)
    token_file = None
    config = None       # its --config file, for SIGHUP
    plain_port = None


def hello():
    return PREFACE + frame(H2_SETTINGS, 0, 0)


def watch():
    """hello() and a Health/Watch call, its request sent whole."""
    block = b"".join(literal(k.encode(), v.encode()) for k, v in (
        (":method", "POST"), (":scheme", "http"), (":path", "/grpc.health.v1.Health/Watch"),
        (":authority", "ampd"), ("content-type", "application/grpc"), ("te", "trailers")))
    return (hello() + frame(H2_HEADERS, FLAG_END_HEADERS, 1, block)
            + frame(H2_DATA, FLAG_END_STREAM, 1, b"\x00\x00\x00\x00\x00"))


def ampctl(address, *args, token=True, tls=False):
    env = dict(os.environ)
    env.pop("AMP_ADDRESS", None)
    env.pop("AMP_TOKEN_FILE", None)
    cmd = [AMPCTL, "--address", address, "--timeout", "10s"]
    if token:
        cmd += ["--token-file", Ctx.token_file]
    if tls:
        cmd += ["--tls-ca", Ctx.tls.file("ca.pem")]
    p = subprocess.run(cmd + list(args), capture_output=True, env=env, timeout=CALL_TIMEOUT_S)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def expect_served(what):
    """A token-bearing client on plain TCP and on TLS, and a Unix-socket
    client, each reverse a few bytes."""
    for address, tls, token in (("127.0.0.1:%d" % Ctx.plain_port, False, True),
                                ("tls:127.0.0.1:%d" % Ctx.tls.port, True, True),
                                (Ctx.tls.daemon.address, False, False)):
        rc, out, err = ampctl(address, "reverse", "stressed", tls=tls, token=token)
        expect(rc == EXIT_OK and out == b"desserts",
               "%s: %s not served: %d %s" % (what, address, rc, err.strip()))


def connections():
    rc, out, err = ampctl(Ctx.tls.daemon.address, "--json", "status", token=False)
    expect(rc == EXIT_OK, "status: %d %s" % (rc, err))
    return json.loads(out)["connections"]


def descriptors():
    return len(os.listdir("/proc/%d/fd" % Ctx.tls.daemon.proc.pid))


def attack(port, per_peer, first):
    """per_peer connections to port from each attacker, each sending first;
    returns them once each has had the daemon's first bytes (it was
    accepted and admitted or refused) or READ_S passed (a TLS handshake
    the daemon waits on says nothing)."""
    socks = []
    for src in ATTACKERS:
        for _ in range(per_peer):
            s = socket.socket()
            s.bind((src, 0))
            s.connect(("127.0.0.1", port))
            s.sendall(first)
            socks.append(s)
    end = time.monotonic() + READ_S
    for s in socks:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            s.recv(1)
        except OSError:
            pass
    return socks


def release(socks, conns0, fds0):
    for s in socks:
        s.close()
    end = time.monotonic() + SETTLE_S
    while time.monotonic() < end and (connections() > conns0 or descriptors() > fds0):
        time.sleep(POLL_S)
    expect(connections() <= conns0, "connections left: %d, %d before" % (connections(), conns0))
    expect(descriptors() <= fds0 + DESCRIPTOR_SLACK,
           "descriptors left: %d, %d before" % (descriptors(), fds0))


def baseline():
    return connections(), descriptors()


def test_idle_connections():
    conns0, fds0 = baseline()
    socks = attack(Ctx.plain_port, PER_PEER, hello())
    expect_served("320 idle connections")
    release(socks, conns0, fds0)


def test_watch_per_connection():
    conns0, fds0 = baseline()
    socks = attack(Ctx.plain_port, PER_PEER, watch())
    expect_served("320 connections with a Health/Watch each")
    release(socks, conns0, fds0)


def test_half_open_tls():
    conns0, fds0 = baseline()
    t0 = time.monotonic()
    socks = attack(Ctx.tls.port, TLS_PER_PEER, PARTIAL_HELLO)
    expect_served("400 half-open TLS handshakes")
    # --handshake-timeout closes them, not --request-timeout nor the test.
    open_left = 0
    for s in socks:
        s.settimeout(max(0.01, t0 + HANDSHAKE_S + READ_S + SETTLE_S - time.monotonic()))
        try:
            open_left += s.recv(1) != b""
        except socket.timeout:
            open_left += 1
        except OSError:
            pass
    expect(open_left == 0, "%d half-open handshakes still open" % open_left)
    release(socks, conns0, fds0)


def test_tls_refusal_says_why():
    # One held TLS connection from 127.0.0.1, and --max-peer-connections 1
    # (SIGHUP-reloadable): ampctl's next one is refused for it.
    d = Ctx.tls
    with open(Ctx.config, "w") as f:
        f.write("max-peer-connections = 1\n")
    os.kill(d.daemon.proc.pid, signal.SIGHUP)
    ctx = ssl.create_default_context(cafile=d.file("ca.pem"))
    ctx.set_alpn_protocols(["h2"])
    try:
        end = time.monotonic() + SETTLE_S
        rc, err = EXIT_OK, ""
        while time.monotonic() < end:
            with socket.create_connection(("127.0.0.1", d.port)) as raw:
                with ctx.wrap_socket(raw, server_hostname="localhost") as held:
                    held.sendall(hello())
                    held.recv(1)
                    rc, _, err = ampctl("tls:127.0.0.1:%d" % d.port, "reverse", "x", tls=True)
            if rc != EXIT_OK:
                break
            time.sleep(POLL_S)   # the reload is not in force yet
        expect(rc != EXIT_OK and "refused the connection: RESOURCE_EXHAUSTED: "
               "--max-peer-connections (1)" in err,
               "refused TLS client: %d %s" % (rc, err.strip()))
    finally:
        open(Ctx.config, "w").close()
        os.kill(d.daemon.proc.pid, signal.SIGHUP)


def start(extra=()):
    """Starts the daemon of Ctx (extra: more ampd arguments); returns its
    working directory, for stop()."""
    Ctx.plain_port = free_port()
    workdir = tempfile.mkdtemp(prefix="ampd-slots-")
    Ctx.token_file = os.path.join(workdir, "tokens")
    with open(Ctx.token_file, "w") as f:
        f.write("slots " + TOKEN + "\n")
    os.chmod(Ctx.token_file, 0o600)
    Ctx.config = os.path.join(workdir, "ampd.conf")
    open(Ctx.config, "w").close()
    Ctx.tls = TlsDaemon(("--listen", "127.0.0.1:%d" % Ctx.plain_port,
                         "--tcp-require-token", "on", "--token-file", Ctx.token_file,
                         "--config", Ctx.config, *extra))
    return workdir


def stop(workdir):
    """Stops the daemon; returns its exit status."""
    status = Ctx.tls.stop()
    shutil.rmtree(workdir, ignore_errors=True)
    return status


def main():
    workdir = start(("--handshake-timeout", str(HANDSHAKE_S), "--io-threads", str(IO_LOOPS)))
    try:
        failed = run_cases(module_cases(globals()))
    finally:
        status = stop(workdir)
    if status != 0:
        print("FAIL ampd exited %d" % status)
        failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
