#!/usr/bin/env python3
"""Overhead of profile2, of JDK Flight Recorder and (with --ap) of
async-profiler on real Java programs (issue 6, item 1; issue 14, item 4),
with the profiles kept for the agreement study (issue 6, item 3).

Workloads (Debian packages and the JDK; the first three are the e2e tests'
programs, whose input generators tests/jvm/e2e/e2e_test.py holds):
  javac    the JDK's javac compiling a generated tree of source files
  xslt     Xalan-J's command line over a quadratic stylesheet
  sql      H2's RunScript: fill, filter, nested-loop join in memory
  sqlloop  long-running, steady state (bench/overhead/SqlLoop.java): two
           JDBC client threads running a mix of queries and updates against
           an in-memory H2 database. A fixed amount of work (the ratios are
           of times, so every run must do the same work), sized once per
           JDK before the warm-up: a calibration run of the loop for 75 s
           (sqlloop-SECONDS: another length) gives the iterations every run
           then does, checked (and scaled up while too short) by a run of
           them, so an unprofiled run lasts ~75 s on the machine at hand.
           Not in the default list: with every configuration a round of it
           takes about an hour (27 runs, the 100 us ones 2-5 times as long),
           five rounds on two JDKs ten hours.

Configurations, per JDK (see configs() below): the program alone (base);
profile2 for event cpu and wall, interval 10 ms, 1 ms and 100 us, walk
signal and safepoint; profile2 started but never sampling (p2-idle) and
-XX:+DebugNonSafepoints alone, which tell the fixed costs apart; JFR's
jdk.ExecutionSample at 10 ms and at 1 ms (the shortest period it honours:
100 us samples no faster than 1 ms); on JDK 25 also JFR's jdk.CPUTimeSample
(JEP 509) at 10 ms, 1 ms and 100 us. With --ap (the path of async-profiler's
libasyncProfiler.so): async-profiler as an agent at profile2's settings,
event cpu at 10 ms, 1 ms and 100 us and event wall at 1 ms (ap_args() says
which options and why).

Design: after one warm-up run per workload, each round runs every
configuration once in a shuffled order with a base run before every third
configuration and at the end; a configuration's ratio in a round is its
time over the mean of the base runs just before and just after it (at most
three runs apart, so slow drift of the machine cancels). Wall time is the
process's elapsed time; CPU time its user + system time from wait4(). One
raw JSON line per run goes to OUT/raw.jsonl (with, for profile2 and
async-profiler, the sum of the collapsed stacks' counts: the weight that
summarize.py's sample fidelity is made of); summarize.py makes the tables.
An async-profiler run that wrote no samples counts as failed.

  overhead.py --java-home J --jdk NAME --agent SO --out DIR [--rounds N]
              [--workloads javac,xslt,sql] [--only REGEX] [--cpus LIST]
              [--ap LIBASYNCPROFILER]
"""
import argparse
import json
import os
import random
import resource
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "jvm", "e2e"))
import e2e_test  # noqa: E402  (the workloads' inputs and expected results)

INTERVALS = (("10ms", "10 ms"), ("1ms", "1 ms"), ("100us", "100 us"))
INTERVAL_NS = {"10ms": 10000000, "1ms": 1000000, "100us": 100000}

# async-profiler's settings, the same as profile2's (summarize.py sets them
# side by side): its cpu event at each interval, its wall event at 1 ms.
AP_SETTINGS = (("cpu", "10ms"), ("cpu", "1ms"), ("cpu", "100us"), ("wall", "1ms"))


def configs(jdk, ap=None):
    """[(name, kind, detail)] in a fixed order (rounds shuffle it)."""
    out = []
    for event in ("cpu", "wall"):
        for walk in ("signal", "safepoint"):
            for iv, _ in INTERVALS:
                out.append(("p2-%s-%s-%s" % (event, walk, iv), "profile2",
                            {"event": event, "walk": walk, "interval": iv}))
    # Variants of a profile2 configuration with more agent options, for an
    # A/B in the same rounds: P2_VARIANTS="p2-cpu-safepoint-1ms+capture=127,queue=8;..."
    # adds a configuration named "p2-cpu-safepoint-1ms+capture=127,queue=8".
    for v in filter(None, os.environ.get("P2_VARIANTS", "").split(";")):
        name, _, more = v.partition("+")
        base = [c for c in out if c[0] == name]
        if not base or not more:
            sys.exit("overhead.py: bad P2_VARIANTS entry %r (want p2-EVENT-WALK-INTERVAL+options)" % v)
        out.append((v, "profile2", dict(base[0][2], more=more)))
    # What the overhead is made of (not sampling): the agent loaded and
    # started with an interval no run reaches (start-up, JVMTI events,
    # per-thread timers, DebugNonSafepoints, writing the files), and
    # DebugNonSafepoints alone (the JIT's extra debug information).
    out.append(("p2-idle", "profile2", {"event": "cpu", "walk": "signal", "interval": "100s"}))
    out.append(("jvm-debugnonsafepoints", "flags",
                {"flags": ["-XX:+UnlockDiagnosticVMOptions", "-XX:+DebugNonSafepoints"]}))
    for iv, jfc in INTERVALS[:2]:
        out.append(("jfr-exec-%s" % iv, "jfr", {"event": "jdk.ExecutionSample", "setting": "period", "value": jfc}))
    if jdk != "jdk17":
        for iv, _ in INTERVALS:
            out.append(("jfr-cpu-%s" % iv, "jfr", {"event": "jdk.CPUTimeSample", "setting": "throttle", "value": iv}))
    if ap:
        for event, iv in AP_SETTINGS:
            out.append(("ap-%s-%s" % (event, iv), "ap", {"event": event, "interval": iv}))
    return out


def ap_args(lib, event, interval, base):
    """async-profiler 4.5 as an agent (docs/IntegratingAsyncProfiler.md and
    docs/ProfilerOptions.md of its source):
      start            profile from the JVM's start to its exit, where the
                       file is written (as profile2's agent does);
      event=cpu|wall   cpu: a perf_events CPU-time counter per thread (as
                       profile2's cpu mode; "ctimer" would be its timer
                       fallback); wall: a sampler thread that goes through
                       every thread of the process (the VM's own too), 8
                       signals at a time, so that each is sampled once per
                       interval (a thread that used no CPU since its last
                       sample is counted without a signal), where profile2
                       signals up to 16 Java threads per interval, round
                       robin (its wall mode has no other setting);
      interval=NS      in nanoseconds (a bare number; "1ms" would parse too:
                       a unit letter after the number);
      cstack           left at its default, which since 4.2 is "vm" on
                       HotSpot: one walk through Java, VM and native frames,
                       the native ones unwound with the libraries' DWARF
                       tables: as profile2's default cstack=on (native frames
                       above the Java ones and whole stacks of the VM's own
                       threads, unwound with compact tables from .eh_frame);
      collapsed        the output format (the file name's extension says it
                       too), one line per stack, counts in samples;
      quiet            no "Profiling started/stopped" on stdout (profile2
                       runs with its quiet too).
    Not set, as profile2's defaults are not: threads, ann (tiers), lines.
    Both agents turn on DebugNonSafepoints."""
    opts = "start,event=%s,interval=%d,file=%s,collapsed,quiet" % (event, INTERVAL_NS[interval], base)
    return "-agentpath:%s=%s" % (lib, opts)


# --- the workloads -------------------------------------------------------------


class Workload:
    """prepare() once; argv(java_home, jvm_args) per run; check(stdout, dir)."""

    def __init__(self, name, scratch):
        self.name = name
        self.dir = os.path.join(scratch, name)


class Javac(Workload):
    def prepare(self, size):
        src = os.path.join(self.dir, "src")
        self.files = e2e_test.generate_javac_tree(src, size, 2)
        self.argfile = os.path.join(self.dir, "sources.txt")
        with open(self.argfile, "w") as f:
            f.write("\n".join(self.files) + "\n")

    def argv(self, java_home, jvm_args, rundir):
        out = os.path.join(rundir, "classes")
        os.makedirs(out, exist_ok=True)
        return ([os.path.join(java_home, "bin", "javac")] + ["-J" + a for a in jvm_args] +
                ["-proc:none", "-nowarn", "-d", out, "@" + self.argfile])

    def check(self, stdout, rundir):
        n = sum(1 for _, _, fs in os.walk(os.path.join(rundir, "classes")) for f in fs if f.endswith(".class"))
        return n >= len(self.files)


class Xslt(Workload):
    def prepare(self, size):
        self.cp = e2e_test.jars("/usr/share/java/xalan2.jar", "/usr/share/java/serializer.jar",
                                "/usr/share/java/xercesImpl.jar")
        self.xml, self.xsl, self.expected = e2e_test.xslt_inputs(self.dir, size, 40)

    def argv(self, java_home, jvm_args, rundir):
        self.result = os.path.join(rundir, "out.txt")
        return ([os.path.join(java_home, "bin", "java")] + jvm_args +
                ["-cp", self.cp, "org.apache.xalan.xslt.Process", "-IN", self.xml, "-XSL", self.xsl,
                 "-OUT", self.result])

    def check(self, stdout, rundir):
        with open(os.path.join(rundir, "out.txt")) as f:
            return [x.strip() for x in f.read().splitlines() if x.strip()] == self.expected


class Sql(Workload):
    def prepare(self, size):
        self.cp = e2e_test.jars("/usr/share/java/h2.jar")
        self.script, self.expected = e2e_test.sql_script(self.dir, 200000, size)

    def argv(self, java_home, jvm_args, rundir):
        return ([os.path.join(java_home, "bin", "java")] + jvm_args +
                ["-cp", self.cp, "org.h2.tools.RunScript", "-url", "jdbc:h2:mem:bench", "-user", "sa",
                 "-script", self.script, "-showResults"])

    def check(self, stdout, rundir):
        n, length, j = self.expected
        return (re.search(r"\b%d\b.*\b%d\b" % (n, length), stdout) is not None and
                re.search(r"\b%d\b" % j, stdout) is not None)


class Scaling(Workload):
    """bench/scaling/Scaling.java: name scale-tTHREADS-dDEPTH."""

    def prepare(self, units):
        _, t, d = self.name.split("-")
        self.threads, self.depth, self.units = int(t[1:]), int(d[1:]), units
        subprocess.run([os.path.join(self.java_home, "bin", "javac"), "-d", self.dir,
                        os.path.join(ROOT, "bench", "scaling", "Scaling.java")], check=True)

    def argv(self, java_home, jvm_args, rundir):
        return ([os.path.join(java_home, "bin", "java")] + jvm_args +
                ["-cp", self.dir, "Scaling", str(self.threads), str(self.depth), str(self.units)])

    def check(self, stdout, rundir):
        if not hasattr(self, "checksum"):
            self.checksum = stdout
        return stdout.startswith("checksum ") and stdout == self.checksum


class SqlLoop(Workload):
    """bench/overhead/SqlLoop.java against H2; name sqlloop or
    sqlloop-SECONDS (the length an unprofiled run should have)."""

    THREADS = 2

    def prepare(self, seconds):
        if "-" in self.name:
            seconds = int(self.name.split("-")[1])
        self.cp = e2e_test.jars("/usr/share/java/h2.jar") + os.pathsep + self.dir
        subprocess.run([os.path.join(self.java_home, "bin", "javac"), "-d", self.dir, "-cp", self.cp,
                        os.path.join(HERE, "SqlLoop.java")], check=True)
        # The work of every run: what the loop does in `seconds` here, then
        # checked with a run of it (JVM start and the table's fill
        # included), scaled up while that run is too short (the machine
        # got faster since: other work stopped).
        java = [os.path.join(self.java_home, "bin", "java"), "-cp", self.cp, "SqlLoop"]
        if self.cpus:
            java = ["taskset", "-c", self.cpus] + java
        r = subprocess.run(java + ["calibrate", str(seconds), str(self.THREADS)], capture_output=True, text=True,
                           check=True)
        self.iterations = int(re.search(r"^iterations (\d+)$", r.stdout, re.M).group(1))
        for _ in range(3):
            t0 = time.monotonic()
            subprocess.run(java + ["run", str(self.iterations), str(self.THREADS)], capture_output=True, check=True)
            took = time.monotonic() - t0
            print("overhead.py: %s: %d iterations a thread (%d threads) took %.0f s" % (
                self.name, self.iterations, self.THREADS, took), file=sys.stderr)
            if took >= 0.9 * seconds:
                break
            self.iterations = int(self.iterations * seconds / took)

    def argv(self, java_home, jvm_args, rundir):
        return ([os.path.join(java_home, "bin", "java")] + jvm_args +
                ["-cp", self.cp, "SqlLoop", "run", str(self.iterations), str(self.THREADS)])

    def check(self, stdout, rundir):
        # Every run's checksum is the first's (the warm-up's): the runs'
        # threads read and write disjoint rows, so it is deterministic.
        m = re.search(r"^checksum .*$", stdout, re.M)
        if m is None:
            return False
        if not hasattr(self, "checksum"):
            self.checksum = m.group(0)
        return m.group(0) == self.checksum


def prepared(wname, inputs):
    """Workload wname with its inputs made under inputs/ (for the studies
    that run it under the agent alone: bench/throttle, bench/queue_latency)."""
    cls, size = WORKLOADS[wname]
    wl = cls(wname, inputs)
    os.makedirs(wl.dir, exist_ok=True)
    wl.prepare(size)
    return wl


def study_args(rounds, **more):
    """The arguments of the studies that run these workloads under the
    agent alone (bench/throttle, queue_latency, agct, own_time): --java-home,
    --jdk, --agent, --out, --rounds (default rounds), --workloads, and one
    --NAME per keyword of more (its default). Paths made absolute."""
    ap = argparse.ArgumentParser()
    for name in ("java-home", "jdk", "agent", "out"):
        ap.add_argument("--" + name, required=True)
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--workloads", default="javac,xslt,sql")
    for name, default in more.items():
        ap.add_argument("--" + name, default=default)
    a = ap.parse_args()
    a.out, a.agent = os.path.abspath(a.out), os.path.abspath(a.agent)
    return a


def run_under_agent(wl, java_home, agent, opts, rundir, timeout=900):
    """One run of wl with profile2's agent and its options opts, in rundir;
    returns (ok, the process): ok if it exited 0 with the right output."""
    os.makedirs(rundir, exist_ok=True)
    argv = wl.argv(java_home, ["-agentpath:%s=%s" % (agent, opts)], rundir)
    p = subprocess.run(argv, capture_output=True, text=True, cwd=rundir, timeout=timeout)
    return p.returncode == 0 and wl.check(p.stdout, rundir), p


WORKLOADS = {"javac": (Javac, 15), "xslt": (Xslt, 1600), "sql": (Sql, 1200), "scale": (Scaling, 25000),
             "sqlloop": (SqlLoop, 75)}


# --- one run ---------------------------------------------------------------------


def jvm_args(a, kind, detail, rundir):
    """The JVM options of one configuration, and the files it writes."""
    if kind == "base":
        return [], {}
    if kind == "flags":
        return detail["flags"], {}
    if kind == "profile2":
        base = os.path.join(rundir, "profile")
        opts = "event=%s,interval=%s,walk=%s,tiers,quiet,file=%s.collapsed,file=%s.txt" % (
            detail["event"], detail["interval"], detail["walk"], base, base)
        if detail.get("more"):
            opts += "," + detail["more"]
        return ["-agentpath:%s=%s" % (a.agent, opts)], {"collapsed": base + ".collapsed", "txt": base + ".txt"}
    if kind == "ap":
        coll = os.path.join(rundir, "profile.collapsed")
        return [ap_args(a.ap, detail["event"], detail["interval"], coll)], {"collapsed": coll, "ap": True}
    jfc = os.path.join(rundir, "settings.jfc")
    with open(jfc, "w") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<configuration version="2.0">\n'
                '  <event name="%s"><setting name="enabled">true</setting>'
                '<setting name="%s">%s</setting><setting name="stackTrace">true</setting></event>\n'
                '</configuration>\n' % (detail["event"], detail["setting"], detail["value"]))
    rec = os.path.join(rundir, "recording.jfr")
    return ["-XX:StartFlightRecording=filename=%s,settings=%s" % (rec, jfc)], {"jfr": rec}


def run_once(a, wl, kind, detail, rundir):
    if os.path.isdir(rundir):
        shutil.rmtree(rundir)
    os.makedirs(rundir)
    extra, files = jvm_args(a, kind, detail, rundir)
    argv = wl.argv(a.java_home, extra, rundir)
    if a.cpus:
        argv = ["taskset", "-c", a.cpus] + argv
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=rundir)
    out, err = p.communicate(timeout=600)
    wall = time.monotonic() - t0
    # communicate() reaps the child; its CPU time is the increase of
    # RUSAGE_CHILDREN, which measured_run reads around this call.
    return p.returncode, out.decode(errors="replace"), err.decode(errors="replace"), wall, files


def children_cpu():
    """(user + system, user) CPU time of the reaped children."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime, ru.ru_utime


def collapsed_weight(files):
    """The sum of a collapsed profile's counts (profile2: weights in
    intervals; async-profiler: samples), None without one."""
    if "collapsed" not in files:
        return None
    n = 0
    try:
        with open(files["collapsed"]) as f:
            for line in f:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                if stack and count.isdigit():
                    n += int(count)
    except OSError:
        return None
    return n


def samples_of(a, files):
    """Samples the profiler recorded (read after the timing)."""
    if "ap" in files:
        return collapsed_weight(files)
    if "txt" in files:
        try:
            with open(files["txt"]) as f:
                m = re.search(r"^samples: (\d+) signals handled", f.read(), re.M)
            return int(m.group(1)) if m else None
        except OSError:
            return None
    if "jfr" in files and os.path.exists(files["jfr"]):
        r = subprocess.run([os.path.join(a.java_home, "bin", "jfr"), "summary", files["jfr"]],
                           capture_output=True, text=True)
        n = 0
        for line in r.stdout.splitlines():
            f = line.split()
            if len(f) >= 2 and f[0] in ("jdk.ExecutionSample", "jdk.CPUTimeSample", "jdk.NativeMethodSample"):
                n += int(f[1])
        return n
    return None


def measured_run(a, wl, name, kind, detail, rnd, seq, raw):
    rundir = os.path.join(a.out, "runs", a.jdk, wl.name, "current")
    c0, u0 = children_cpu()
    rc, out, err, wall, files = run_once(a, wl, kind, detail, rundir)
    c1, u1 = children_cpu()
    cpu, user = c1 - c0, u1 - u0
    ok = rc == 0 and wl.check(out, rundir)
    weight = collapsed_weight(files) if ok else None
    if not ok:
        print("overhead.py: %s %s %s failed (exit %s): %s" % (a.jdk, wl.name, name, rc, err[-2000:]),
              file=sys.stderr)
    elif "ap" in files and not weight:
        # async-profiler writes its file at the exit whatever happened; a
        # missing or empty one means it did not sample (its reason is on
        # stderr): the run does not count.
        ok = False
        print("overhead.py: %s %s %s: async-profiler wrote no samples to %s: %s" % (
            a.jdk, wl.name, name, files["collapsed"], err[-2000:]), file=sys.stderr)
    rec = {"jdk": a.jdk, "workload": wl.name, "config": name, "round": rnd, "seq": seq, "wall": wall,
           "cpu": cpu, "user": user, "ok": ok, "samples": samples_of(a, files) if ok else None,
           "weight": weight if ok else None}
    # Keep the collapsed profiles (agreement study; async-profiler's too, for
    # comparisons to come) and the summaries.
    if ok and "collapsed" in files and rnd > 0:
        keep = os.path.join(a.out, "profiles", a.jdk, wl.name)
        os.makedirs(keep, exist_ok=True)
        shutil.copy(files["collapsed"], os.path.join(keep, "%s.r%d.collapsed" % (name, rnd)))
        if "txt" in files:
            shutil.copy(files["txt"], os.path.join(keep, "%s.r%d.txt" % (name, rnd)))
    raw.write(json.dumps(rec) + "\n")
    raw.flush()
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--java-home", required=True)
    ap.add_argument("--jdk", required=True, help="label: jdk17, jdk25")
    ap.add_argument("--agent", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workloads", default="javac,xslt,sql")
    ap.add_argument("--only", default="", help="regex on configuration names")
    ap.add_argument("--cpus", default="", help="taskset CPU list for every run")
    ap.add_argument("--ap", default="", help="async-profiler's libasyncProfiler.so: run it too")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    # Runs start in their own directory: every path they get is absolute.
    a.out, a.agent = os.path.abspath(a.out), os.path.abspath(a.agent)
    a.ap = os.path.abspath(a.ap) if a.ap else ""
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    cfgs = [c for c in configs(a.jdk, a.ap) if re.search(a.only, c[0])]
    raw = open(os.path.join(a.out, "raw.jsonl"), "a")
    failed = 0
    for wname in a.workloads.split(","):
        cls, size = WORKLOADS[wname.split("-")[0]]
        wl = cls(wname, os.path.join(a.out, "inputs", a.jdk))
        wl.java_home, wl.cpus = a.java_home, a.cpus
        if os.path.isdir(wl.dir):
            shutil.rmtree(wl.dir)
        os.makedirs(wl.dir)
        wl.prepare(size)
        # Warm-up (page cache, CDS archive, the jar files): not recorded.
        measured_run(a, wl, "base", "base", {}, 0, 0, open(os.devnull, "w"))
        for rnd in range(1, a.rounds + 1):
            order = cfgs[:]
            rng.shuffle(order)
            plan = []
            for i, c in enumerate(order):
                if i % 3 == 0:
                    plan.append(("base", "base", {}))
                plan.append(c)
            plan.append(("base", "base", {}))
            t0 = time.monotonic()
            for seq, (name, kind, detail) in enumerate(plan):
                failed += not measured_run(a, wl, name, kind, detail, rnd, seq, raw)
            print("overhead.py: %s %s round %d of %d: %d runs in %.0f s" % (
                a.jdk, wname, rnd, a.rounds, len(plan), time.monotonic() - t0), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
