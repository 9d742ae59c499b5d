#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_kernel_abi.py: what host code and kernels share is defined once, in
kernels/kernel_abi.h (CONTRIBUTING.md, "one definition for each fact").

- No kernel file and no host file #defines a name kernel_abi.h defines.
- A number a kernel file #defines for itself (a tuning constant) is the
  kernel's alone: no host source (daemon/, common/, client/, ampctl/,
  bench/, tests/) names it, in code or in a comment. A host file that
  names one mirrors it: the number belongs in kernel_abi.h.
- kernels/*.cl include nothing: cmake/embed_kernels.cmake puts kernel_abi.h
  before each, and the daemon has no kernel files at run time.
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_][A-Za-z0-9_]*)(\(?)\s*(.*)$", re.M)
NUMBER = re.compile(r"^\(?\s*(0x[0-9a-fA-F]+|\d+)[uUlL]*\s*\)?\s*(/\*.*)?$")
HOST_DIRS = ("daemon", "common", "client", "ampctl", "bench", "tests", "fuzz")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def defines(src):
    """{name: (is_function_like, body)} of src's #defines."""
    return {m.group(1): (m.group(2) == "(", m.group(3).strip()) for m in DEFINE.finditer(src)}


def host_files():
    for d in HOST_DIRS:
        for ext in ("c", "h"):
            yield from glob.glob(os.path.join(ROOT, d, "**", "*." + ext), recursive=True)


def main():
    abi = defines(read(os.path.join(ROOT, "kernels", "kernel_abi.h")))
    abi.pop("AMP_KERNEL_ABI_H", None)
    kernels = sorted(glob.glob(os.path.join(ROOT, "kernels", "*.cl")))
    failures = []
    if len(abi) < 10 or not kernels:
        failures.append(f"kernel_abi.h defines {len(abi)} names and there are {len(kernels)} "
                        "kernel files: the test is reading the wrong tree")
    own = {}   # a kernel's numeric #defines: name -> kernel file
    for k in kernels:
        src = read(k)
        rel = os.path.relpath(k, ROOT)
        if re.search(r"^\s*#\s*include\b", src, re.M):
            failures.append(f"{rel} includes a file: the daemon embeds kernels alone "
                            "(kernel_abi.h comes first by the build)")
        for name, (func, body) in defines(src).items():
            if name in abi:
                failures.append(f"{rel} defines {name} again: it is kernel_abi.h's")
            elif not func and NUMBER.match(body):
                own[name] = rel
    for path in host_files():
        rel = os.path.relpath(path, ROOT)
        src = read(path)
        for name in defines(src):
            if name in abi:
                failures.append(f"{rel} defines {name} again: it is kernel_abi.h's")
        for name, kernel in own.items():
            if re.search(r"(?<![A-Za-z0-9_])" + name + r"(?![A-Za-z0-9_])", src):
                failures.append(f"{rel} names {name}, a number {kernel} defines for itself: "
                                "a number both need goes in kernels/kernel_abi.h")
    for f in failures:
        print("FAIL:", f)
    print(f"{len(abi)} shared names, {len(own)} kernel-only numbers in {len(kernels)} kernel files")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
