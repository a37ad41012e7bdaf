#!/usr/bin/env python3
"""Run examples/minimal on Busy (examples/sampler/Busy.java), loaded at
start-up and into the running JVM, and check what it prints: Busy.hot is
the top method of most samples (about 90 % by construction; >= 60 % is
required, as for the sampler example), and the Java samples are many.

  check_minimal.py JAVA LIBMINIMAL BUSY_CLASSDIR
"""
import os
import re
import subprocess
import sys
import time


def check(label, out):
    print(f"--- {label}\n{out}")
    m = re.search(r"minimal: (\d+) Java samples", out)
    hot = re.search(r"minimal: +([\d.]+)% Busy\.hot\n", out)
    problems = []
    if not m or int(m.group(1)) < 50:
        problems.append("fewer than 50 Java samples")
    if not hot or float(hot.group(1)) < 60.0:
        problems.append("Busy.hot is not the top method of >= 60 % of the samples")
    return [f"{label}: {p}" for p in problems]


def main():
    java, lib, classdir = sys.argv[1:4]
    problems = []
    run = subprocess.run([java, f"-agentpath:{lib}", "-cp", classdir, "Busy", "2000"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60)
    if run.returncode != 0:
        problems.append(f"-agentpath: java exited with {run.returncode}")
    problems += check("-agentpath", run.stdout)

    # Into a running JVM: Busy spins 4 s of CPU; the agent is loaded early on.
    jcmd = os.path.join(os.path.dirname(java), "jcmd")
    p = subprocess.Popen([java, "-XX:+EnableDynamicAgentLoading", "-cp", classdir, "Busy", "4000"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    loaded = False
    try:
        # One attach, once the VM is up (a SIGQUIT that reaches a JVM before
        # it installed its handlers would end it); jcmd itself waits for the
        # attach listener.
        time.sleep(1.0)
        a = subprocess.run([jcmd, str(p.pid), "JVMTI.agent_load", lib], capture_output=True, text=True, timeout=60)
        loaded = "return code: 0" in a.stdout
        if not loaded:
            print(a.stdout, a.stderr)
        out, _ = p.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        problems.append("attach: jcmd or the JVM did not finish in time")
    if not loaded:
        problems.append("jcmd JVMTI.agent_load failed")
    if p.returncode != 0:
        problems.append(f"attach: java exited with {p.returncode}")
    problems += check("jcmd JVMTI.agent_load", out)
    for pr in problems:
        print("FAIL:", pr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
