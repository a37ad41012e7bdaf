#!/usr/bin/env python3
"""The profiler agent under every collector a JDK ships (issue 13, item 3).

For each of G1, Parallel, Serial, ZGC, Shenandoah and Epsilon (a collector the
JDK lacks is skipped, and so is ZGC under ASan, which takes the address range
ZGC reserves; the output says so) and each walk (walk=signal,
walk=safepoint), runs GcFixture for a few seconds with the profiler agent
(event=cpu, interval=1ms) and collectors_agent.c, then checks:

- the JVM exits 0;
- GcFixture.hot carries its share of the main thread's weight, and
  gcload/Worker.work (a class unloaded every round) its share, named;
- Java frames left unnamed ([unknown_Java], [unloaded_method]) are rare and
  all counted in the summary;
- the summary: lost samples 0, incomplete walks within the limit;
- class unloading: every Worker class the GC collected was reported to the
  class-unload handler with its methods named (Epsilon never collects: 0);
- the jclass functions: ASGST_JClassToClass names the class, except under
  ZGC, where it answers NULL and profile2 says so in one line on stderr
  (exactly once); ASGST_ClassToJClass gives the class back under every
  collector;
- no "cannot snapshot class" line.

Limits and the runs they come from: docs/testing.md, "Collectors".
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import hang_report  # noqa: E402

COLLECTORS = [
    ("G1", ["-XX:+UseG1GC"]),
    ("Parallel", ["-XX:+UseParallelGC"]),
    ("Serial", ["-XX:+UseSerialGC"]),
    ("ZGC", ["-XX:+UseZGC"]),
    ("Shenandoah", ["-XX:+UseShenandoahGC"]),
    ("Epsilon", ["-XX:+UnlockExperimentalVMOptions", "-XX:+UseEpsilonGC"]),
]
WALKS = ["signal", "safepoint"]
SECONDS = os.environ.get("COLLECTORS_SECONDS", "3")

# docs/testing.md, "Collectors"
MIN_HOT_SHARE = 0.40  # GcFixture.hot, of the weight under GcFixture.main
MIN_WORK_SHARE = 0.02  # gcload/Worker.work, likewise
MAX_INCOMPLETE = 0.05  # incomplete walks, of the samples
MIN_MAIN_WEIGHT = 100  # samples under GcFixture.main: a sanity floor
MAX_UNNAMED = 0.01  # samples with an unnamed Java frame, of the samples

REFUSAL = "ASGST_JClassToClass returns NULL"


def available(java, flags):
    """None if the JVM starts with flags, else why not: ("lacks", line) when
    the JDK does not offer the collector, ("asan", line) when it cannot start
    under ASan, ("error", text) otherwise."""
    r = subprocess.run([java] + flags + ["-version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode == 0:
        return None
    # HotSpot prints its start-up errors on stdout, the launcher on stderr.
    r.stderr = r.stdout
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    first = next((l for l in lines if "rror" in l or "nrecognized" in l or "support" in l), lines[0] if lines else "?")
    if any(w in r.stderr for w in ("Unrecognized VM option", "not supported", "is not available")):
        return "lacks", first
    # ZGC reserves a large, fixed range of address space (its multi-mapped
    # or colored heap views), which ASan's shadow memory already occupies.
    if "libasan" in os.environ.get("LD_PRELOAD", "") and "reserve" in r.stderr:
        return "asan", next((l for l in lines if "reserve" in l), first)
    return "error", r.stderr


def weights(collapsed):
    """(total under GcFixture.main, leaf hot, leaf work, unnamed Java)"""
    main = hot = work = unnamed = 0
    for line in open(collapsed):
        stack, _, w = line.rstrip("\n").rpartition(" ")
        w = float(w)
        frames = stack.split(";")
        # The frames the summary's "unnamed frames" counts (agent/aggregate.c,
        # count_unnamed), and [unloaded_method]. [redefined_method] is a
        # method version freed before its name was copied: with classes
        # unloading here, 1 in 1,884 samples in one ASan run under load.
        if any(f in ("[unknown_Java]", "[unloaded_method]", "[redefined_method]") or
               f.startswith("[unknown_class].") for f in frames):
            unnamed += w
        if "GcFixture.main" not in frames:
            continue
        main += w
        if frames[-1] == "GcFixture.hot":
            hot += w
        if frames[-1] == "gcload/Worker.work":
            work += w
    return main, hot, work, unnamed


def run_one(args, java, gc, flags, walk, failures):
    tag = f"{gc}/{walk}"
    d = os.path.join(args.workdir, f"{gc}-{walk}")
    os.makedirs(d, exist_ok=True)
    collapsed, txt = os.path.join(d, "p.collapsed"), os.path.join(d, "p.txt")
    for f in (collapsed, txt):
        if os.path.exists(f):
            os.remove(f)
    opts = f"event=cpu,interval=1ms,walk={walk},file={collapsed},file={txt}"
    cmd = [java] + flags + ["-Xmx256m", f"-agentpath:{args.agent}={opts}", f"-agentpath:{args.test_agent}",
                            "-cp", args.classes, "GcFixture", os.path.join(args.classes, "helpers"), SECONDS]
    # 120 s: a run takes 3-8 s here (plain and ASan); one that outlives it
    # is reported (hang_report: its threads, their backtraces) and fails.
    r = hang_report.run(cmd, timeout=120, cwd=d)

    def fail(msg):
        failures.append(f"{tag}: {msg}")
        print(f"FAIL {tag}: {msg}")

    if r.returncode is None:
        fail(f"still running after 120 s (killed; see the HANG lines)\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        return None
    if r.returncode != 0:
        fail(f"exit status {r.returncode}\n{r.stdout}{r.stderr}")
        return None
    m = re.search(r"gcfixture: rounds (\d+) collected (\d+) reported (-?\d+) classcheck (-?\d+)", r.stdout)
    if not m:
        fail(f"no gcfixture line\n{r.stdout}")
        return None
    rounds, collected, reported, classcheck = map(int, m.groups())
    zgc = gc == "ZGC"
    refusals = r.stderr.count(REFUSAL)
    if zgc and refusals != 1:
        fail(f"the one-line refusal under ZGC printed {refusals} times")
    if not zgc and refusals:
        fail(f"refusal printed under {gc}")
    if "cannot snapshot class" in r.stderr:
        fail("a class could not be snapshotted: " +
             next(l for l in r.stderr.splitlines() if "cannot snapshot" in l))
    want_check = 2 if zgc else 3
    if classcheck != want_check:
        diag = "\n".join(l for l in r.stderr.splitlines() if l.startswith("collectors_agent"))
        fail(f"jclass check {classcheck}, expected {want_check} (1 JClassToClass, 2 ClassToJClass)\n{diag}")
    if gc == "Epsilon":
        if collected != 0 or reported != 0:
            fail(f"Epsilon collected {collected} classes, {reported} reported")
    else:
        if reported < 0:
            fail("a Worker was reported without its methods named")
        if collected < rounds - 1 or reported != collected:
            fail(f"{rounds} rounds, {collected} Worker classes collected, {reported} reported unloaded")
    summary = open(txt).read()
    lost = re.search(r"^lost: (\d+)", summary, re.M)
    samples = re.search(r"^in the profile: (\d+) samples", summary, re.M)
    incomplete = re.search(r"^incomplete walks: (\d+)", summary, re.M)
    unnamed_sum = re.search(r"^unnamed frames: (\d+) samples with a Java method", summary, re.M)
    if not (lost and samples and incomplete and unnamed_sum):
        fail("summary lines missing")
        return None
    n = int(samples.group(1))
    inc = int(incomplete.group(1)) / max(n, 1)
    if int(lost.group(1)) != 0:
        fail(f"{lost.group(1)} samples lost")
    if inc > MAX_INCOMPLETE:
        fail(f"incomplete walks {inc:.1%} > {MAX_INCOMPLETE:.0%}")
    main, hot, work, unnamed = weights(collapsed)
    un_sum = int(unnamed_sum.group(1))
    if max(unnamed, un_sum) > MAX_UNNAMED * n or (unnamed > 0) != (un_sum > 0):
        fail(f"unnamed Java frames: {unnamed} in the profile, {unnamed_sum.group(1)} in the summary "
             f"(of {n} samples, at most {MAX_UNNAMED:.1%})")
    hs, ws = hot / max(main, 1), work / max(main, 1)
    if main < MIN_MAIN_WEIGHT:
        fail(f"only {main} of weight under GcFixture.main")
    if hs < MIN_HOT_SHARE:
        fail(f"GcFixture.hot {hs:.1%} of main < {MIN_HOT_SHARE:.0%}")
    if ws < MIN_WORK_SHARE:
        fail(f"gcload/Worker.work {ws:.1%} of main < {MIN_WORK_SHARE:.0%}")
    print(f"{tag:20} rounds {rounds:3} collected {collected:3} reported {reported:3} jclass {classcheck} "
          f"samples {n:5} incomplete {inc:6.2%} main {main:6.0f} hot {hs:6.1%} work {ws:6.1%}")
    return hs, ws, inc


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--java-home", required=True)
    p.add_argument("--agent", required=True)
    p.add_argument("--test-agent", required=True)
    p.add_argument("--classes", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--only", help="comma-separated collectors")
    args = p.parse_args()
    for a in ("agent", "test_agent", "classes", "workdir"):
        setattr(args, a, os.path.abspath(getattr(args, a)))
    java = os.path.join(args.java_home, "bin", "java")
    os.makedirs(args.workdir, exist_ok=True)
    failures, ran, skipped = [], 0, []
    only = set(args.only.split(",")) if args.only else None
    for gc, flags in COLLECTORS:
        if only and gc not in only:
            continue
        why = available(java, flags)
        if why is not None and why[0] == "error":
            failures.append(f"{gc}: the JVM does not start: {why[1]}")
            print(f"FAIL {gc}: the JVM does not start:\n{why[1]}")
            continue
        if why is not None:
            # A JDK built without the collector (a vendor may leave out
            # Shenandoah) refuses the flag; ZGC cannot start under ASan.
            # Skip it, and say so.
            skipped.append(gc)
            reason = "this JDK does not offer it" if why[0] == "lacks" else "it cannot start under ASan"
            print(f"SKIP {gc}: {reason} ({why[1].strip()})")
            continue
        for walk in WALKS:
            run_one(args, java, gc, flags, walk, failures)
            ran += 1
    print(f"collectors: {ran} runs, {len(failures)} failed, skipped: {', '.join(skipped) or 'none'}")
    sys.exit(1 if failures or ran == 0 else 0)


if __name__ == "__main__":
    main()
