# SPDX-License-Identifier: MIT
"""test_auth_rules.py: ampd's start-up rules and Unix-socket peers (issue 13).

Start-up: a plaintext TCP listener beyond loopback is refused with a
message naming tls: and --allow-plaintext-network, and served once that
option says the network is trusted; a TCP listener with no --token-file is
refused unless --tcp-require-token off; a token file others may read, or
with a bad line, or an --allow-uid naming no user, stops the start with the
reason. Unix sockets: no token needed, but a wrong one sent is refused; a
peer outside --allow-uid/--allow-gid gets PERMISSION_DENIED for every call
(health too) and its uid is in the log line; one inside is served. ampctl:
--token-file and $AMP_TOKEN_FILE over TCP (bench's own connections too), a
wrong token exits 1, a missing file 4.
Prints one line per check and a closing "N passed, M failed".
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, run_cases  # noqa: E402
from daemon_proc import Daemon, free_port  # noqa: E402

AMPD = os.environ.get("AMPD_BIN", "ampd")
AMPCTL = os.environ.get("AMPCTL_BIN", "ampctl")
START_TIMEOUT_S = 120
CALL_TIMEOUT_S = 60
TOKEN = "rules-test-token-0123456789"
EXIT_OK, EXIT_REFUSED, EXIT_IO = 0, 1, 4
NOBODY_UID = 54321   # no test runs as this uid


class Ctx:
    tmp = None


def path(name):
    return os.path.join(Ctx.tmp, name)


def token_file(name, text, mode=0o600):
    p = path(name)
    with open(p, "w") as f:
        f.write(text)
    os.chmod(p, mode)
    return p


def refused_start(args, *words):
    """ampd with args must stop at start-up, saying each of words."""
    p = subprocess.run([AMPD, *args], capture_output=True, timeout=START_TIMEOUT_S)
    err = p.stderr.decode(errors="replace")
    expect(p.returncode != 0, "ampd %s started (%d): %s" % (args, p.returncode, err))
    for w in words:
        expect(w in err, "no %r in: %s" % (w, err))


def reverse(ch, metadata=None):
    reply = ch.unary_unary("/amp.v1.Amp/Reverse")(b"\x0a\x03abc", timeout=CALL_TIMEOUT_S,
                                                  metadata=metadata)
    expect(reply[2:5] == b"cba", "reply %r" % reply)


def call_code(ch, method, req, metadata=None):
    try:
        ch.unary_unary(method)(req, timeout=CALL_TIMEOUT_S, metadata=metadata)
    except grpc.RpcError as e:
        return e.code(), e.details()
    return grpc.StatusCode.OK, ""


def test_plaintext_beyond_loopback_refused():
    port = free_port()
    refused_start(["--listen", "0.0.0.0:%d" % port, "--tcp-require-token", "off"],
                  "--listen 0.0.0.0:%d" % port, "plaintext TCP beyond loopback",
                  "tls:0.0.0.0:%d" % port, "--allow-plaintext-network on")


def test_plaintext_network_when_trusted():
    port = free_port()
    d = Daemon(["--listen", "0.0.0.0:%d" % port, "--tcp-require-token", "off",
                "--allow-plaintext-network", "on"])
    try:
        with grpc.insecure_channel("127.0.0.1:%d" % port) as ch:
            reverse(ch)
    finally:
        expect(d.stop() == 0, "ampd exit status")


def test_tcp_needs_token_file():
    port = free_port()
    refused_start(["--listen", "127.0.0.1:%d" % port], "--token-file", "--tcp-require-token off")
    refused_start(["--listen", "tls:127.0.0.1:%d" % port, "--tls-cert", "/nonexistent",
                   "--tls-key", "/nonexistent"], "ampd:")


def test_bad_token_files_stop_the_start():
    port = "127.0.0.1:%d" % free_port()
    loose = token_file("loose", "a " + TOKEN + "\n", 0o644)
    refused_start(["--listen", port, "--token-file", loose], "others may read or change it")
    short = token_file("short", "# c\n\nok " + TOKEN + "\nbad tooshort\n")
    refused_start(["--listen", port, "--token-file", short], ":4: token of bad")
    twice = token_file("twice", "a " + TOKEN + "\nb " + TOKEN + "\n")
    refused_start(["--listen", port, "--token-file", twice], ":2:", "earlier line")
    three = token_file("three", "a b " + TOKEN + "\n")
    refused_start(["--listen", port, "--token-file", three], "want \"NAME TOKEN [weight=N]")
    refused_start(["--listen", port, "--token-file", path("missing")], "No such file")
    refused_start(["--allow-uid", "no-such-user-here"], "--allow-uid: no user")
    refused_start(["--allow-uid", "4294967295"], "--allow-uid: no user")   # (uid_t)-1: no id
    refused_start(["--allow-gid", ","], "--allow-gid")


def test_unix_token_optional_but_checked():
    toks = token_file("unix-tokens", "alice " + TOKEN + "\n")
    d = Daemon(["--token-file", toks])
    try:
        with grpc.insecure_channel(d.address) as ch:
            reverse(ch)
            reverse(ch, [("authorization", "Bearer " + TOKEN)])
            code, _ = call_code(ch, "/amp.v1.Amp/Reverse", b"\x0a\x01x",
                                [("authorization", "Bearer " + TOKEN + "x")])
            expect(code == grpc.StatusCode.UNAUTHENTICATED, "a wrong token: %s" % code)
    finally:
        expect(d.stop() == 0, "ampd exit status")


def test_unix_peer_outside_allow_lists():
    log = tempfile.NamedTemporaryFile(prefix="ampd-rules-log-", mode="w+")
    d = Daemon(["--allow-uid", str(NOBODY_UID), "--allow-gid", str(NOBODY_UID)], stderr=log)
    try:
        with grpc.insecure_channel(d.address) as ch:
            code, details = call_code(ch, "/amp.v1.Amp/Reverse", b"\x0a\x01x")
            expect(code == grpc.StatusCode.PERMISSION_DENIED, "reverse: %s" % code)
            expect("uid %d" % os.getuid() in details and "--allow-uid" in details, details)
            code, _ = call_code(ch, "/grpc.health.v1.Health/Check", b"")
            expect(code == grpc.StatusCode.PERMISSION_DENIED, "health: %s" % code)
    finally:
        expect(d.stop() == 0, "ampd exit status")
    log.seek(0)
    text = log.read()
    expect('call "/amp.v1.Amp/Reverse" from uid %d: PERMISSION_DENIED' % os.getuid() in text,
           "log: %s" % text)


def test_unix_peer_inside_allow_lists():
    for args in (["--allow-uid", "%d,%d" % (NOBODY_UID, os.getuid())],
                 ["--allow-gid", "%d,%d" % (NOBODY_UID, os.getgid())],
                 ["--allow-uid", str(NOBODY_UID), "--allow-gid", str(os.getgid())]):
        d = Daemon(args)
        try:
            with grpc.insecure_channel(d.address) as ch:
                reverse(ch)
        finally:
            expect(d.stop() == 0, "ampd exit status")


def ampctl(args, env_token=None):
    env = dict(os.environ)
    env.pop("AMP_ADDRESS", None)
    env.pop("AMP_TOKEN_FILE", None)
    if env_token:
        env["AMP_TOKEN_FILE"] = env_token
    p = subprocess.run([AMPCTL, *args], capture_output=True, env=env, timeout=CALL_TIMEOUT_S)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def test_ampctl_token_file():
    toks = token_file("ampctl-tokens", "# daemon's file\nalice " + TOKEN + "\n")
    mine = token_file("mine", TOKEN + "\n")
    wrong = token_file("wrong", "x" * 20 + "\n")
    port = free_port()
    d = Daemon(["--listen", "127.0.0.1:%d" % port, "--token-file", toks])
    addr = ["--address", "127.0.0.1:%d" % port]
    try:
        rc, out, err = ampctl(addr + ["--token-file", mine, "reverse", "abc"])
        expect(rc == EXIT_OK and out == b"cba", "token file: %d %r %s" % (rc, out, err))
        rc, out, err = ampctl(addr + ["reverse", "abc", "--token-file", toks])   # NAME TOKEN
        expect(rc == EXIT_OK and out == b"cba", "daemon's file: %d %r %s" % (rc, out, err))
        rc, out, err = ampctl(addr + ["reverse", "abc"], env_token=mine)
        expect(rc == EXIT_OK and out == b"cba", "$AMP_TOKEN_FILE: %d %r %s" % (rc, out, err))
        rc, _, err = ampctl(addr + ["reverse", "abc"], env_token=wrong)
        expect(rc == EXIT_REFUSED and "invalid bearer token" in err, "wrong: %d %s" % (rc, err))
        rc, _, err = ampctl(addr + ["reverse", "abc"])
        expect(rc == EXIT_REFUSED and "invalid bearer token" in err, "none: %d %s" % (rc, err))
        rc, _, err = ampctl(addr + ["--token-file", path("missing"), "reverse", "abc"])
        expect(rc == EXIT_IO and "missing" in err, "missing file: %d %s" % (rc, err))
        rc, out, err = ampctl(addr + ["health"])
        expect(rc == EXIT_OK, "health without a token: %d %s" % (rc, err))
        # bench opens its own connections: they carry the token too
        rc, out, err = ampctl(addr + ["bench", "-c", "2", "-n", "20", "--json"], env_token=mine)
        expect(rc == EXIT_OK and b'"failed":0' in out.replace(b" ", b""),
               "bench: %d %r %s" % (rc, out, err))
        rc, _, err = ampctl(addr + ["bench", "-n", "5"])
        expect(rc == EXIT_REFUSED, "bench without a token: %d %s" % (rc, err))
    finally:
        expect(d.stop() == 0, "ampd exit status")


TESTS = [test_plaintext_beyond_loopback_refused, test_plaintext_network_when_trusted,
         test_tcp_needs_token_file, test_bad_token_files_stop_the_start,
         test_unix_token_optional_but_checked, test_unix_peer_outside_allow_lists,
         test_unix_peer_inside_allow_lists, test_ampctl_token_file]


def main():
    Ctx.tmp = tempfile.mkdtemp(prefix="ampd-rules-")
    failed = 0
    try:
        failed = run_cases(TESTS)
    finally:
        shutil.rmtree(Ctx.tmp, ignore_errors=True)
    print("%d passed, %d failed" % (len(TESTS) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
