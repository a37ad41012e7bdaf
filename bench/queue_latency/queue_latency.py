#!/usr/bin/env python3
"""walk=safepoint on real programs (issue 15, items 1 and 2): javac, Xalan-J
and H2 (bench/overhead/overhead.py's workloads) under profile2 with
event=cpu, walk=safepoint, at each interval, ROUNDS runs each. Per run,
from the agent's summary: the queue latency (signal to element handler,
median and 99th percentile), the drained elements that were stale, and for
the busiest thread (the program's main thread on these workloads) the share
of its weight under [stale] and under [error:...] (incomplete walks), from
the collapsed stacks. Each configuration ends with a line of medians and
ranges over the rounds.

  queue_latency.py --java-home J --jdk NAME --agent SO --out DIR [--rounds N]
                   [--intervals 1ms,10ms] [--workloads javac,xslt,sql] [--opts EXTRA]
"""
import collections
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "overhead"))
import overhead  # noqa: E402  (the workloads)


def one_run(txt, collapsed):
    lat = re.search(r"^queue latency: .*?median ([\d.]+) ms, 99th percentile ([\d.]+) ms, longest ([\d.]+) ms "
                    r"\((\d+) elements\)", txt, re.M)
    sw = re.search(r"^safepoint walks: (\d+) queued .*?; (\d+) drained: (\d+) stale", txt, re.M)
    if lat is None or sw is None:
        return None
    per = collections.defaultdict(lambda: [0, 0, 0])  # thread root -> weight, stale, error
    for line in open(collapsed):
        stack, _, w = line.rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        t = per[frames[0]]
        t[0] += int(w)
        if "[stale]" in frames[:2]:
            t[1] += int(w)
        if any(f.startswith("[error:") for f in frames[:3]):
            t[2] += int(w)
    busy, (bw, bst, berr) = max(per.items(), key=lambda kv: kv[1][0] if "Compiler" not in kv[0] else -1)
    return {
        "p50": float(lat.group(1)), "p99": float(lat.group(2)), "max": float(lat.group(3)),
        "elements": int(lat.group(4)), "drained": int(sw.group(2)), "stale": int(sw.group(3)),
        "busy": re.sub(r" tid=\d+", "", busy), "busy_weight": bw, "busy_stale": bst, "busy_error": berr,
    }


def spread(xs, fmt):
    return (fmt + " (" + fmt + ".." + fmt + ")") % (statistics.median(xs), min(xs), max(xs))


def main():
    a = overhead.study_args(3, intervals="1ms,10ms", opts="")
    failed = 0
    for wname in a.workloads.split(","):
        wl = overhead.prepared(wname, os.path.join(a.out, "inputs", a.jdk))
        for iv in a.intervals.split(","):
            runs = []
            for rnd in range(1, a.rounds + 1):
                rundir = os.path.join(a.out, "runs", a.jdk, wname, iv, "r%d" % rnd)
                base = os.path.join(rundir, "profile")
                opts = "event=cpu,interval=%s,walk=safepoint,threads,quiet,file=%s.collapsed,file=%s.txt%s" % (
                    iv, base, base, "," + a.opts if a.opts else "")
                ok, p = overhead.run_under_agent(wl, a.java_home, a.agent, opts, rundir)
                r = one_run(open(base + ".txt").read(), base + ".collapsed") if ok else None
                if r is None:
                    print("queue_latency.py: %s %s %s r%d failed: %s" % (a.jdk, wname, iv, rnd, p.stderr[-1500:]),
                          file=sys.stderr)
                    failed += 1
                    continue
                runs.append(r)
                print("%s %-5s %-5s r%d: latency p50 %.2f ms, p99 %.2f ms, longest %.2f ms (%d elements); stale %d of "
                      "%d drained (%.2f %%); %s: weight %d, stale %.2f %%, incomplete %.2f %%" % (
                          a.jdk, wname, iv, rnd, r["p50"], r["p99"], r["max"], r["elements"], r["stale"], r["drained"],
                          100.0 * r["stale"] / max(r["drained"], 1), r["busy"], r["busy_weight"],
                          100.0 * r["busy_stale"] / max(r["busy_weight"], 1),
                          100.0 * r["busy_error"] / max(r["busy_weight"], 1)))
                sys.stdout.flush()
            if runs:
                print("%s %-5s %-5s median (min..max) of %d: latency p50 %s ms, p99 %s ms; stale elements %s %%; "
                      "busy thread stale %s %%, incomplete %s %%" % (
                          a.jdk, wname, iv, len(runs), spread([r["p50"] for r in runs], "%.2f"),
                          spread([r["p99"] for r in runs], "%.2f"),
                          spread([100.0 * r["stale"] / max(r["drained"], 1) for r in runs], "%.2f"),
                          spread([100.0 * r["busy_stale"] / max(r["busy_weight"], 1) for r in runs], "%.2f"),
                          spread([100.0 * r["busy_error"] / max(r["busy_weight"], 1) for r in runs], "%.2f")))
                sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
