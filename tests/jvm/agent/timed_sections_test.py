#!/usr/bin/env python3
"""The profile against the program's own clock: the bundled demo
(tools/demo/DemoProgram.java) times its sections on the thread's CPU clock;
the agent samples it at 1 ms of CPU time, and the shares of main's weight
whose youngest DemoProgram frame is isPrime and escapes must be the shares
the program measured for those sections, within LIMIT points. Both walks (walk=signal and walk=safepoint) are checked, each
in its own JVM.

Measured (18 runs, both walks and JDKs, 2 under ASan, on an AMD EPYC
host): the largest difference 2.2 points (walk=safepoint, escapes: the
drains' own time sits at the poll). On an Intel Xeon host (2026-11-28, 21
runs, both walks and JDKs, beside a CI run) the program's own split moves
(isPrime 46-51 % where it was 42-44 %) and the profile gives isPrime 2.1-5.1
points less, every run: the skid of a signal after the loop's division
differs by microarchitecture. With HotSpot's own reading of an interrupted
compiled pc (the PcDesc after it, pc + 1) 3 runs of 4 put 38 points of
isPrime's time on escapes.

  timed_sections_test.py --java-home J --agent SO --classes DIR (the demo's) --workdir DIR [--walk signal|safepoint]
"""
import argparse
import os
import re
import subprocess
import sys

LIMIT = 10.0  # points; 2x the largest difference measured, a quarter of the pc + 1 error
MIN_SAMPLES = 1000


def shares(collapsed):
    total = {"isPrime": 0, "escapes": 0}
    n = 0
    for line in open(collapsed):
        stack, _, w = line.rstrip("\n").rpartition(" ")
        if "DemoProgram.main" not in stack:
            continue
        w = int(w)
        n += w
        fixture = [f for f in stack.split(";") if f.startswith("DemoProgram.")]
        top = fixture[-1].split(".")[1].split(":")[0]
        if top in total:
            total[top] += w
    return n, {k: 100.0 * v / max(n, 1) for k, v in total.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--java-home", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--classes", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--walk", default="signal")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    coll = os.path.join(a.workdir, "profile.collapsed")
    if os.path.exists(coll):
        os.remove(coll)
    opts = "event=cpu,interval=1ms,walk=%s,file=%s,quiet" % (a.walk, coll)
    p = subprocess.run([os.path.join(a.java_home, "bin", "java"), "-agentpath:%s=%s" % (a.agent, opts),
                        "-cp", a.classes, "DemoProgram", "3"], capture_output=True, text=True, timeout=120)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    m = re.search(r"^demo: the loop's own CPU clock: isPrime ([\d.]+) %, escapes ([\d.]+) %, words ([\d.]+) %", p.stdout, re.M)
    if p.returncode != 0 or m is None or not os.path.exists(coll):
        print("FAIL: the fixture did not run to its end (exit %d) or wrote no profile" % p.returncode)
        return 1
    timed = {"isPrime": float(m.group(1)), "escapes": float(m.group(2))}
    n, prof = shares(coll)
    print("walk=%s: %d samples under DemoProgram.main; isPrime %.2f %% (timed %.2f), escapes %.2f %% (timed %.2f)" %
          (a.walk, n, prof["isPrime"], timed["isPrime"], prof["escapes"], timed["escapes"]))
    bad = [k for k in timed if abs(prof[k] - timed[k]) > LIMIT]
    if n < MIN_SAMPLES:
        print("FAIL: %d samples, fewer than %d" % (n, MIN_SAMPLES))
        return 1
    if bad:
        print("FAIL: %s more than %.1f points from the program's own timing" % (", ".join(bad), LIMIT))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
