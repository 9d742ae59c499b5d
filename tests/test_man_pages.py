# SPDX-License-Identifier: MIT
"""test_man_pages.py: the man pages name what the programs offer, and the
defaults they state are the ones `ampd --help` prints from config.h.

Every long option in `ampd --help` must appear in docs/man/ampd.8, and
every long option and command in `ampctl --help` in docs/man/ampctl.1, so
a new option without its documentation fails here. Roff writes hyphens as
\\-, which is undone before comparing.
"""
import os
import re
import subprocess
import sys

SRC = os.environ.get("AMP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
AMPD = os.environ.get("AMPD_BIN", "ampd")
AMPCTL = os.environ.get("AMPCTL_BIN", "ampctl")


def help_text(binary):
    p = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=60)
    return p.stdout + p.stderr


def page(name):
    with open(os.path.join(SRC, "docs", "man", name), encoding="utf-8") as f:
        return f.read().replace("\\-", "-")


def missing(words, text):
    return [w for w in words if not re.search(r"(?<![\w-])" + re.escape(w) + r"(?![\w-])", text)]


def entries(text):
    """Each option's entry in a man page (from its .B/.BI line to the next
    .TP or section), by option name, with roff's font changes removed."""
    out = {}
    for chunk in re.split(r"^\.(?:TP|SH|SS|PP)\b.*$", text, flags=re.M):
        m = re.match(r"\s*\.B[IR]? (--[a-z][a-z-]*)", chunk)
        if m:
            out[m.group(1)] = re.sub(r"\\f[BIRP]", "", chunk)
    return out


def wrong_defaults(help_txt, man):
    """The "(default X)" that --help prints for an option, where its man
    entry says another default (or none): the man page restates what
    config.h defines, so this is what keeps the two together."""
    got = entries(man)
    problems = []
    # Per option: the text from its flag to the next option's flag.
    parts = re.split(r"(?:^|\n)  (--[a-z][a-z-]*)", help_txt)
    for opt, body in zip(parts[1::2], parts[2::2]):
        m = re.search(r"\(default ([^):;]+)\)", re.sub(r"\s+", " ", body))
        if not m or m.group(1).startswith(("$", "unix:")):
            continue
        entry = re.sub(r"\s+", " ", got.get(opt, ""))
        if not re.search(r"[Dd]efault:? " + re.escape(m.group(1)) + r"(?![\w])", entry):
            problems.append("%s: --help says default %s, the man page does not" % (opt, m.group(1)))
    return problems


def exit_codes(help_txt):
    """The codes of --help's "Exit status:" block."""
    block = help_txt.split("Exit status:")[1] if "Exit status:" in help_txt else ""
    return re.findall(r"^  ([0-9]+)  ", block, re.M)


def wrong_exit_codes(help_txt, man, name):
    """Codes --help lists that the man page's EXIT STATUS section lacks, and
    the other way round: both state what the program's exits are."""
    m = re.search(r"^\.SH EXIT STATUS\n(.*?)(?=^\.SH )", man, re.M | re.S)
    section = m.group(1) if m else ""
    ours = set(exit_codes(help_txt))
    theirs = set(re.findall(r"(?<![\w.-])([0-4])(?![\w.-])", section))
    problems = []
    if not ours:
        problems.append("%s --help lists no exit status" % name)
    problems += ["%s: exit %s in --help, not in its man page's EXIT STATUS" % (name, c)
                 for c in sorted(ours - theirs)]
    problems += ["%s: exit %s in its man page's EXIT STATUS, not in --help" % (name, c)
                 for c in sorted(theirs - ours)]
    return problems


def main():
    failures = []
    ampd_help = help_text(AMPD)
    ampd_opts = sorted(set(re.findall(r"--[a-z][a-z-]*", ampd_help)))
    failures += ["ampd.8 lacks " + w for w in missing(ampd_opts, page("ampd.8"))]
    failures += ["ampd.8 " + w for w in wrong_defaults(ampd_help, page("ampd.8"))]

    ctl = help_text(AMPCTL)
    ctl_opts = sorted(set(re.findall(r"--[a-z][a-z-]*", ctl)))
    commands = re.findall(r"^  ([a-z]+)  ", ctl.split("Commands:")[1].split("Exit status:")[0], re.M)
    failures += ["ampctl.1 lacks " + w for w in missing(ctl_opts + commands, page("ampctl.1"))]

    failures += wrong_exit_codes(ampd_help, page("ampd.8"), "ampd")
    failures += wrong_exit_codes(ctl, page("ampctl.1"), "ampctl")
    # The README sends readers to --help for the exit codes: they must be there.
    with open(os.path.join(SRC, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    if "list\nevery option, limit and exit code" in readme or "every option, limit and exit code" in readme:
        failures += ["README: %s --help lists no exit status" % n
                     for n, t in (("ampd", ampd_help), ("ampctl", ctl)) if not exit_codes(t)]

    checked = len(ampd_opts) + len(ctl_opts) + len(commands)
    if len(ampd_opts) < 10 or len(commands) < 8:
        failures.append("could not read the --help texts (%d ampd options, %d ampctl commands)"
                        % (len(ampd_opts), len(commands)))
    for f in failures:
        print("FAIL", f)
    print("%d names checked, %d missing" % (checked, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
