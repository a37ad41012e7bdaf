#!/usr/bin/env python3
"""Markdown tables from bench/accuracy.sh's raw lines (medians over rounds).

usage: summarize.py RAW [TARGET]     (TARGET: share on the hot method, default 0.95)
"""
import statistics
import sys
from collections import defaultdict

SAMPLERS = ["signal", "safepoint", "jfr", "jfr-cpu", "stacks"]
CASES = ["counted", "beforecall", "chain", "jni", "interp"]
FLAGS = {"default": "default", "nocls": "-UseCountedLoopSafepoints"}


def parse(path):
    runs = defaultdict(list)  # (jdk, case, flags, sampler) -> [dict]
    for rec in open(path):
        d = dict(kv.split("=", 1) for kv in rec.split() if "=" in kv)
        if "sampler" not in d:
            continue
        runs[(d["jdk"], d["case"], d["flags"], d["sampler"])].append(d)
    return runs


def num(x):
    try:
        return float(x)
    except ValueError:
        return None


def pct(x):
    return "-" if x is None else "%.1f" % (100 * x)


def main():
    runs = parse(sys.argv[1])
    target = float(sys.argv[2]) if len(sys.argv) > 2 else 0.95
    order = lambda xs, known: sorted(xs, key=lambda x: (known.index(x) if x in known else len(known), x))
    jdks = sorted({k[0] for k in runs}, key=int)
    samplers = order({k[3] for k in runs}, SAMPLERS)
    cases = order({k[1] for k in runs}, CASES)
    flags = order({k[2] for k in runs}, list(FLAGS))
    med = {}
    for key, rs in runs.items():
        m = [num(r["method"]) for r in rs if num(r["method"]) is not None]
        l = [num(r["line"]) for r in rs if num(r["line"]) is not None]
        n = [int(r["samples"]) for r in rs]
        b = [num(r["biased"]) for r in rs if "biased" in r]
        med[key] = dict(method=statistics.median(m) if m else None, line=statistics.median(l) if l else None,
                        lo=min(m) if m else None, samples=statistics.median(n), rounds=len(rs),
                        biased=statistics.median(b) if b else None)
    print("Cells: share of the hot thread's samples whose top Java frame is the true hot method / is on"
          " the true hot line, in %, median over the rounds (lowest round's method share in brackets"
          " when it is more than 1 point below the median); then the median number of samples."
          " jni: the hot method is the native method (no line).")
    for jdk in jdks:
        print()
        print("**JDK %s**" % jdk)
        print()
        print("| case | flags | " + " | ".join(samplers) + " |")
        print("| --- | --- | " + " | ".join("---:" for _ in samplers) + " |")
        for case in cases:
            for fl in flags:
                cells = []
                for s in samplers:
                    v = med.get((jdk, case, fl, s))
                    if not v:
                        cells.append("")
                        continue
                    lo = " [%s]" % pct(v["lo"]) if v["lo"] is not None and v["method"] - v["lo"] > 0.01 else ""
                    cells.append("%s%s / %s (%d)" % (pct(v["method"]), lo, pct(v["line"]), v["samples"]))
                print("| %s | %s | %s |" % (case, FLAGS.get(fl, fl), " | ".join(cells)))
    print()
    print("Below the target (%.0f %% of samples on the true hot method, median), with the heaviest top frames"
          " of the round with the median share:" % (100 * target))
    print()
    misses = 0
    for jdk in jdks:
        for case in cases:
            for fl in flags:
                for s in samplers:
                    v = med.get((jdk, case, fl, s))
                    if not v or v["method"] is None or v["method"] >= target:
                        continue
                    misses += 1
                    rs = sorted(runs[(jdk, case, fl, s)], key=lambda r: float(r["method"]))
                    r = rs[len(rs) // 2]
                    tops = ", ".join("`%s` %s %%" % (f.rpartition("@")[0], pct(float(f.rpartition("@")[2])))
                                     for f in r["top"].split("|")[:3])
                    print("- JDK %s %s %s %s: %s %% — %s" % (jdk, case, FLAGS.get(fl, fl), s, pct(v["method"]), tops))
    if not misses:
        print("- none")
    biased = [(k, v["biased"]) for k, v in med.items() if v["biased"]]
    if biased:
        print()
        print("jfr-cpu samples JFR itself marked `biased` (median share): " +
              ", ".join("JDK %s %s %s %s %%" % (k[0], k[1], FLAGS.get(k[2], k[2]), pct(b)) for k, b in sorted(biased)))


if __name__ == "__main__":
    main()
