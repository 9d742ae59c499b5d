# SPDX-License-Identifier: MIT
"""test_sample_config.py: the sample etc/ampd.conf names every setting ampd
has and nothing it does not (issue 37, item 4): each long option of
`ampd --help` but those that only make sense on a command line appears as
a "key = value" line (commented out, at its default or an example), and
every key there is an option.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402

SRC = os.environ.get("AMP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
AMPD = os.environ.get("AMPD_BIN", "ampd")
COMMAND_LINE_ONLY = {"config", "help", "version", "check-config"}
KEY = re.compile(r"^#? ?([a-z][a-z-]*) = ", re.M)


def help_options():
    p = subprocess.run([AMPD, "--help"], capture_output=True, text=True, timeout=60)
    return set(re.findall(r"^\s+(?:-\w, )?--([a-z][a-z-]*)", p.stdout + p.stderr, re.M))


def sample_keys():
    with open(os.path.join(SRC, "etc", "ampd.conf"), encoding="utf-8") as f:
        return set(KEY.findall(f.read()))


def test_every_option_has_a_line():
    missing = sorted(help_options() - COMMAND_LINE_ONLY - sample_keys())
    expect(not missing, "options not in etc/ampd.conf: %s" % missing)


def test_every_line_is_an_option():
    unknown = sorted(sample_keys() - help_options())
    expect(not unknown, "keys in etc/ampd.conf that ampd does not have: %s" % unknown)


def main():
    return 0 if run_cases(module_cases(globals())) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
