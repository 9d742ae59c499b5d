# SPDX-License-Identifier: MIT
"""test_tls_ampctl.py: ampctl over TLS against a real ampd.

A unary reverse and a streamed histogram (above --stream-threshold) over
tls:127.0.0.1:PORT and over --tls with a HOST:PORT address, a client
certificate for a daemon with --tls-client-ca, and the refusals with exit
code 3: an untrusted CA, no client certificate, plain HTTP/2 to the TLS
port; --tls-cert without --tls-key is a usage error (2).
Prints one line per check and a closing "N passed, M failed".
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, run_cases  # noqa: E402
from tls_daemon import TlsDaemon  # noqa: E402

AMPCTL = os.environ.get("AMPCTL_BIN", "ampctl")
CALL_TIMEOUT_S = 300
EXIT_OK, EXIT_USAGE, EXIT_CONNECT = 0, 2, 3


class Ctx:
    tls = None


def ampctl(args, stdin=b""):
    env = dict(os.environ)
    env.pop("AMP_ADDRESS", None)
    p = subprocess.run([AMPCTL] + args, input=stdin, capture_output=True, env=env,
                       timeout=CALL_TIMEOUT_S)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def tls_args(*extra):
    return ["--address", "tls:127.0.0.1:%d" % Ctx.tls.port, "--tls-ca", Ctx.tls.file("ca.pem"),
            *extra]


def test_reverse():
    rc, out, err = ampctl(tls_args("reverse", "stressed"))
    expect(rc == EXIT_OK and out == b"desserts", "reverse: %d %r %s" % (rc, out, err))
    rc, out, err = ampctl(["--address", "127.0.0.1:%d" % Ctx.tls.port, "--tls",
                           "--tls-ca", Ctx.tls.file("ca.pem"), "--tls-server-name", "localhost",
                           "reverse", "abc"])
    expect(rc == EXIT_OK and out == b"cba", "--tls reverse: %d %r %s" % (rc, out, err))


def test_streamed_hist():
    data = bytes((i * 7) & 0xFF for i in range(3 << 20))
    rc, out, err = ampctl(tls_args("--stream-threshold", "1M", "--no-progress", "--json", "hist"),
                          stdin=data)
    expect(rc == EXIT_OK, "hist: %d %s" % (rc, err))
    counts = json.loads(out)["counts"]
    want = [0] * 256
    for b in data:
        want[b] += 1
    expect(counts == want, "streamed histogram differs")


def test_refusals():
    rc, _, err = ampctl(["--address", "tls:127.0.0.1:%d" % Ctx.tls.port,
                         "--tls-ca", Ctx.tls.file("other-ca.pem"), "reverse", "x"])
    expect(rc == EXIT_CONNECT and "certificate verify failed" in err,
           "untrusted CA: %d %s" % (rc, err))
    rc, _, err = ampctl(["--address", "127.0.0.1:%d" % Ctx.tls.port, "reverse", "x"])
    expect(rc == EXIT_CONNECT, "plain HTTP/2 to the TLS port: %d %s" % (rc, err))
    rc, _, err = ampctl(tls_args("--tls-cert", Ctx.tls.file("client.pem"), "reverse", "x"))
    expect(rc == EXIT_USAGE, "--tls-cert without --tls-key: %d %s" % (rc, err))


def test_client_certificate():
    d = TlsDaemon(client_ca=True)
    try:
        base = ["--address", "tls:127.0.0.1:%d" % d.port, "--tls-ca", d.file("ca.pem")]
        rc, out, err = ampctl(base + ["--tls-cert", d.file("client.pem"),
                                      "--tls-key", d.file("client.key"), "reverse", "ab"])
        expect(rc == EXIT_OK and out == b"ba", "with a client certificate: %d %s" % (rc, err))
        rc, _, err = ampctl(base + ["reverse", "ab"])
        expect(rc == EXIT_CONNECT, "without one: %d %s" % (rc, err))
        rc, _, err = ampctl(base + ["--tls-cert", d.file("other-client.pem"),
                                    "--tls-key", d.file("other-client.key"), "reverse", "ab"])
        expect(rc == EXIT_CONNECT, "from another CA: %d %s" % (rc, err))
    finally:
        expect(d.stop() == 0, "the --tls-client-ca daemon did not exit 0")


def main():
    Ctx.tls = TlsDaemon()
    tests = [test_reverse, test_streamed_hist, test_refusals, test_client_certificate]
    failed = 0
    try:
        failed = run_cases(tests)
    finally:
        status = Ctx.tls.stop()
    if status != 0:
        failed += 1
        print("FAIL ampd exited with %d" % status)
    print("%d passed, %d failed" % (len(tests) - min(failed, len(tests)), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
