# SPDX-License-Identifier: MIT
"""test_auth_grpcio.py: bearer tokens on a TLS listener, from grpcio.

Debian's python3-grpcio with ssl_channel_credentials calls an ampd that
requires tokens (--token-file, --tcp-require-token on): a call with a token
from the file works; a missing, wrong, oversized, repeated or malformed
one gets UNAUTHENTICATED (missing and wrong with the same words); Health
answers without a token, reflection does not; a client with a good token
is served while another floods the daemon with bad ones; the file changed
and SIGHUP'd takes effect, and a broken file SIGHUP'd keeps the tokens in
force and logs why.
Prints one line per check and a closing "N passed, M failed".
"""
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, run_cases  # noqa: E402
from tls_daemon import TlsDaemon  # noqa: E402

CALL_TIMEOUT_S = 60
RELOAD_TIMEOUT_S = 20
GOOD = "k3y-for-alice_0123456789"
OTHER = "k3y-for-bob_9876543210+/=="
NEW = "fresh-token-after-sighup-42"
FLOOD_CALLS = 200
GOOD_CALLS = 20
SERVING = 1


def write_tokens(path, lines):
    """Replaces the file whole (a rename), mode 0600, as an operator would."""
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write("# ampd tokens: NAME TOKEN\n\n" + "".join(l + "\n" for l in lines))
    os.chmod(tmp, 0o600)
    os.rename(tmp, path)


class Ctx:
    d = None
    log = None
    tokens = None


def channel():
    creds = grpc.ssl_channel_credentials(
        root_certificates=open(Ctx.d.file("ca.pem"), "rb").read())
    return grpc.secure_channel("localhost:%d" % Ctx.d.port, creds)


def reverse(ch, metadata, data=b"abc"):
    reply = ch.unary_unary("/amp.v1.Amp/Reverse")(b"\x0a" + bytes([len(data)]) + data,
                                                  timeout=CALL_TIMEOUT_S, metadata=metadata)
    expect(reply[2:2 + len(data)] == data[::-1], "reply %r" % reply)


def bearer(token):
    return [("authorization", "Bearer " + token)]


def refused(metadata, code=grpc.StatusCode.UNAUTHENTICATED):
    """The call's status details, after checking its code."""
    with channel() as ch:
        try:
            reverse(ch, metadata)
        except grpc.RpcError as e:
            expect(e.code() == code, "got %s (%s)" % (e.code(), e.details()))
            return e.details()
    raise AssertionError("the call with %r succeeded" % (metadata,))


def test_good_token():
    with channel() as ch:
        reverse(ch, bearer(GOOD))
        reverse(ch, [("authorization", "bearer " + OTHER)])   # the scheme is case-insensitive


def test_missing_and_wrong_say_the_same():
    missing = refused(None)
    wrong = refused(bearer(GOOD[:-1] + "X"))
    expect(missing == wrong, "missing %r, wrong %r: a hint which" % (missing, wrong))
    expect(refused(bearer(GOOD + "X")) == wrong, "a longer token: other words")


def test_oversized_and_malformed():
    refused(bearer("a" * 300))                       # over the token limit
    refused(bearer("a" * 5000))                      # over the header limit
    refused([("authorization", "Basic " + GOOD)])
    refused([("authorization", "Bearer")])
    refused([("authorization", "Bearer " + GOOD + " extra")])
    refused([("authorization", "Bearer " + GOOD), ("authorization", "Bearer " + GOOD)])


def test_health_open_reflection_closed():
    with channel() as ch:
        reply = ch.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=CALL_TIMEOUT_S)
        expect(reply == bytes([0x08, SERVING]), "health reply %r" % reply)
        info = ch.stream_stream("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo")
        try:
            list(info(iter([b"\x3a\x00"]), timeout=CALL_TIMEOUT_S))   # list_services
        except grpc.RpcError as e:
            expect(e.code() == grpc.StatusCode.UNAUTHENTICATED, "reflection: %s" % e.code())
            return
        raise AssertionError("reflection answered without a token")


def test_served_during_flood():
    errors = []

    def flood():
        for i in range(FLOOD_CALLS):
            try:
                refused(bearer("wrong-token-number-%04d" % i) if i % 2 else None)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append("flood: %s" % e)
                return

    t = threading.Thread(target=flood)
    t.start()
    try:
        with channel() as ch:
            for _ in range(GOOD_CALLS):
                reverse(ch, bearer(GOOD))
    finally:
        t.join()
    expect(not errors, "; ".join(errors))


def wait_log(text, since):
    deadline = time.monotonic() + RELOAD_TIMEOUT_S
    while time.monotonic() < deadline:
        with open(Ctx.log.name) as f:
            if text in f.read()[since:]:
                return
        time.sleep(0.05)
    raise AssertionError("no %r in the daemon's log" % text)


def log_size():
    with open(Ctx.log.name) as f:
        return len(f.read())


def reload_tokens(lines, says):
    """Writes the token file, sends SIGHUP and waits for the log to say says."""
    write_tokens(Ctx.tokens, lines)
    since = log_size()
    os.kill(Ctx.d.daemon.proc.pid, signal.SIGHUP)
    wait_log(says, since)
    return since


def test_sighup_reload():
    reload_tokens(["alice " + NEW, "bob " + OTHER], "2 tokens from")
    with channel() as ch:
        reverse(ch, bearer(NEW))
    refused(bearer(GOOD))


def test_sighup_broken_file_keeps_tokens():
    # Its own start (it may run alone, $AMP_TEST_CASE): NEW is alice's.
    reload_tokens(["alice " + NEW, "bob " + OTHER], "2 tokens from")
    since = reload_tokens(["alice short", "bob " + OTHER], "keeping the tokens loaded before")
    with open(Ctx.log.name) as f:
        expect(":3: token of alice" in f.read()[since:], "the log names the line")
    with channel() as ch:
        reverse(ch, bearer(NEW))
    os.chmod(Ctx.tokens, 0o644)   # others may read it: refused too
    since = log_size()
    os.kill(Ctx.d.daemon.proc.pid, signal.SIGHUP)
    wait_log("others may read or change it", since)
    with channel() as ch:
        reverse(ch, bearer(NEW))


TESTS = [test_good_token, test_missing_and_wrong_say_the_same, test_oversized_and_malformed,
         test_health_open_reflection_closed, test_served_during_flood, test_sighup_reload,
         test_sighup_broken_file_keeps_tokens]


def main():
    tmp = tempfile.mkdtemp(prefix="ampd-auth-")
    Ctx.tokens = os.path.join(tmp, "tokens")
    write_tokens(Ctx.tokens, ["alice " + GOOD, "bob " + OTHER])
    Ctx.log = tempfile.NamedTemporaryFile(prefix="ampd-auth-log-", mode="w+")
    Ctx.d = TlsDaemon(("--tcp-require-token", "on", "--token-file", Ctx.tokens), stderr=Ctx.log)
    failed = 0
    try:
        failed = run_cases(TESTS)
    finally:
        status = Ctx.d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
        Ctx.log.seek(0)
        if failed:
            sys.stdout.write(Ctx.log.read())
    if status != 0:
        print("FAIL ampd exited with %d" % status)
        failed += 1
    print("%d passed, %d failed" % (len(TESTS) - min(failed, len(TESTS)), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
