#!/usr/bin/env python3
"""event=cpu where perf_event_open is refused (issue 13, item 5).

Every JVM runs under perf_refused (perf_refused.c), a seccomp filter that
makes perf_event_open fail with EPERM (a container's default profile) or
EACCES (what kernel.perf_event_paranoid = 3 answers), inherited by every
thread and child. The cpu engine must then sample with its POSIX CPU-time
timer per thread. The program is AgentFixture.java run for a fixed amount
of the worker's CPU time (WORKER_CPU_S), so that a loaded machine changes
the run's length, not its profile. Runs:

  agent   -agentpath, event=cpu at 1 ms and at 10 ms, under EPERM and under
          EACCES (four runs);
  run     `profile2 run -e cpu -i 1ms` under EPERM (the LD_PRELOAD path: the
          session starts in the java launcher's process);
  wall    event=wall under EACCES: not affected by the filter.

Checks of every cpu run:
  - the summary's engine line names the timer fallback and the right
    reason: EPERM under a seccomp filter is put on the filter, not on
    perf_event_paranoid; EACCES on the sysctl when it is above 2, else on
    "this process's seccomp filter or a security module";
  - no perf_event file descriptor in the JVM (its /proc/PID/fd, looked at
    every 0.2 s while it runs);
  - shares: hotA SHARE_TOL of 75 % of hotA+coldB (agent_test.check_hot_share);
  - the worker thread's weight x interval (the runs use `threads`: its
    root frame) against its own CPU time (the fixture prints it) within
    WORKER_WEIGHT_TOL: at 1 ms the timer fires at most once per scheduler
    tick, so this holds only through si_overrun; on a loaded machine the
    kernel may not yet have signalled the last hundreds of ms when the
    thread ends, and those are in the thread's [lost] weight (the engine
    line says how much), so this holds only through the engine's settling
    of the timer's account;
  - the worker's samples in AgentFixture.worker hold WORKER_SAMPLED_MIN of
    its CPU time: [lost] is the exception, not where the time goes;
  - the whole profile's weight x interval against the process's CPU time
    during the session (the summary's "own time" line gives it) within
    PROCESS_WEIGHT_MIN .. PROCESS_WEIGHT_MAX. (Against the JVM's whole CPU
    time, getrusage of the child, printed too, the start-up before the
    session counts, which depends on the host: 0.6 s of 2.9 under ASan on
    a VM with dear page faults.)
The limits come from measured distributions (docs/testing.md, "CPU timer
fallback"). Figures are printed per run (-v in meson).

Exit status 0 when every check holds; else the failed checks are printed
and the status is 1.
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import time

import agent_test as at

WORKER_CPU_S = 2.0
# At 10 ms the worker runs twice as long: the share's precision rests on
# the signals, and on a loaded machine the kernel delivers a CPU-time
# timer's expiries late and several to a signal (one CI run under ASan got
# 99 signals, weight 2.10 each, for the 200 intervals of 2 s). 400 intervals
# keep ~190 signals at that rate. (The share check's minimum is 100 of
# weight since 2026-12-07; the signals' effective sample size sets its
# tolerance.)
WORKER_CPU_S_10MS = 4.0
# From 10 runs per JDK and configuration, 110 cpu runs in all (docs/testing.md,
# "CPU-time timer fallback"): shares 68.1-79.4 %, worker 0.992-1.000,
# process 0.923-0.970. With the fixture's chunks sized from its pace
# (2026-12-07): shares 71.8-79.9 % in 50 ASan configurations (40 beside three
# spinning processes), 73.0-77.0 % in a clean-clone run's 40. Few or unequal
# signals widen the tolerance beyond this (check_hot_share).
SHARE_TOL = 0.10  # 1.45x the largest deviation of the 110 runs, 6.9 points
WORKER_WEIGHT_TOL = 0.03  # 3.7x the largest deviation, 0.8 %; without si_overrun: ~0.25
# Without the settling: 0.80 once in CI under ASan (the timer 400 ms behind
# when the worker ended), otherwise 0.992 and above.
WORKER_SAMPLED_MIN = 0.60
# Against the session's CPU time, one clean-clone run per build on the VM
# of 2026-12-05, 12 runs each: plain 0.980-0.995, ASan 0.952-0.992.
PROCESS_WEIGHT_MIN = 0.90  # 0.05 below the lowest (ASan)
PROCESS_WEIGHT_MAX = 1.02  # above 1 only by rounding


def perf_fds(root):
    """perf_event descriptors held by root and its descendants, and whether
    any of them could be read."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                ppid = int(f.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(d))
    todo, n, seen = [root], 0, False
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
            seen = True
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "anon_inode:[perf_event]":
                    n += 1
            except OSError:
                pass
    return n, seen


def run_watched(cmd):
    """Run cmd; returns (rc, stdout, stderr, CPU seconds of the child and its
    descendants, most perf fds seen at once, scans that saw the process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = open(os.path.join(A.workdir, "stdout.%d" % time.monotonic_ns()), "w+")
    err = open(os.path.join(A.workdir, "stderr.%d" % time.monotonic_ns()), "w+")
    p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
    most, scans, deadline = 0, 0, time.monotonic() + 240
    while p.poll() is None and time.monotonic() < deadline:
        n, seen = perf_fds(p.pid)
        most, scans = max(most, n), scans + seen
        time.sleep(0.2)
    if p.poll() is None:
        p.kill()
    p.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out.seek(0)
    err.seek(0)
    return p.returncode, out.read(), err.read(), cpu, most, scans


def paranoid():
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def check_reason(label, refusal, engine):
    at.check(engine.startswith("CPU-time timer per thread"),
             "%s: the engine is the CPU-time timer fallback (%s)" % (label, engine))
    level = paranoid()
    if refusal == "eperm":
        ok = "by this process's seccomp filter" in engine and "needs <= 2" not in engine
        what = "put on the seccomp filter, not on perf_event_paranoid"
    elif level is not None and level > 2:
        ok = "kernel.perf_event_paranoid = %d" % level in engine and "needs <= 2" in engine
        what = "put on perf_event_paranoid = %d" % level
    else:
        ok = "seccomp filter or a security module" in engine and "perf_event_paranoid = %s allows it" % level in engine
        what = "put on the filter or a security module (perf_event_paranoid = %s allows perf)" % level
    at.check(ok, "%s: the reason (%s) is %s" % (label, "EPERM" if refusal == "eperm" else "EACCES", what))


def check_cpu_run(label, refusal, interval_s, res, col, txt):
    rc, so, se, cpu, most, scans = res
    at.check(rc == 0 and "fixture done" in so, "%s: the JVM ran to the end (exit %d)" % (label, rc))
    if not at.check(os.path.exists(col) and os.path.exists(txt), "%s: wrote the profile and the summary" % label):
        print(se[-3000:])
        return
    with open(txt) as f:
        summary = f.read()
    engine = at.summary_value(summary, "engine")
    check_reason(label, refusal, engine)
    at.check(scans > 0 and most == 0, "%s: no perf_event descriptor in the JVM (%d scans)" % (label, scans))
    stacks = at.read_collapsed(col)
    samples = at.summary_value(summary, "samples")
    sig = re.match(r"(\d+) signals handled, weight (\d+)", samples)
    signals, weight = (int(sig.group(1)), int(sig.group(2))) if sig else (0, 0)
    ess = re.search(r"effective sample size (\d+)", samples)
    at.check(ess is not None, "%s: the summary gives the effective sample size (%s)" % (label, samples))
    at.check_hot_share(stacks, label, tolerance=SHARE_TOL, signals=signals if sig else None,
                       ess=int(ess.group(1)) if ess else None)
    m = re.search(r"^worker cpu ns (\d+)$", so, re.M)
    if not at.check(m is not None, "%s: the fixture printed the worker's CPU time" % label):
        return
    worker_cpu = int(m.group(1)) / 1e9
    def worker_thread(frames):
        return frames[0].startswith("[worker tid=")
    worker = at.weight(stacks, worker_thread) * interval_s
    sampled = at.weight(stacks, at.has("AgentFixture.worker")) * interval_s
    behind = at.weight(stacks, lambda f: worker_thread(f) and "[lost]" in f) * interval_s
    total = at.weight(stacks, lambda f: True) * interval_s
    print("      figures %s: worker %.3f s (%.3f s of it in worker(), %.3f s [lost]) / %.3f s CPU = %.4f; "
          "process %.3f s sampled / %.3f s CPU = %.4f; %d signals, weight %d (%.2f per signal), effective sample size %s; lost: %s; "
          "throttled: %d"
          % (label, worker, sampled, behind, worker_cpu, worker / worker_cpu, total, cpu, total / cpu if cpu else 0,
             signals, weight, weight / signals if signals else 0, ess.group(1) if ess else "?",
             at.summary_value(summary, "lost"),
             at.throttled(summary)))
    at.check(abs(worker / worker_cpu - 1) <= WORKER_WEIGHT_TOL,
             "%s: the worker thread's weight is %.3f s for %.3f s of its CPU time (1 +- %.2f)"
             % (label, worker, worker_cpu, WORKER_WEIGHT_TOL))
    at.check(sampled >= WORKER_SAMPLED_MIN * worker_cpu,
             "%s: %.3f s of the worker's weight is in AgentFixture.worker (at least %.2f of its CPU time)"
             % (label, sampled, WORKER_SAMPLED_MIN))
    own = re.search(r"of the process's CPU time \(([0-9.]+) s\)", at.summary_value(summary, "own time"))
    if not at.check(own is not None, "%s: the summary gives the process's CPU time in the session" % label):
        return
    session_cpu = float(own.group(1))
    at.check(PROCESS_WEIGHT_MIN <= total / session_cpu <= PROCESS_WEIGHT_MAX,
             "%s: the profile weighs %.3f s for the process's %.3f s of CPU time in the session (%.2f .. %.2f "
             "of it; the JVM's whole: %.3f s)" % (label, total, session_cpu, PROCESS_WEIGHT_MIN, PROCESS_WEIGHT_MAX,
                                                   cpu))


def fixture(a, worker_s=WORKER_CPU_S):
    return ["-cp", a.classes, "AgentFixture", "0", str(worker_s)]


def scenario_agent(a, refusal, interval_ms):
    label = "agent %s %d ms" % (refusal, interval_ms)
    base = os.path.join(a.workdir, "agent-%s-%dms" % (refusal, interval_ms))
    col, txt = base + ".collapsed", base + ".txt"
    opts = "event=cpu,interval=%dms,threads,file=%s,file=%s,quiet" % (interval_ms, col, txt)
    java = [os.path.join(a.java_home, "bin", "java"), "-agentpath:%s=%s" % (a.agent, opts)]
    worker_s = WORKER_CPU_S_10MS if interval_ms >= 10 else WORKER_CPU_S
    res = run_watched([a.perf_refused, refusal] + java + fixture(a, worker_s))
    check_cpu_run(label, refusal, interval_ms / 1000, res, col, txt)


def scenario_run(a):
    label = "profile2 run eperm 1 ms"
    base = os.path.join(a.workdir, "run")
    col, txt = base + ".collapsed", base + ".txt"
    cmd = [a.perf_refused, "eperm", a.profile2, "run", "-e", "cpu", "-i", "1ms", "-o", col, "-o", txt, "threads", "--",
           os.path.join(a.java_home, "bin", "java")] + fixture(a)
    check_cpu_run(label, "eperm", 0.001, run_watched(cmd), col, txt)


def scenario_wall(a):
    col = os.path.join(a.workdir, "wall.collapsed")
    java = [os.path.join(a.java_home, "bin", "java"),
            "-agentpath:%s=event=wall,interval=2ms,file=%s,quiet" % (a.agent, col)]
    rc, so, se, _, most, scans = run_watched([a.perf_refused, "eacces"] + java + fixture(a))
    at.check(rc == 0 and "fixture done" in so, "wall: the JVM ran to the end (exit %d)" % rc)
    at.check(scans > 0 and most == 0, "wall: no perf_event descriptor in the JVM (%d scans)" % scans)
    if not at.check(os.path.exists(col), "wall: wrote " + col):
        print(se[-3000:])
        return
    stacks = at.read_collapsed(col)
    sleeper = at.weight(stacks, at.has("AgentFixture.sleeper"))
    worker = at.weight(stacks, at.has("AgentFixture.worker"))
    # Both live the whole run: sampled alike whatever CPU they used.
    at.check(worker > 100 and sleeper > 0 and 0.5 <= sleeper / worker <= 2.0,
             "wall: sleeper and worker sampled alike (%d vs %d samples' weight)" % (sleeper, worker))


A = None


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("--java-home", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--profile2", required=True)
    ap.add_argument("--perf-refused", required=True)
    ap.add_argument("--classes", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only", help="run only this scenario: agent, run or wall")
    A = a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    for f in os.listdir(a.workdir):
        os.unlink(os.path.join(a.workdir, f))
    if a.only in (None, "agent"):
        for refusal in ("eperm", "eacces"):
            for interval_ms in (1, 10):
                scenario_agent(a, refusal, interval_ms)
    if a.only in (None, "run"):
        scenario_run(a)
    if a.only in (None, "wall"):
        scenario_wall(a)
    if at.FAILURES:
        print("%d check(s) failed" % len(at.FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
