# SPDX-License-Identifier: MIT
"""test_cases.py: support/cases.py's run_cases, the loop the Python tests
run their cases in, run in child programs: every case runs and one failure
does not stop the rest; $AMP_TEST_CASE runs the one case it names and a
name no case has fails; a test still running $AMP_TEST_TIMEOUT_S less
DUMP_BEFORE_KILL_S after it started gets every thread's stack printed, the
hung case's frame named.
Prints one line per check (support/cases.py).
"""
import os
import subprocess
import sys
import textwrap

SUPPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "support")
sys.path.insert(0, SUPPORT)
from cases import (CASE_ENV, DUMP_BEFORE_KILL_S, TIMEOUT_ENV, expect,  # noqa: E402
                   module_cases, run_cases)

CHILD_TIMEOUT_S = 60
# The child's cases: one passes, one fails, one sleeps past its dump.
# Indented, so that tests/CMakeLists.txt does not take them for this file's.
CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, %r)
    from cases import expect, module_cases, run_cases
    def test_passes():
        pass
    def test_fails():
        expect(False, "this case fails")
    def test_sleeps_past_the_dump():
        if len(sys.argv) > 1:
            time.sleep(float(sys.argv[1]))
    sys.exit(run_cases(module_cases(globals())))
    """) % SUPPORT


def child(env, *argv):
    """Runs CHILD with env added to this environment (None values removed);
    returns (exit status, stdout, stderr)."""
    full = dict(os.environ)
    for k, v in env.items():
        full.pop(k, None)
        if v is not None:
            full[k] = v
    p = subprocess.run([sys.executable, "-c", CHILD, *argv], env=full, capture_output=True,
                       text=True, timeout=CHILD_TIMEOUT_S)
    return p.returncode, p.stdout, p.stderr


def test_all_cases_run_and_failures_count():
    rc, out, err = child({CASE_ENV: None, TIMEOUT_ENV: None})
    expect(rc == 1, "exit %d, want 1 (one failed case)" % rc)
    for line in ("ok   test_passes", "FAIL test_fails", "ok   test_sleeps_past_the_dump"):
        expect(line in out.splitlines(), "no %r in %r" % (line, out))
    expect("this case fails" in err, "no traceback for the failed case: %r" % err)


def test_one_case_by_name():
    rc, out, _ = child({CASE_ENV: "test_passes", TIMEOUT_ENV: None})
    expect(rc == 0 and out.splitlines() == ["ok   test_passes"], "exit %d, %r" % (rc, out))
    rc, out, _ = child({CASE_ENV: "test_no_such", TIMEOUT_ENV: None})
    expect(rc == 1 and "none is named test_no_such" in out, "exit %d, %r" % (rc, out))


def test_hung_case_prints_its_stack():
    # The dump comes 1 s in, the case sleeps 3 s and then passes.
    env = {CASE_ENV: "test_sleeps_past_the_dump", TIMEOUT_ENV: str(DUMP_BEFORE_KILL_S + 1)}
    rc, out, err = child(env, "3")
    expect(rc == 0, "exit %d: %r" % (rc, out))
    expect("Timeout" in err and "test_sleeps_past_the_dump" in err,
           "no stack dump naming the case: %r" % err)
    rc, out, err = child(env, "0")
    expect(rc == 0 and "Timeout" not in err, "a quick case dumped: %r" % err)


def main():
    return 0 if run_cases(module_cases(globals())) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
