#!/usr/bin/env python3
"""walk=safepoint with virtual threads (issue 15, item 5), JDK 21 and later.

VThreadFixture.java (run from source) starts 1,000 virtual threads that
recurse 5..44 frames deep into a CPU-bound leaf for a few seconds and yield
now and then. The agent samples them on their carriers with
walk=safepoint, in cpu and in wall mode, at 1 ms. HotSpot suspends a
carrier that runs a virtual thread only when the virtual thread unmounts,
so a drain cannot freeze its stack: the drainer must leave that live stack
alone and deliver the elements with their captured frames.

Runs: cpu and wall with walk=safepoint, cpu with walk=signal. Checks, per run:
  - the JVM ran to the end;
  - walk=safepoint: the summary's drains line counts drains that left a
    carrier's live stack alone (the case arose);
  - every sample with a frame of the fixture is either marked incomplete
    ([error:N], [stale], [throttled], [lost]) or rooted as a virtual
    thread's stack is: Continuation.enter at the root, VirtualThread.run
    above it, then the fixture's lambda; nothing joined onto another stack;
  - enough of them: at least 1,000 samples of the virtual threads (about
    5,400-6,000 a run on 2 CPUs in 3 s).
Not held: the share of incomplete walks. In some runs HotSpot thaws the
virtual threads' frames lazily, a few at a time, with its return barrier
below the thawed ones; the walk ends there with
PROFILE2_CONTINUATION_NOT_THAWED ([error:-29], up to half the samples of a
run), where it used to go on into the carrier's frames or fail. The
figures are printed.

Exit status 0 when every check holds, else 1.
"""
import argparse
import os
import re
import subprocess
import sys

import agent_test as at

MARKERS = ("[stale]", "[throttled]", "[lost]")


def scenario(a, event, walk):
    label = "%s %s" % (event, walk)
    base = os.path.join(a.workdir, event + "-" + walk)
    opts = "event=%s,interval=1ms,walk=%s,threads,quiet,file=%s.collapsed,file=%s.txt" % (event, walk, base, base)
    cmd = [os.path.join(a.java_home, "bin", "java"), "-agentpath:%s=%s" % (a.agent, opts),
           os.path.join(a.source_dir, "VThreadFixture.java"), "1000", "3"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=240)
    if not at.check(p.returncode == 0 and "fixture done" in p.stdout,
                    "%s: the JVM ran to the end (exit %d)" % (label, p.returncode)):
        print(p.stderr[-3000:])
        return
    if not at.check(os.path.exists(base + ".txt") and os.path.exists(base + ".collapsed"),
                    "%s: wrote the profile and the summary" % label):
        return
    summary = open(base + ".txt").read()
    drains = at.summary_value(summary, "drains")
    m = re.search(r"(\d+) drains of a carrier running a virtual thread left its live stack alone", drains)
    unfrozen = int(m.group(1)) if m else -1
    print("      %s: incomplete walks: %s" % (label, at.summary_value(summary, "incomplete walks")))
    if walk == "safepoint":
        print("      %s: drains: %s" % (label, drains))
        at.check(unfrozen > 0, "%s: drains left a carrier's live stack alone (%d)" % (label, unfrozen))
    fixture = complete = incomplete = wrong = 0
    example = None
    for frames, w in at.read_collapsed(base + ".collapsed"):
        # The virtual threads' samples (the main thread runs the fixture's
        # main, which is no virtual thread's).
        if not any(f.startswith("VThreadFixture.lambda$main$") for f in frames):
            continue
        fixture += w
        if any(f in MARKERS or f.startswith("[error:") for f in frames[:3]):
            incomplete += w
            continue
        lam = [i for i, f in enumerate(frames) if f.startswith("VThreadFixture.lambda$main$")]
        below = frames[1:lam[0]] if lam else []
        if (lam and below and below[0] == "jdk/internal/vm/Continuation.enter"
                and any(f.startswith("java/lang/VirtualThread.run") for f in below)):
            complete += w
        else:
            wrong += w
            example = example or ";".join(frames)[:400]
    print("      %s: fixture samples %d: complete %d, incomplete %d, rooted elsewhere %d"
          % (label, fixture, complete, incomplete, wrong))
    at.check(wrong == 0, "%s: no virtual-thread sample rooted elsewhere (%d; e.g. %s)" % (label, wrong, example))
    at.check(fixture >= 1000, "%s: %d samples of the virtual threads (at least 1,000)" % (label, fixture))

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--java-home", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    for event, walk in (("cpu", "safepoint"), ("wall", "safepoint"), ("cpu", "signal")):
        scenario(a, event, walk)
    if at.FAILURES:
        print("%d check(s) failed" % len(at.FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
