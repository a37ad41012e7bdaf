#!/usr/bin/env python3
"""Print, for each test that did not pass in a meson build directory's last
run (meson-logs/testlog.json), one line naming it and its result, then the
lines of its output that say what failed (the tests' own "FAIL" lines, or
its last lines when it printed none). scripts/test.sh prints this digest
at the end of its output, where a CI excerpt (the output's tail) still
shows it.

  python3 scripts/failed_tests.py BUILDDIR LABEL [MACHINE_LOG]

With MACHINE_LOG (scripts/machine_watch.py's record), each test's lines end
with what the machine did while it ran (heartbeat gaps, stall times), and
a test's "HANG" lines (a report of a process it found stuck,
tests/jvm/common/hang_report.py) are kept with its FAIL lines.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine_watch  # noqa: E402

MAX_LINES = 6  # per test: enough to see the failed checks, short enough for a tail
MAX_HANG_LINES = 12  # a hang report: its summary and the threads that matter
NOT_PASSED = ("FAIL", "TIMEOUT", "ERROR", "UNEXPECTEDPASS", "INTERRUPT")


def digest(out):
    lines = [l.rstrip() for l in out.splitlines() if l.strip()]
    fails = [l for l in lines if l.lstrip().startswith(("FAIL", "ERROR", "==")) or "Assertion" in l]
    hangs = [l for l in lines if l.lstrip().startswith("HANG")]
    return (fails or lines[-MAX_LINES:])[:MAX_LINES] + hangs[:MAX_HANG_LINES]


def main():
    builddir, label = sys.argv[1], sys.argv[2]
    machine_log = sys.argv[3] if len(sys.argv) > 3 else None
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
        if machine_log and e.get("starttime"):
            t0 = e["starttime"]
            print("    " + machine_watch.describe(machine_watch.rows(machine_log, t0, t0 + (e.get("duration") or 0)),
                                                  "while it ran"))


if __name__ == "__main__":
    main()
