#!/usr/bin/env python3
"""Run the example sampler on Busy (examples/sampler/Busy.java) and check its
collapsed output against what the fixture does by construction:

  - every line is "frame;...;frame weight";
  - Busy.hot is the top frame of a clear majority (>= 60%) of the weight
    (the fixture spends ~90% of its CPU there);
  - every stack ending in Busy.hot is complete: Busy$Worker.run;Busy.spin;
    Busy.hot, nothing more, nothing less (inlining must not lose frames);
  - Busy.cold appears under Busy.main (the thread armed at VMInit is sampled);
  - failed walks ([error:...] roots) are at most 5% of the weight.

usage: check_sampler.py JAVA AGENT CLASSPATH
"""
import os
import re
import subprocess
import sys
import tempfile

HOT_STACK = ["Busy$Worker.run", "Busy.spin", "Busy.hot"]


def main():
    java, agent, classpath = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "busy.collapsed")
        cmd = [java, f"-agentpath:{agent}=out={out},interval=1000", "-cp", classpath, "Busy", "2000"]
        print(" ".join(cmd))
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=100)
        print(run.stdout, end="")
        if run.returncode != 0:
            sys.exit(f"FAIL: java exited with {run.returncode}")
        with open(out) as f:
            lines = f.read().splitlines()

    stacks = []
    for line in lines:
        m = re.fullmatch(r"(\S.*) (\d+)", line)
        if not m:
            sys.exit(f"FAIL: not a collapsed-stack line: {line!r}")
        stacks.append((m.group(1).split(";"), int(m.group(2))))

    total = sum(w for _, w in stacks)
    hot = sum(w for s, w in stacks if s[-1] == "Busy.hot")
    failed = sum(w for s, w in stacks if s[0].startswith("[error:"))
    cold = sum(w for s, w in stacks if s[0] == "Busy.main" and s[-1] == "Busy.cold")
    bad_hot = [(s, w) for s, w in stacks if s[-1] == "Busy.hot" and s != HOT_STACK]
    print(f"total weight {total}: Busy.hot on top {hot} ({100.0 * hot / max(total, 1):.1f}%), "
          f"Busy.cold {cold}, failed walks {failed}")
    for s, w in sorted(stacks, key=lambda sw: -sw[1])[:10]:
        print(f"  {w:6d}  {';'.join(s)}")

    problems = []
    if total < 1000:
        problems.append(f"only {total} intervals sampled (expected ~2200 for 2.2 s of CPU at 1 ms)")
    if hot < 0.6 * total:
        problems.append("Busy.hot is not on top of a clear majority of the samples")
    for s, w in bad_hot:
        problems.append(f"incomplete or wrong stack for Busy.hot (weight {w}): {';'.join(s)}")
    if cold == 0:
        problems.append("no Busy.main;...;Busy.cold sample: the main thread was not sampled")
    if failed > 0.05 * total:
        problems.append(f"{failed} of {total} in failed walks (> 5%)")
    for p in problems:
        print("FAIL:", p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
