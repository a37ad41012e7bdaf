#!/usr/bin/env python3
"""The handler budget's throttled share (issue 14, item 3): javac, Xalan-J
and H2 (bench/overhead/overhead.py's workloads) under profile2 with
event=cpu, walk=signal and one interval, ROUNDS runs each; per run the
summary's signals handled and throttled signals, and from the collapsed
stacks (with `threads`) which threads the [throttled] samples were on.

  throttle.py --java-home J --jdk NAME --agent SO --out DIR [--rounds N]
              [--interval 1ms] [--workloads javac,xslt,sql] [--opts EXTRA]
"""
import collections
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "overhead"))
import overhead  # noqa: E402  (the workloads)


def thread_of(root):
    """'[C2 CompilerThread0 tid=123]' -> 'C2 CompilerThread' (numbers dropped)."""
    m = re.match(r"\[(.*) tid=\d+\]$", root)
    return re.sub(r"\d+$", "", m.group(1)).strip() if m else root


def main():
    a = overhead.study_args(3, interval="1ms", opts="")
    failed = 0
    for wname in a.workloads.split(","):
        wl = overhead.prepared(wname, os.path.join(a.out, "inputs", a.jdk))
        for rnd in range(1, a.rounds + 1):
            rundir = os.path.join(a.out, "runs", a.jdk, wname, "r%d" % rnd)
            base = os.path.join(rundir, "profile")
            opts = "event=cpu,interval=%s,walk=signal,threads,quiet,file=%s.collapsed,file=%s.txt%s" % (
                a.interval, base, base, "," + a.opts if a.opts else "")
            ok, p = overhead.run_under_agent(wl, a.java_home, a.agent, opts, rundir)
            if not ok:
                print("throttle.py: %s %s r%d failed: %s" % (a.jdk, wname, rnd, p.stderr[-1500:]), file=sys.stderr)
                failed += 1
                continue
            txt = open(base + ".txt").read()
            sig = int(re.search(r"^samples: (\d+) signals handled", txt, re.M).group(1))
            m = re.search(r"^throttled: (\d+)", txt, re.M)
            thr = int(m.group(1)) if m else 0
            per = collections.Counter()
            for line in open(base + ".collapsed"):
                stack, _, w = line.rstrip("\n").rpartition(" ")
                frames = stack.split(";")
                if "[throttled]" in frames:
                    per[thread_of(frames[0])] += int(w)
            top = ", ".join("%s %d" % kv for kv in per.most_common(4))
            m = re.search(r"^budget: (\d+) walks.*?; (\d+) walks timed", txt, re.M)
            budget = "; %s suspect, %s CPU-timed walks" % m.groups() if m else ""
            print("%s %-5s r%d: %6d signals, %5d throttled (%.2f %%)%s%s" % (
                a.jdk, wname, rnd, sig, thr, 100.0 * thr / max(sig, 1), budget, "; on: " + top if top else ""))
            sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
