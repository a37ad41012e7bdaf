#!/usr/bin/env python3
"""The reliability suite: StressFixture under the profiler at 100 us.

For each JDK and each configuration ({cpu, wall} x {signal, safepoint}
walks, interval=100us) the fixture runs for --duration seconds with the
agent, after one unprofiled run per JDK that gives the expected output. A
configuration passes when

  - the JVM exits with status 0 before its timeout (a run still going at the
    timeout is a hang: its Java threads are dumped with jcmd Thread.print, or
    SIGQUIT when jcmd gets no answer, its native threads with gdb if present,
    and it is killed),
  - no hs_err file appeared (-XX:ErrorFile points into the run's directory),
  - its stdout is byte for byte the unprofiled run's,
  - the profile has samples, and the text summary's counters parse.

Printed per configuration: the run's duration, the samples taken ("samples:
N signals handled" in the summary), the errors counted (incomplete walks and
lost samples, for information: they are reported, not failures), and PASS or
FAIL with the reasons; then one summary line. Exit status 0 when all pass.

  stress.py --agent build/agent/libprofile2-agent.so --classes DIR --jni LIB \\
            [--duration 6] [--jdk jdk17] [--config cpu-signal] [--workdir DIR]

The files of each run (profile, summary, stdout, stderr, dumps) stay in
WORKDIR/<jdk>-<config>/.
"""
import argparse
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

CONFIGS = ["cpu-signal", "cpu-safepoint", "wall-signal", "wall-safepoint"]
KNOWN_JDKS = [("jdk17", "/usr/lib/jvm/java-17-openjdk-amd64"), ("jdk25", "/usr/lib/jvm/temurin-25-jdk-amd64")]
# The unprofiled reference run: its output does not depend on the duration.
REFERENCE_SECONDS = 3


def no_core():
    # A crash is reported through its hs_err file; a core of a JVM is large.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def tool_env():
    """The environment of jcmd and gdb: without the ASan runtime preloaded
    for the JVM under test (gdb is not built for it)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


def dump_hung(pid, java_home, out_path):
    """Everything that tells where a hung JVM is stuck, into out_path."""
    with open(out_path, "w") as out:
        out.write("== jcmd %d Thread.print\n" % pid)
        out.flush()
        try:
            r = subprocess.run([os.path.join(java_home, "bin", "jcmd"), str(pid), "Thread.print"],
                               stdout=out, stderr=subprocess.STDOUT, timeout=30, env=tool_env())
            answered = r.returncode == 0
        except subprocess.TimeoutExpired:
            answered = False
        if not answered:
            # jcmd needs the attach listener and a safepoint; a JVM stuck
            # outside one still prints its threads on SIGQUIT (to its stdout).
            out.write("\n== jcmd did not answer: SIGQUIT (the dump is in the run's stdout)\n")
            try:
                os.kill(pid, signal.SIGQUIT)
            except ProcessLookupError:
                pass
            time.sleep(5)
        if shutil.which("gdb"):
            out.write("\n== gdb: native stacks\n")
            out.flush()
            try:
                subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt 40"],
                               stdout=out, stderr=subprocess.STDOUT, timeout=120, env=tool_env())
            except subprocess.TimeoutExpired:
                out.write("gdb timed out\n")


def run_java(java_home, args, rundir, timeout):
    """Runs java with args in rundir; returns (status or None if hung, seconds)."""
    stdout = open(os.path.join(rundir, "stdout"), "w")
    stderr = open(os.path.join(rundir, "stderr"), "w")
    t0 = time.monotonic()
    p = subprocess.Popen([os.path.join(java_home, "bin", "java")] + args, cwd=rundir, stdout=stdout,
                         stderr=stderr, stdin=subprocess.DEVNULL, preexec_fn=no_core)
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        dump_hung(p.pid, java_home, os.path.join(rundir, "hang-dump.txt"))
        p.kill()
        p.wait()
        rc = None
    stdout.close()
    stderr.close()
    return rc, time.monotonic() - t0


def jdk_feature(java_home):
    """The JDK's feature release (17, 25), from its release file."""
    try:
        with open(os.path.join(java_home, "release")) as f:
            m = re.search(r'^JAVA_VERSION="(\d+)', f.read(), re.M)
            return int(m.group(1)) if m else 0
    except OSError:
        return 0


def fixture_args(a, java_home, rundir, seconds):
    args = ["-XX:ErrorFile=" + os.path.join(rundir, "hs_err_%p.log"), "-Dstress.jni=" + a.jni,
            "-cp", a.classes]
    if jdk_feature(java_home) >= 21:
        # System.load is a restricted method from JDK 22 on: without this it
        # warns (on stderr, which is not compared, but it is noise).
        args.insert(0, "--enable-native-access=ALL-UNNAMED")
    return args + ["StressFixture", "%g" % seconds]


def summary_fields(txt):
    """The counters of the text summary as {label: value text}."""
    out = {}
    for line in txt.splitlines():
        m = re.match(r"^([a-z][a-z ]*): (.*)$", line)
        if m and m.group(1) not in out:
            out[m.group(1)] = m.group(2)
    return out


def collapsed_read(path):
    """(total weight, samples whose frames hold bytes that are not UTF-8 or
    control characters). A garbled name means a method was named from
    memory that had been freed: a failure (see README.md)."""
    total = garbled = 0
    with open(path, "rb") as f:
        for raw in f:
            line = raw.rstrip(b"\n").decode("utf-8", errors="replace")
            stack, _, n = line.rpartition(" ")
            if not stack:
                continue
            total += int(n)
            if "\ufffd" in stack or any(ord(c) < 32 for c in stack):
                garbled += int(n)
    return total, garbled


def hs_errs(rundir):
    return sorted(f for f in os.listdir(rundir) if f.startswith("hs_err"))


def run_config(a, jdk, java_home, config, expected):
    """One profiled run; returns (ok, line to print)."""
    event, walk = config.split("-")
    rundir = os.path.join(a.workdir, jdk + "-" + config)
    shutil.rmtree(rundir, ignore_errors=True)
    os.makedirs(rundir)
    collapsed = os.path.join(rundir, "profile.collapsed")
    txt = os.path.join(rundir, "profile.txt")
    opts = "event=%s,walk=%s,interval=100us,file=%s,file=%s" % (event, walk, collapsed, txt)
    # The program runs its rounds until the duration is up; the profiler at
    # 100 us on one CPU slows the last round and the JVM's start and exit.
    timeout = a.duration * 2 + 120
    rc, secs = run_java(java_home, ["-agentpath:%s=%s" % (a.agent, opts)] + fixture_args(a, java_home, rundir, a.duration),
                        rundir, timeout)
    problems = []
    if rc is None:
        problems.append("hang: killed after %d s (dump in %s)" % (timeout, os.path.join(rundir, "hang-dump.txt")))
    elif rc != 0:
        problems.append("exit status %d" % rc)
    errs = hs_errs(rundir)
    if errs:
        problems.append("JVM crash: " + ", ".join(os.path.join(rundir, e) for e in errs))
    with open(os.path.join(rundir, "stdout"), errors="replace") as f:
        got = f.read()
    if rc is not None and got != expected:
        problems.append("stdout differs from the unprofiled run (see %s/stdout)" % rundir)
    samples = errors = lost = -1
    if os.path.exists(txt):
        with open(txt) as f:
            fields = summary_fields(f.read())
        m = re.match(r"(\d+) signals handled, weight (\d+)", fields.get("samples", ""))
        e = re.match(r"(\d+)", fields.get("incomplete walks", ""))
        lo = re.match(r"(\d+)", fields.get("lost", ""))
        if m and e and lo:
            samples, errors, lost = int(m.group(1)), int(e.group(1)), int(lo.group(1))
        else:
            problems.append("summary counters do not parse: " + txt)
    elif rc is not None:
        problems.append("no summary written: " + txt)
    garbled = 0
    if os.path.exists(collapsed):
        in_profile, garbled = collapsed_read(collapsed)
        if in_profile <= 0:
            problems.append("the profile has no samples: " + collapsed)
    elif rc is not None:
        problems.append("no profile written: " + collapsed)
    if garbled:
        problems.append("%d samples with a garbled frame name (named from freed memory) in %s" % (garbled, collapsed))
    line = "%-6s %-15s %7.1f s  samples %9d  incomplete walks %6d  lost %6d  %s" % (
        jdk, config, secs, samples, errors, lost, "PASS" if not problems else "FAIL")
    for p in problems:
        line += "\n       - " + p
    return not problems, line


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agent", required=True, help="libprofile2-agent.so")
    ap.add_argument("--classes", required=True, help="directory of StressFixture's classes")
    ap.add_argument("--jni", required=True, help="libstress_jni.so")
    ap.add_argument("--duration", type=float, default=6, help="seconds per configuration (600 for the long form)")
    ap.add_argument("--java-home", action="append", default=[], metavar="NAME=PATH",
                    help="a JDK to run on (repeatable); default: JDK 17 and 25 where installed")
    ap.add_argument("--jdk", action="append", default=[], help="only these JDK names (jdk17, jdk25)")
    ap.add_argument("--config", action="append", default=[], choices=CONFIGS, help="only these configurations")
    ap.add_argument("--workdir", default="stress-runs", help="where each run's files go")
    a = ap.parse_args()
    for attr in ("agent", "classes", "jni", "workdir"):
        setattr(a, attr, os.path.abspath(getattr(a, attr)))
    jdks = [tuple(s.split("=", 1)) for s in a.java_home] or [j for j in KNOWN_JDKS if os.path.exists(j[1])]
    if a.jdk:
        jdks = [j for j in jdks if j[0] in a.jdk]
    configs = a.config or CONFIGS
    if not jdks:
        print("stress: no JDK to run on")
        return 1
    for path in (a.agent, a.jni, os.path.join(a.classes, "StressFixture.class")):
        if not os.path.exists(path):
            print("stress: missing " + path)
            return 1
    os.makedirs(a.workdir, exist_ok=True)
    t0 = time.monotonic()
    passed = failed = 0
    for jdk, home in jdks:
        # The reference: the same program without the agent.
        refdir = os.path.join(a.workdir, jdk + "-unprofiled")
        shutil.rmtree(refdir, ignore_errors=True)
        os.makedirs(refdir)
        rc, secs = run_java(home, fixture_args(a, home, refdir, REFERENCE_SECONDS), refdir, REFERENCE_SECONDS * 2 + 120)
        with open(os.path.join(refdir, "stdout")) as f:
            expected = f.read()
        ok = rc == 0 and not hs_errs(refdir) and "FAILED" not in expected and "UNSTABLE" not in expected
        print("%-6s %-15s %7.1f s  %s" % (jdk, "unprofiled", secs, "ok" if ok else "FAIL (see %s)" % refdir),
              flush=True)
        if not ok:
            # Without a reference nothing can be compared: the fixture itself is broken.
            failed += len(configs)
            continue
        for config in configs:
            ok, line = run_config(a, jdk, home, config, expected)
            print(line, flush=True)
            passed += ok
            failed += not ok
    print("stress: %d of %d configurations passed, %d failed, %.0f s in all (duration %g s per configuration)" %
          (passed, passed + failed, failed, time.monotonic() - t0, a.duration))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
