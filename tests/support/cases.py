"""cases.py: the loop a Python test's main() runs over its cases: each
case called in turn, "ok NAME" or "FAIL NAME" with its traceback, and one
failure does not stop the rest."""
import traceback


def run_cases(cases, *args):
    """Calls each case with args; returns how many failed."""
    failed = 0
    for case in cases:
        try:
            case(*args)
            print("ok   %s" % case.__name__)
        except Exception:  # noqa: BLE001 - every failure is reported
            failed += 1
            print("FAIL %s" % case.__name__)
            traceback.print_exc()
    return failed
