#!/usr/bin/env python3
"""Sampling at 1 ms while a Java agent retransforms the sampled class in a loop
(issue 13, item 4).

RedefFixture runs main -> chainA -> leafA and main -> chainB -> leafB;
RetransformAgent (java.lang.instrument) retransforms RedefFixture about every
millisecond, so HotSpot keeps installing new Method*s and freeing the old ones.
The profiler agent samples in cpu mode, walk=signal and walk=safepoint, and
walk=safepoint again with a pause in each queue element's handler (RUNS).

Checked (the test fails otherwise): the JVM exits 0 (no crash, no hang), the
class was retransformed at least 50 times, the profile has samples under
RedefFixture.main, every Java frame under it is named as one of the
fixture's methods or left unnamed ([unknown_Java], [redefined_method]): no
garbage, no name from another class; no frame is named as another method of
the fixture (the fixture's Java frames below main are chainA, leafA or
chainB, leafB, or a prefix: "misnamed" is anything else, and must be 0);
and the share of samples with an unnamed frame below main stays under
MAX_UNNAMED (docs/testing.md gives the measured distribution).
"""
import argparse
import os
import re
import subprocess
import sys

UNNAMED = {"[unknown_Java]", "[redefined_method]"}
FIXTURE = {"RedefFixture.main", "RedefFixture.chainA", "RedefFixture.chainB", "RedefFixture.leafA",
           "RedefFixture.leafB", "RedefFixture.<init>"} | UNNAMED
# What the program really calls, below main (the runtime's native frames in
# between, e.g. resolving a call after a retransformation, do not count).
RIGHT = (("RedefFixture.chainA", "RedefFixture.leafA"), ("RedefFixture.chainB", "RedefFixture.leafB"))
# Samples' weight with an unnamed Java frame below main, per walk
# (docs/testing.md, "Redefinition and retransformation"): 0-0.2 % in 52
# walks, then 1.7 % once under ASan with walk=safepoint: one old method
# version freed before it could be named, and the 33 samples that had it
# all unnamed. One such method can carry tens of samples, so the limit
# is 3 % (1.8x that); the regression it guards against (names
# read after the walk) also misnamed 5-28 %, which fails on one sample.
MAX_UNNAMED = 0.03
SECONDS = os.environ.get("REDEFINE_SECONDS", "4")
MIN_RETRANSFORMS = 50


# The third run widens the window in which a queue element's captured
# method can be freed and reused between the library's check of it and the
# agent's interning (PROFILE2_TEST_DRAIN_DELAY_US, agent/sampler_queue.c):
# a sampler that read the identity again there misnamed ~0.2 % of the
# samples with this delay (docs/testing.md), where undelayed runs showed it
# once in hundreds of runs.
RUNS = (("signal", "signal", {}), ("safepoint", "safepoint", {}),
        ("safepoint-delayed", "safepoint", {"PROFILE2_TEST_DRAIN_DELAY_US": "1000"}))


def run(args, java, label, walk, env, failures):
    d = os.path.join(args.workdir, label)
    os.makedirs(d, exist_ok=True)
    collapsed, txt = os.path.join(d, "r.collapsed"), os.path.join(d, "r.txt")
    opts = f"event=cpu,interval=1ms,walk={walk},file={collapsed},file={txt}"
    cmd = [java, f"-javaagent:{args.jar}", f"-agentpath:{args.agent}={opts}", "-cp", args.classes,
           "RedefFixture", SECONDS]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=d, env=dict(os.environ, **env))

    def fail(msg):
        failures.append(f"{label}: {msg}")
        print(f"FAIL {label}: {msg}")

    if r.returncode != 0:
        fail(f"exit status {r.returncode}\n{r.stdout}{r.stderr[-3000:]}")
        return
    m = re.search(r"redeffixture: retransformations (\d+)", r.stdout)
    if not m or int(m.group(1)) < MIN_RETRANSFORMS:
        fail(f"too few retransformations: {r.stdout.strip()}")
        return
    total = misnamed = unnamed = 0
    foreign = {}
    wrong = {}
    for line in open(collapsed):
        stack, _, w = line.rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        if "RedefFixture.main" not in frames:
            continue
        w = float(w)
        below = frames[frames.index("RedefFixture.main") + 1:]
        if below and below[0] not in FIXTURE:
            continue  # main's own calls into the JDK (nanoTime, parseDouble, the final println)
        total += w
        for f in below:
            if f not in FIXTURE:
                foreign[f] = foreign.get(f, 0) + w
        java = [f for f in below if f in FIXTURE]
        if any(f in UNNAMED for f in java):
            unnamed += w
        elif not any(tuple(java) == r[:len(java)] for r in RIGHT):
            misnamed += w
            wrong[";".join(java)] = wrong.get(";".join(java), 0) + w
    if total < 100:
        fail(f"only {total} samples under RedefFixture.main")
    # A Java frame with a name outside the fixture would be garbage or a
    # method of another class at a reused address: that is not tolerated.
    # Native frames (the JIT's stubs, libjvm) are not Java frames: they
    # carry no '.' or come from a library.
    java_foreign = {f: w for f, w in foreign.items() if re.match(r"^[\w$/]+\.[\w$<>]+$", f) and "::" not in f}
    if java_foreign:
        fail(f"frames not of the fixture under main: {sorted(java_foreign.items(), key=lambda x: -x[1])[:8]}")
    if misnamed:
        fail(f"{misnamed:.0f} samples with a frame named as another method: "
             f"{sorted(wrong.items(), key=lambda x: -x[1])[:8]}")
    if unnamed > MAX_UNNAMED * total:
        fail(f"{unnamed:.0f} of {total:.0f} samples with an unnamed frame below main (limit {MAX_UNNAMED:.0%})")
    names = re.findall(r"^(methods unnamed|method names): (.*)$", open(txt).read(), re.M)
    print(f"{label:17} retransformations {int(m.group(1)):5} samples {total:6.0f} "
          f"misnamed {misnamed / max(total, 1):6.1%} unnamed {unnamed / max(total, 1):6.1%}"
          + "".join(f"; {k}: {v}" for k, v in names))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--java-home", required=True)
    p.add_argument("--agent", required=True)
    p.add_argument("--jar", required=True)
    p.add_argument("--classes", required=True)
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    for a in ("agent", "jar", "classes", "workdir"):
        setattr(args, a, os.path.abspath(getattr(args, a)))
    java = os.path.join(args.java_home, "bin", "java")
    failures = []
    for label, walk, env in RUNS:
        run(args, java, label, walk, env, failures)
    print(f"redefine: {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
