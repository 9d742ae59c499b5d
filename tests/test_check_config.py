#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_check_config.py: `ampd --check-config` (issue 37, item 4) checks the
options, the config file and the files they name as a start would, and
opens no device and binds nothing: exit 0 with "configuration ok", or 2
with the first error (file:line for the config file's)."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402

AMPD = os.environ.get("AMPD_BIN", "ampd")


def check(*args, files=None):
    """Runs ampd --check-config ARGS in a fresh directory holding files
    ({name: text}); returns (exit status, output, the directory's names
    afterwards)."""
    with tempfile.TemporaryDirectory() as d:
        for name, text in (files or {}).items():
            with open(os.path.join(d, name), "w", encoding="utf-8") as f:
                f.write(text)
            if name == "tokens":
                os.chmod(os.path.join(d, name), 0o600)
        argv = [AMPD, "--check-config", "--listen", "unix:%s/ampd.sock" % d]
        argv += [a.replace("DIR", d) for a in args]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd=d)
        return p.returncode, p.stdout + p.stderr, sorted(os.listdir(d))


def test_good_config_is_ok_and_binds_nothing():
    conf = "io-threads = 2\nmax-connections = 64\ndrain-timeout = 10s\n"
    code, out, names = check("--config", "DIR/ampd.conf", files={"ampd.conf": conf})
    expect(code == 0, "exit %d: %s" % (code, out))
    expect("configuration ok" in out, out)
    expect("ampd.sock" not in names, "a socket was made: %s" % names)


def test_opens_no_device():
    # A real start with a selection that matches nothing exits 1 after
    # looking at the devices; the check never looks.
    code, out, _ = check("--devices", "accelerator")
    expect(code == 0, "exit %d: %s" % (code, out))


def test_unknown_key_names_file_and_line():
    conf = "# a comment\nio-threads = 2\nno-such-key = 1\n"
    code, out, _ = check("--config", "DIR/ampd.conf", files={"ampd.conf": conf})
    expect(code == 2, "exit %d: %s" % (code, out))
    expect("ampd.conf:3: unknown key \"no-such-key\"" in out, out)
    expect("configuration ok" not in out, out)


def test_bad_value_names_file_line_and_option():
    conf = "max-connections = lots\n"
    code, out, _ = check("--config", "DIR/ampd.conf", files={"ampd.conf": conf})
    expect(code == 2, "exit %d: %s" % (code, out))
    expect("ampd.conf:1:" in out and "max-connections" in out, out)


def test_missing_config_file():
    code, out, _ = check("--config", "DIR/nowhere.conf")
    expect(code == 2, "exit %d: %s" % (code, out))
    expect("nowhere.conf" in out, out)


def test_bad_option_on_the_command_line():
    code, out, _ = check("--io-threads", "99")
    expect(code == 2, "exit %d: %s" % (code, out))
    expect("io-threads" in out, out)


def test_token_file_is_read():
    code, out, _ = check("--token-file", "DIR/tokens", files={"tokens": "short\n"})
    expect(code == 2, "exit %d: %s" % (code, out))
    expect("tokens" in out, out)
    code, out, _ = check("--token-file", "DIR/none")
    expect(code == 2 and "none" in out, "exit %d: %s" % (code, out))


def test_tls_files_are_read():
    # Port 1 is never bound: the check binds nothing.
    code, out, _ = check("--listen", "tls:127.0.0.1:1", "--tls-cert", "DIR/cert.pem",
                         "--tls-key", "DIR/key.pem",
                         files={"cert.pem": "not a certificate\n", "key.pem": "nor a key\n"})
    expect(code == 2, "exit %d: %s" % (code, out))
    expect("cert.pem" in out, out)


if __name__ == "__main__":
    sys.exit(run_cases(module_cases(globals())))
