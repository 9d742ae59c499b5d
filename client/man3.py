#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""man3.py: libampclient's section 3 man pages, made from amp.h.

    man3.py AMP_H VERSION OUTDIR

amp.h is the contract: each public function's comment says what it does,
who owns what and which codes it returns (docs: CONTRIBUTING.md, "Style").
So the pages are made from it rather than written beside it, and cannot
drift from it. A function's page is the comment above it and the
declarations that share that comment (amp_start_reverse, _transform and
_histogram have one); the others of a group get a page that sources the
first (.so, as man-db resolves it). libampclient(3) is the overview: the
header's opening comment (conventions, errors, threads), the error codes
from AMP_ERROR_MAP, and every function with its page.
"""
import os
import re
import sys

DECL = re.compile(r"^AMP_EXTERN\b")
NAME = re.compile(r"\b(amp_[a-z0-9_]+)\s*\(")
ERROR_ROW = re.compile(r'XX\((\w+),\s*(-?\d+),\s*(-?\d+),\s*"([^"]*)"\)')
SECTION = re.compile(r"^/\* --- (.*?) -*\s*\*/$")


def comment_text(lines):
    """The words of a /* ... */ block, its comment marks gone; a line keeps
    its indentation after them (it continues a list item)."""
    out = []
    for line in lines:
        line = line.strip()
        line = re.sub(r"^/\*+ ?", "", line)
        line = re.sub(r"\s*\*+/$", "", line)
        line = re.sub(r"^\* ?", "", line)
        out.append(line.rstrip())
    return out


def parse(path):
    """(top comment lines, groups, error rows, section intros): a group is
    (section, comment lines, [(name, declaration)]) in header order; an
    intro is (section, the comment that opens it)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    top, groups, comment, section, intros = [], [], None, "", []
    i, since_decl, after_section = 0, True, False
    while i < len(lines):
        line = lines[i]
        m = SECTION.match(line.strip())
        if m:
            section, comment, since_decl = m.group(1).strip(), None, True
            after_section = True
            i += 1
            continue
        if line.lstrip().startswith("/*"):
            block = [line]
            while "*/" not in block[-1]:
                i += 1
                block.append(lines[i])
            comment, since_decl = comment_text(block), True
            if not top and not comment[0].startswith("SPDX"):
                top = comment
            if after_section:
                intros.append((section, comment))   # what the section is about
            after_section = False
            i += 1
            continue
        if line.strip():
            after_section = False
        if DECL.match(line):
            decl = [line]
            while not decl[-1].rstrip().endswith(";"):
                i += 1
                decl.append(lines[i])
            text = " ".join(part.strip() for part in decl)
            text = re.sub(r"^AMP_EXTERN\s+", "", text)
            name = NAME.search(text).group(1)
            if intros and comment is intros[-1][1]:
                intros.pop()   # the section opens with a function: its comment is the page's
            if since_decl or not groups:
                groups.append((section, comment or [], []))
            groups[-1][2].append((name, text))
            since_decl = False
            i += 1
            continue
        if line.strip() and not line.strip().startswith("#"):
            comment = None   # a type or an enum between: the next comment starts a group
            since_decl = True
        i += 1
    errors = ERROR_ROW.findall("\n".join(lines))
    return top, groups, errors, intros


def roff_escape(text):
    text = text.replace("\\", "\\e")
    text = text.replace("-", "\\-")
    return re.sub(r"^([.'])", r"\\&\1", text)


def paragraphs(lines):
    """Comment lines as roff: a blank line a paragraph, a "- " or ". "
    line an item (indented lines continue it), an unindented line after
    items a new paragraph."""
    out, in_item = [], False
    for line in lines:
        if not line.strip():
            out.append(".PP")
            in_item = False
        elif re.match(r"^\s*[-.] ", line):
            out.append(".IP \\(bu %d" % (2 + len(line) - len(line.lstrip())))
            out.append(roff_escape(line.lstrip()[2:]))
            in_item = True
        else:
            if in_item and not line.startswith(" "):
                out.append(".PP")
                in_item = False
            out.append(roff_escape(line.lstrip()))
    return out


def header(name, version, title):
    return ['.\\" Generated from amp.h by client/man3.py: edit amp.h.',
            '.TH %s 3 "" "libampclient %s" "libampclient"' % (name.upper(), version),
            ".SH NAME", "%s \\- %s" % (roff_escape(name), roff_escape(title))]


def summary(comment):
    """The first sentence of a comment, for NAME."""
    words = " ".join(line.strip() for line in comment if line).strip()
    m = re.match(r"(.+?[.:])(\s|$)", words)
    first = (m.group(1) if m else words).rstrip(".:")
    return first[:1].lower() + first[1:] if first else "libampclient"


def page(version, section, comment, decls):
    names = [n for n, _ in decls]
    lines = ['.\\" Generated from amp.h by client/man3.py: edit amp.h.',
             '.TH %s 3 "" "libampclient %s" "libampclient"' % (names[0].upper(), version),
             ".SH NAME",
             "%s \\- %s" % (", ".join(roff_escape(n) for n in names), roff_escape(summary(comment))),
             ".SH SYNOPSIS", ".nf", ".B #include <amp.h>", ".PP"]
    lines += [roff_escape(text) for _, text in decls]
    lines += [".fi", ".PP", "Link with \\fI\\-lampclient\\fP "
              "(\\fBpkg\\-config \\-\\-libs ampclient\\fP).", ".SH DESCRIPTION"]
    lines += paragraphs(comment) if comment else ["See " + roff_escape(names[0]) + "'s group in amp.h."]
    if section:
        lines += [".PP", "Part of amp.h's \\(lq%s\\(rq section." % roff_escape(section)]
    lines += [".SH SEE ALSO", ".BR libampclient (3)"]
    return "\n".join(lines) + "\n"


def overview(version, top, groups, errors, intros):
    lines = ["'\\\" t"] + header("libampclient", version, "the C client of the ampd GPU job service")
    lines += [".SH SYNOPSIS", ".nf", ".B #include <amp.h>", ".fi", ".PP",
              "Link with \\fI\\-lampclient\\fP (\\fBpkg\\-config \\-\\-libs ampclient\\fP).",
              ".SH DESCRIPTION"]
    lines += paragraphs(top[1:] if top and top[0].startswith("amp.h:") else top)
    lines += [".SH ERRORS", "Every code, as amp_strerror(3) words it:", ".TS", "l l l.",
              "name\tvalue\tmeaning"]
    lines += ["AMP_%s\t%s\t%s" % (n, v, roff_escape(w)) for n, v, _, w in errors]
    lines += [".TE"]
    if intros:
        lines += [".SH GUIDE"]
    for section, comment in intros:
        lines += [".SS " + roff_escape(section[:1].upper() + section[1:])]
        lines += paragraphs(comment)
    lines += [".SH FUNCTIONS"]
    for section, comment, decls in groups:
        for name, _ in decls:
            lines += [".TP", ".BR %s (3)" % roff_escape(name), roff_escape(summary(comment))]
    lines += [".SH SEE ALSO", ".BR ampd (8),", ".BR ampctl (1)"]
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) != 4:
        sys.stderr.write("usage: man3.py AMP_H VERSION OUTDIR\n")
        return 2
    amp_h, version, outdir = argv[1:]
    top, groups, errors, intros = parse(amp_h)
    os.makedirs(outdir, exist_ok=True)
    for old in os.listdir(outdir):
        if old.endswith(".3"):
            os.unlink(os.path.join(outdir, old))
    for section, comment, decls in groups:
        first = decls[0][0]
        with open(os.path.join(outdir, first + ".3"), "w", encoding="utf-8") as f:
            f.write(page(version, section, comment, decls))
        for name, _ in decls[1:]:
            with open(os.path.join(outdir, name + ".3"), "w", encoding="utf-8") as f:
                f.write(".so man3/%s.3\n" % first)
    with open(os.path.join(outdir, "libampclient.3"), "w", encoding="utf-8") as f:
        f.write(overview(version, top, groups, errors, intros))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
