# SPDX-License-Identifier: MIT
"""cases.py: the loop a Python test's main() runs over its cases: each
case called in turn, "ok NAME" or "FAIL NAME" with its traceback, and one
failure does not stop the rest.

$AMP_TEST_CASE, when set, names the one case to run (its function's name),
as it does for the C tests; `ctest -C case` runs each case of a test that
uses run_cases as test_x/NAME (tests/README.md). A name the test does not
have fails, so a typo cannot pass.

$AMP_TEST_TIMEOUT_S, when set, is how long ctest lets the test run before
it kills it (tests/CMakeLists.txt): DUMP_BEFORE_KILL_S earlier, counted
from this module's import (the test's start), every thread's stack goes to
stderr, so that a hung test shows where it hangs, in a case or between."""
import faulthandler
import os
import traceback

CASE_ENV = "AMP_TEST_CASE"
TIMEOUT_ENV = "AMP_TEST_TIMEOUT_S"
DUMP_BEFORE_KILL_S = 30

if os.environ.get(TIMEOUT_ENV):
    faulthandler.dump_traceback_later(max(1, float(os.environ[TIMEOUT_ENV]) - DUMP_BEFORE_KILL_S))


def expect(cond, what):
    """A case's check: fails it with what when cond is false."""
    if not cond:
        raise AssertionError(what)


def module_cases(namespace):
    """The functions in namespace (a module's globals()) named test_*, in
    the order the module defines them."""
    return [fn for name, fn in namespace.items() if name.startswith("test_") and callable(fn)]


def run_cases(cases, *args):
    """Calls each case with args, or only the one $AMP_TEST_CASE names;
    returns how many failed (1 when no case has that name)."""
    only = os.environ.get(CASE_ENV)
    if only:
        cases = [case for case in cases if case.__name__ == only]
        if not cases:
            print("FAIL no case ran: none is named %s" % only)
            return 1
    failed = 0
    for case in cases:
        try:
            case(*args)
            print("ok   %s" % case.__name__, flush=True)
        except Exception:  # noqa: BLE001 - every failure is reported
            failed += 1
            print("FAIL %s" % case.__name__, flush=True)
            traceback.print_exc()
    return failed
