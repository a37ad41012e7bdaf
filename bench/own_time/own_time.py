#!/usr/bin/env python3
"""profile2's own time by walk: javac, Xalan-J and H2 (bench/overhead/
overhead.py's workloads) under profile2 with event=cpu at one interval,
walk=signal and walk=safepoint in each round (their order shuffled per
round), ROUNDS rounds; per run the summary's `own time` line (docs/agent.md,
"What a profile shows"): the handlers' time and per signal, the queue
drainer's and the aggregator's CPU time, and all of it as a share of the
process's CPU time. Then the medians per workload and walk.

  own_time.py --java-home J --jdk NAME --agent SO --out DIR [--rounds N]
              [--interval 1ms] [--workloads javac,xslt,sql] [--opts EXTRA]
"""
import os
import random
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "overhead"))
import overhead  # noqa: E402  (the workloads)

OWN = re.compile(r"^own time: ([0-9.]+) s, ([0-9.]+) % of the process's CPU time \(([0-9.]+) s\): signal handlers "
                 r"([0-9.]+) s \(([0-9.]+) us a signal\), queue drainer ([0-9.]+) s, aggregator ([0-9.]+) s", re.M)
FIELDS = ("own s", "own %", "handlers s", "us/signal", "drainer s", "aggregator s")


def main():
    a = overhead.study_args(5, interval="1ms", opts="")
    failed = 0
    for wname in a.workloads.split(","):
        wl = overhead.prepared(wname, os.path.join(a.out, "inputs", a.jdk))
        runs = {"signal": [], "safepoint": []}
        for rnd in range(1, a.rounds + 1):
            for walk in random.sample(sorted(runs), len(runs)):
                rundir = os.path.join(a.out, "runs", a.jdk, wname, walk, "r%d" % rnd)
                base = os.path.join(rundir, "profile")
                opts = "event=cpu,interval=%s,walk=%s,quiet,file=%s.txt%s" % (
                    a.interval, walk, base, "," + a.opts if a.opts else "")
                ok, p = overhead.run_under_agent(wl, a.java_home, a.agent, opts, rundir)
                m = OWN.search(open(base + ".txt").read()) if ok and os.path.exists(base + ".txt") else None
                if not m:
                    print("own_time.py: %s %s %s r%d failed: %s" % (a.jdk, wname, walk, rnd, p.stderr[-1500:]),
                          file=sys.stderr)
                    failed += 1
                    continue
                own, pct, _, hs, us, dr, agg = (float(x) for x in m.groups())
                runs[walk].append((own, pct, hs, us, dr, agg))
                print("%s %-5s %-9s r%d: own %.3f s (%.1f %%): handlers %.3f s (%.1f us a signal), drainer %.3f s, "
                      "aggregator %.3f s" % (a.jdk, wname, walk, rnd, own, pct, hs, us, dr, agg))
                sys.stdout.flush()
        for walk, rs in sorted(runs.items()):
            if rs:
                med = [statistics.median(r[i] for r in rs) for i in range(len(FIELDS))]
                print("%s %-5s %-9s median of %d: %s" % (a.jdk, wname, walk, len(rs), ", ".join(
                    "%s %.3g" % (f, v) for f, v in zip(FIELDS, med))))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
