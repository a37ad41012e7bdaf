#!/usr/bin/env python3
"""HotSpot's AsyncGetCallTrace against ASGST_RunWithIterator on real
programs: javac, Xalan-J and H2 (bench/overhead/overhead.py's workloads) run
under tests/jvm/agct's agent with the option `all`, which signals every
Java thread in turn (one signal every 500 us) and walks each sample both
ways on the same context. Prints each run's comparison (the agent's report)
and a line per workload.

  agct_programs.py --java-home J --jdk NAME --agent SO --out DIR [--rounds N]
                   [--workloads javac,xslt,sql] [--flags "-XX:..."]
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "overhead"))
import overhead  # noqa: E402  (the workloads)


def main():
    a = overhead.study_args(1, flags="")
    failed = 0
    for wname in a.workloads.split(","):
        wl = overhead.prepared(wname, os.path.join(a.out, "inputs", a.jdk))
        for rnd in range(1, a.rounds + 1):
            rundir = os.path.join(a.out, "runs", a.jdk, wname, "r%d" % rnd)
            os.makedirs(rundir, exist_ok=True)
            jvm = ["-XX:+UnlockDiagnosticVMOptions", "-XX:+DebugNonSafepoints"] + a.flags.split()
            jvm.append("-agentpath:%s=all" % a.agent)
            p = overhead.subprocess.run(wl.argv(a.java_home, jvm, rundir), capture_output=True, text=True,
                                        cwd=rundir, timeout=900)
            ok = p.returncode == 0 and wl.check(p.stdout, rundir)
            report = p.stderr[p.stderr.find("agct:"):] if "agct:" in p.stderr else ""
            m = re.search(r"agct: (\d+) samples; both walks finished (\d+), (\d+) of them with frames HotSpot names "
                          r"exactly; ASGST agrees on (\d+)", report)
            if not ok or m is None:
                print("agct_programs.py: %s %s r%d failed (exit %d): %s" % (a.jdk, wname, rnd, p.returncode,
                                                                          p.stderr[-1500:]), file=sys.stderr)
                failed += 1
                continue
            s, both, cmp_, same = (int(x) for x in m.groups())
            print("%s %-5s r%d: %d samples, both finished %d, comparable %d, agree %d (%.3f %%), disagree %d" % (
                a.jdk, wname, rnd, s, both, cmp_, same, 100.0 * same / max(cmp_, 1), cmp_ - same))
            print("  " + report.rstrip().replace("\n", "\n  "))
            sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
