#!/usr/bin/env python3
"""Print, for each test that did not pass in a meson build directory's last
run (meson-logs/testlog.json), one line naming it and its result, then the
lines of its output that say what failed (the tests' own "FAIL" lines, or
its last lines when it printed none). scripts/test.sh prints this digest
at the end of its output, where a CI excerpt (the output's tail) still
shows it.

  python3 scripts/failed_tests.py BUILDDIR LABEL
"""
import json
import os
import sys

MAX_LINES = 6  # per test: enough to see the failed checks, short enough for a tail
NOT_PASSED = ("FAIL", "TIMEOUT", "ERROR", "UNEXPECTEDPASS", "INTERRUPT")


def digest(out):
    lines = [l.rstrip() for l in out.splitlines() if l.strip()]
    fails = [l for l in lines if l.lstrip().startswith(("FAIL", "ERROR", "==")) or "Assertion" in l]
    return (fails or lines[-MAX_LINES:])[:MAX_LINES]


def main():
    builddir, label = sys.argv[1], sys.argv[2]
    path = os.path.join(builddir, "meson-logs", "testlog.json")
    try:
        entries = [json.loads(l) for l in open(path, encoding="utf-8", errors="replace") if l.strip()]
    except OSError as e:
        print("test.sh: %s: no test log to digest (%s)" % (label, e.strerror))
        return
    for e in entries:
        if e.get("result") not in NOT_PASSED:
            continue
        print("test.sh: %s: %s %s after %.0f s" % (label, e["name"], e["result"], e.get("duration") or 0))
        for l in digest((e.get("stdout") or "") + "\n" + (e.get("stderr") or "")):
            print("    " + l[:300])


if __name__ == "__main__":
    main()
