# SPDX-License-Identifier: MIT
"""test_man3.py: every public function of libampclient has a man page.

Reads client/include/amp.h for every AMP_EXTERN function (on its own,
not through the generator, client/man3.py) and checks the build's
client/man3 pages: each function has NAME.3, which is its page or sources
the page of its group (.so); that page names it in NAME, declares it in
SYNOPSIS as amp.h does, and says something in DESCRIPTION; and
libampclient(3) lists it. A new function in amp.h without a comment, or a
generator that drops one, fails here. Prints one line per check
(support/cases.py)."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402

SRC = os.environ.get("AMP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
MAN3 = os.environ.get("AMP_MAN3_DIR", "client/man3")
AMP_H = os.path.join(SRC, "client", "include", "amp.h")


def public_functions():
    """name -> its declaration in amp.h, whitespace collapsed."""
    with open(AMP_H, encoding="utf-8") as f:
        text = f.read()
    out = {}
    for m in re.finditer(r"^AMP_EXTERN\s+([^;]*?\b(amp_\w+)\s*\([^;]*\));", text, re.M):
        out[m.group(2)] = re.sub(r"\s+", " ", m.group(1)).replace("( ", "(")
    return out


def read_page(name):
    """The page of name: its file, or the one it sources."""
    with open(os.path.join(MAN3, name + ".3"), encoding="utf-8") as f:
        text = f.read()
    m = re.match(r"\.so man3/(\w+)\.3\s*$", text)
    if m:
        with open(os.path.join(MAN3, m.group(1) + ".3"), encoding="utf-8") as f:
            text = f.read()
    return text.replace("\\-", "-").replace("\\e", "\\")


def section(text, name):
    m = re.search(r"^\.SH %s\n(.*?)(?=^\.SH |\Z)" % name, text, re.M | re.S)
    return m.group(1) if m else ""


def test_amp_h_has_functions():
    expect(len(public_functions()) >= 50, "amp.h: %d functions" % len(public_functions()))


def test_every_function_has_a_page():
    missing = [n for n in public_functions() if not os.path.exists(os.path.join(MAN3, n + ".3"))]
    expect(not missing, "no page for: %s" % ", ".join(missing))


def test_each_page_names_declares_and_describes():
    bad = []
    for name, decl in public_functions().items():
        page = read_page(name)
        names = section(page, "NAME").split("-")[0]
        if not re.search(r"\b%s\b" % name, names):
            bad.append("%s: not in NAME" % name)
        if decl not in re.sub(r"\s+", " ", section(page, "SYNOPSIS")):
            bad.append("%s: SYNOPSIS lacks %r" % (name, decl))
        if len(section(page, "DESCRIPTION").split()) < 5:
            bad.append("%s: no DESCRIPTION" % name)
    expect(not bad, "; ".join(bad))


def test_overview_lists_every_function():
    with open(os.path.join(MAN3, "libampclient.3"), encoding="utf-8") as f:
        listed = set(re.findall(r"^\.BR (amp_\w+) \(3\)$", f.read(), re.M))
    missing = sorted(set(public_functions()) - listed)
    expect(not missing, "libampclient(3) does not list: %s" % ", ".join(missing))


if __name__ == "__main__":
    sys.exit(1 if run_cases(module_cases(globals())) else 0)
