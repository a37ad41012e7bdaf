#!/usr/bin/env python3
"""walk=safepoint with virtual threads (issue 15, item 5), JDK 21 and later.

VThreadFixture.java (run from source) starts 1,000 virtual threads that
recurse 5..44 frames deep into a CPU-bound leaf for a few seconds and yield
now and then. The agent samples them on their carriers with
walk=safepoint, in cpu and in wall mode, at 1 ms. HotSpot suspends a
carrier that runs a virtual thread only when the virtual thread unmounts,
so a drain cannot freeze its stack: the drainer must leave that live stack
alone and deliver the elements with their captured frames.

Runs: cpu and wall with walk=safepoint, cpu with walk=signal, and cpu with
walk=signal under a collector that moves the chunks a few hundred times a
run (Parallel, 1 MiB young generation). Checks, per run:
  - the JVM ran to the end;
  - walk=safepoint: the summary's "virtual threads" line says how many
    samples ran in a virtual thread and were walked in the handler (a
    virtual thread's sample is never queued); the drains that found a
    carrier running a virtual thread are printed;
  - every sample with a frame of the fixture is under the root of the
    virtual thread it ran in, "[VirtualThread #N]", N one of the ids the
    fixture printed; and each complete one in leaf has the depth that
    virtual thread recursed to (depth + 1 rec frames), so that a sample
    named after the wrong virtual thread shows (39 in 40 times);
  - every sample with a frame of the fixture is either marked incomplete
    ([error:N], [stale], [throttled], [lost]) or rooted as a virtual
    thread's stack is: Continuation.enter at the root, VirtualThread.run
    above it, then the fixture's lambda; nothing joined onto another stack;
  - enough of them: at least 1,000 samples of the virtual threads (3,700-
    9,000 a run since the fixture runs on CPU time);
  - at most INCOMPLETE_LIMIT of them incomplete. HotSpot thaws a resumed
    virtual thread's frames a few at a time, the rest staying in heap
    chunks below its return barrier; the walker reads them there. Before
    it did, 96-99 % of the samples ended at the barrier
    (PROFILE2_CONTINUATION_NOT_THAWED, [error:-29]); since, 0 in 12 runs
    of the first three scenarios (3,700-9,000 samples each);
  - at most VTHREAD_FAILED_LIMIT of all samples under a virtual thread's
    root failed walks ([throttled] apart), with or without a fixture
    frame: a walk that fails at its top frame has none; and at most
    VTHREAD_TOP_FAILED_LIMIT failed there (no frame or one after the
    error marker).

Exit status 0 when every check holds, else 1.
"""
import os
import re
import sys

import agent_test as at

# Measured 0 % in 12 runs (and 0.0-0.2 % under a moving collector, see the
# last scenario); 2 % catches a walker that stops at the barrier again.
INCOMPLETE_LIMIT = 2.0
# Before the walker took the return barrier for a return address (the
# oldest thawed frame's, patched in by thaw), 1.0-1.7 % of the virtual
# threads' samples failed at their top frame, without a frame of the
# fixture (0.73-1.25 % in a rerun of the four scenarios); since, 0.06-0.19 %
# in 8 scenario runs of the plain build and 0.08-0.48 % in 4 under ASan, each
# beside a CI run. The failures left are mostly deep in the stack: a
# resumed virtual thread whose frozen frames are being thawed as the walk
# reads them (PROFILE2_CONTINUATION_NOT_THAWED after frames of its own;
# 26 of the 33 failures of the CI run that had 1.09 %). Measured under ASan
# (2026-11-28, 21 scenario runs): all failures 0.00-1.09 %, those at the
# top frame 0.00-0.07 %. Two limits: all failures at most 2 % (1.8x the
# worst), those at the top frame at most 0.5 % (7x the worst; the old
# walker had 1.0-1.7 %).
VTHREAD_FAILED_LIMIT = 2.0
VTHREAD_TOP_FAILED_LIMIT = 0.5
# Most of those -29s (85 of 98 in the CI run that had 2.78 %, 2026-12-07)
# were samples taken inside HotSpot's thaw, which moves the chunk's sp past
# the frames before it copies them: the walk found the chunk empty, or
# walked what was left of it and hung those older frames under thaw's C
# frames (114-284 samples a scenario). A walk that starts in thaw now ends at
# the continuation's boundary: thaw's frames directly under the virtual
# thread's root, none of the virtual thread's frames (profile2.h). Since:
# no -29 and 0.00-0.17 % failed in 20 scenario runs (15 under ASan), each
# beside two busy loops. The limits above stay (the other failures reached
# 0.4 % in that CI run's stall).
THAW_FRAMES = ("thaw<", "Continuation::prepare_thaw")


def scenario(a, event, walk, jvm_args=(), name=""):
    label = "%s %s%s" % (event, walk, " " + name if name else "")
    base = os.path.join(a.workdir, event + "-" + walk + ("-" + name if name else ""))
    ran = at.profile_source_fixture(a, label, base, event, walk, ("VThreadFixture.java", "1000", "3"), jvm_args,
                                    done=lambda out: "fixture done" in out)
    if ran is None:
        return
    stdout, summary = ran
    print("      %s: incomplete walks: %s" % (label, at.summary_value(summary, "incomplete walks")))
    vline = at.summary_value(summary, "virtual threads") or ""
    print("      %s: virtual threads: %s" % (label, vline))
    if walk == "safepoint":
        print("      %s: drains: %s" % (label, at.summary_value(summary, "drains")))
        m = re.search(r"(\d+) of them walked in the handler, never queued", vline)
        at.check(m is not None and int(m.group(1)) > 0,
                 "%s: samples of virtual threads walked in the handler (%s)" % (label, m.group(1) if m else "none"))
    m = re.search(r"^virtual threads \(id:depth\):(.*)$", stdout, re.M)
    depth = dict((int(k), int(v)) for k, v in (x.split(":") for x in m.group(1).split())) if m else {}
    at.check(len(depth) == 1000, "%s: the fixture printed its virtual threads' ids (%d)" % (label, len(depth)))
    fixture = complete = incomplete = wrong = 0
    unrooted = wrong_depth = throttled = 0
    seen = set()
    example = unrooted_example = depth_example = None
    vthread = vthread_failed = vthread_top_failed = 0
    in_thaw = thaw_hung = 0
    thaw_example = None
    for frames, w in at.read_collapsed(base + ".collapsed"):
        if frames[0].startswith("[VirtualThread #"):
            vthread += w
            thaw = [i for i, f in enumerate(frames) if f.startswith(THAW_FRAMES)]
            if thaw:
                in_thaw += w
                # markers apart: a throttled signal's top frame under
                # "[throttled]", a failed walk's frames under "[error:N ...]"
                # (counted among the failures above)
                if any(not f.startswith("[") for f in frames[1:thaw[0]]):
                    thaw_hung += w
                    thaw_example = thaw_example or ";".join(frames)[:400]
            if at.walk_outcome(frames) == "incomplete":
                vthread_failed += w
                marker = next(i for i, f in enumerate(frames[:3])
                              if f.startswith("[error:") or f in ("[stale]", "[lost]"))
                vthread_top_failed += w if len(frames) - marker - 1 <= 1 else 0
        # The virtual threads' samples (the main thread runs the fixture's
        # main, which is no virtual thread's).
        if not any(f.startswith("VThreadFixture.lambda$main$") for f in frames):
            continue
        fixture += w
        root = re.match(r"^\[VirtualThread #(\d+)\]$", frames[0])
        vid = int(root.group(1)) if root else -1
        if vid not in depth:
            unrooted += w
            unrooted_example = unrooted_example or ";".join(frames)[:300]
            continue
        seen.add(vid)
        outcome = at.walk_outcome(frames)
        if outcome is not None:
            incomplete += w
            throttled += w if outcome == "throttled" else 0
            continue
        lam = [i for i, f in enumerate(frames) if f.startswith("VThreadFixture.lambda$main$")]
        below = frames[1:lam[0]] if lam else []
        if (lam and below and below[0] == "jdk/internal/vm/Continuation.enter"
                and any(f.startswith("java/lang/VirtualThread.run") for f in below)):
            complete += w
            recs = sum(1 for f in frames if f.startswith("VThreadFixture.rec"))
            youngest = [f for f in frames if not f.startswith("[")][-1]
            if youngest.startswith("VThreadFixture.leaf") and recs != depth[vid] + 1:
                wrong_depth += w
                depth_example = depth_example or "%d rec frames under #%d (depth %d): %s" % (
                    recs, vid, depth[vid], ";".join(frames)[:600])
        else:
            wrong += w
            example = example or ";".join(frames)[:400]
    print("      %s: fixture samples %d: complete %d, incomplete %d, rooted elsewhere %d; "
          "%d virtual threads seen, %d samples not under a fixture virtual thread's root, %d in leaf at another "
          "virtual thread's depth" % (label, fixture, complete, incomplete, wrong, len(seen), unrooted, wrong_depth))
    at.check(unrooted == 0, "%s: every fixture sample under its virtual thread's root (%d not; e.g. %s)"
             % (label, unrooted, unrooted_example))
    # Measured: at most 1.0 % of the complete samples (40 of 3,903; 0.3-0.7 %
    # in most of 20 scenario runs): top frames named by another inlined
    # path's PcDesc (docs/testing.md). A sample given to the wrong virtual
    # thread, or a walk that loses frames, would miss in ~39 of 40 cases.
    allowed = max(8, complete // 20)
    at.check(wrong_depth <= allowed, "%s: samples in leaf at another depth than their virtual thread's: %d, at most %d "
             "(e.g. %s)" % (label, wrong_depth, allowed, depth_example))
    at.check(wrong == 0, "%s: no virtual-thread sample rooted elsewhere (%d; e.g. %s)" % (label, wrong, example))
    at.check(fixture >= 1000, "%s: %d samples of the virtual threads (at least 1,000)" % (label, fixture))
    share = 100.0 * (incomplete - throttled) / max(fixture - throttled, 1)
    at.check(share <= INCOMPLETE_LIMIT, "%s: %.2f %% of the walked ones incomplete (at most %.1f %%; %d throttled)"
             % (label, share, INCOMPLETE_LIMIT, throttled))
    failed = 100.0 * vthread_failed / max(vthread, 1)
    at.check(failed <= VTHREAD_FAILED_LIMIT, "%s: %.2f %% of all %d samples under a virtual thread's root failed "
             "walks (at most %.1f %%)" % (label, failed, vthread, VTHREAD_FAILED_LIMIT))
    at.check(thaw_hung == 0, "%s: of %d samples in HotSpot's thaw, %d with frames between the virtual thread's root "
             "and thaw, markers apart (e.g. %s)" % (label, in_thaw, thaw_hung, thaw_example))
    top_failed = 100.0 * vthread_top_failed / max(vthread, 1)
    at.check(top_failed <= VTHREAD_TOP_FAILED_LIMIT, "%s: %.2f %% of the same %d samples failed at their top frame (at most %.1f %%)"
             % (label, top_failed, vthread, VTHREAD_TOP_FAILED_LIMIT))

def scenarios(a):
    for event, walk in (("cpu", "safepoint"), ("wall", "safepoint"), ("cpu", "signal")):
        scenario(a, event, walk)
    # The chunks moved under the walks: a 1 MiB young generation collects
    # a few hundred times a run (each yield allocates a chunk), and the
    # walk reads only chunks still reached after its reads.
    scenario(a, "cpu", "signal", ["-XX:+UseParallelGC", "-Xmn1m"], "parallel-gc-xmn1m")


def main():
    return at.source_fixture_main(scenarios)


if __name__ == "__main__":
    sys.exit(main())
