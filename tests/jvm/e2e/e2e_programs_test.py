#!/usr/bin/env python3
"""The `profile2` command end to end on Debian-packaged JVM programs started
the way their users start them, one scenario per run:

  clojure  a launcher script: Debian's `clojure` (clojure 1.11; a /bin/sh
           script that runs `which rlwrap` in a subshell, then `exec
           java ... clojure.main`), under `profile2 run -i 1ms`, running a
           generated Clojure program: a prime count by trial division over
           lazy sequences, Collatz lengths into a sorted map, word
           frequencies of generated strings (persistent hash maps, sorting).
           Its three lines of output are computed here. Program packages:
           clojure/ (the runtime) and e2e/ (the program's own namespace).
  ant      a build tool: Debian's `ant` (1.10.13; its /bin/sh launcher
           script, `exec java ... org.apache.tools.ant.launch.Launcher`),
           under `profile2 run -i 1ms`, building a generated project
           (javac's tree of e2e_test.py: 60 files, 300 classes) into a
           jar (its classes counted); then a build file whose target
           fails, whose exit status 1 and BUILD FAILED must come through.
           Program packages: org/apache/tools/ant/ and com/sun/tools/javac/
           (the <javac> task compiles in process).
           JDK 17 only: Debian's script passes
           -Djava.security.manager=allow, which JDK 24 and later refuse at
           start-up (JEP 486), so ant does not run on JDK 25 at all.
  jetty    a server under load, by attach: Jetty 9.4 (Debian jetty9, `java
           -jar /usr/share/jetty9/start.jar` with a jetty.base made here:
           modules http and deploy, 127.0.0.1 on a free port, a webapp
           directory of generated files served by the default servlet,
           directory listings on). Python threads here drive HTTP load on
           127.0.0.1 (files and the directory listing, bounded in count
           and time; every response checked against the files), while
           `profile2 attach PID -e cpu -i 1ms --duration 5s` profiles it;
           then the same with a second server and `-e wall`
           (--same-server: both sessions, one after the other, in one
           server; see scenario_jetty for why not by default). Each
           server is stopped with SIGTERM (and dies with this script:
           PR_SET_PDEATHSIG). Program packages: org/eclipse/jetty/.

The `run` scenarios are checked as e2e_test.py checks its programs
(check_profile: exit status and output; the busy thread "main": its samples
within 20 % of its CPU time / interval (35 % below under ASan), the whole
profile 0.7 .. 1.2 of the process tree's CPU time, the program's frames on
>= 90 % of its complete samples and on >= 80 % of all samples with a Java
frame; every marker frame counted in the summary; incomplete walks <= 10 %
of main's samples; the per-thread section adds up). The CPU time of every thread is read in
/proc/<pid>/task/<tid>/schedstat of every process below `profile2`, every
20 ms. Also: `profile2` lists exactly the two files asked for (one JVM
wrote, no subshell did), and for ant a share of main's complete samples
with a javac frame (--javac-share, 70 %).

The jetty scenario checks:
  serving    every response during the whole test is right (status, body),
             none failed; at least --min-requests (5) right responses
             during each session, one before and one after them (within
             30 s); both
             attaches exit 0 and list the files; the server stops on
             SIGTERM; its log has no warning or exception.
  cpu        of the pool threads' (named qtp...) complete samples, >= 90 %
             have a frame of org/eclipse/jetty/ and --handling-share (90 %)
             one of its request handling (org/eclipse/jetty/server/); of
             all complete samples with a Java frame, >= 80 % have a Jetty
             frame (the JIT compiler threads take a third to half of the
             session's CPU: the server is young and the load is light;
             reported, not held); counters as for the run scenarios;
             incomplete walks <= 10 % of the pool threads' weight.
  wall       every pool thread alive through the whole session (its tid in
             /proc before the attach and after it returned) has a weight
             within 20 % of the session's duration (the summary's
             `duration`); at least 8 such threads (Jetty's minimum pool);
             Jetty's frames on >= 90 % of their complete samples; counters
             (the leaf state frames are allowed); incomplete walks <= 10 %
             of the pool threads' weight.

Exit status 0 when every check holds, 1 otherwise (the failed checks are
printed). A missing Debian package fails with its name.
"""
import argparse
import ctypes
import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402  (the checks and the generated javac tree)
from e2e_test import check, info  # noqa: E402

PACKAGES = {
    # file: Debian package that ships it
    "/usr/bin/clojure": "clojure",
    "/usr/share/ant/bin/ant": "ant",
    "/usr/share/jetty9/start.jar": "jetty9",
}


def need(path):
    if not os.path.exists(path):
        print("FAIL  %s is missing: install the Debian package %s (apt-get install -y --no-install-recommends %s)"
              % (path, PACKAGES[path], PACKAGES[path]))
        sys.exit(1)
    return path


# --- the process tree's CPU time -------------------------------------------------

def children_map():
    """{ppid: [pid]} of every process."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                s = f.read()
        except OSError:
            continue
        ppid = int(s[s.rfind(")") + 2:].split()[1])
        out.setdefault(ppid, []).append(int(d))
    return out


class TreeWatcher(threading.Thread):
    """The latest CPU time (ns) of every task of every process below pid,
    read every 20 ms (the tree every 100 ms). Tids are unique across
    processes: one dict."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.cpu = {}
        self.pids = set()
        self.done = threading.Event()

    def run(self):
        n = 0
        while not self.done.is_set():
            if n % 5 == 0:
                kids = children_map()
                todo = [self.pid]
                while todo:
                    p = todo.pop()
                    self.pids.add(p)
                    todo.extend(kids.get(p, []))
            n += 1
            for pid in list(self.pids):
                try:
                    tids = [int(t) for t in os.listdir("/proc/%d/task" % pid)]
                except OSError:
                    continue
                for tid in tids:
                    ns = e2e_test.schedstat_ns(pid, tid)
                    if ns is not None and ns >= self.cpu.get(tid, 0):
                        self.cpu[tid] = ns
            self.done.wait(0.02)


def run_tree(cmd, env, cwd, timeout):
    """Run cmd (profile2 run ...); returns an e2e_test.Run with rc, out, err,
    wall seconds, the tree's CPU seconds (rusage: profile2 waits for the
    command, which waits for or is the JVM) and the CPU ns of every thread
    below it."""
    r = e2e_test.Run()
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)
    w = TreeWatcher(p.pid)
    w.start()
    out, err = [], []
    readers = [threading.Thread(target=lambda s=s, b=b: b.append(s.read()), daemon=True)
               for s, b in ((p.stdout, out), (p.stderr, err))]
    for t in readers:
        t.start()
    deadline = t0 + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            break
        if time.monotonic() > deadline:
            print("FAIL  %s did not end within %d s: killed" % (cmd[-1], timeout))
            for q in sorted(w.pids, reverse=True):
                try:
                    os.kill(q, signal.SIGKILL)
                except OSError:
                    pass
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.02)
    w.done.set()
    w.join()
    for t in readers:
        t.join()
    r.rc = os.waitstatus_to_exitcode(status)
    r.out = "".join(out)
    r.err = "".join(err)
    r.wall = time.monotonic() - t0
    r.cpu = ru.ru_utime + ru.ru_stime
    r.threads_cpu = w.cpu
    return r


def java_env(a, home):
    """The environment of a launcher: the JDK under test first on PATH and
    as JAVA_HOME, no user configuration (HOME is the work directory)."""
    env = dict(os.environ)
    env["PATH"] = os.path.join(a.java_home, "bin") + ":" + env.get("PATH", "/usr/bin:/bin")
    env["JAVA_HOME"] = a.java_home
    env["HOME"] = home
    for k in ("CLASSPATH", "ANT_HOME", "ANT_OPTS", "ANT_ARGS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS",
              "PROFILE2_OPTS", "PROFILE2_ROOT", "PROFILE2_CLAIM"):
        env.pop(k, None)
    return env


def profile2_run(a, label, base, command, env, cwd, timeout=300):
    # Not `quiet`: it would also drop profile2's list of the files.
    cmd = [a.profile2, "run", "-i", a.interval, "-o", base + ".collapsed", "-o", base + ".txt", "threads"] + \
        a.agent_opt + ["--"] + command
    r = run_tree(cmd, env, cwd, timeout)
    listed = re.findall(r"^profile2: output: (.*)$", r.err, re.M)
    wrote = re.findall(r"^profile2: wrote (.*)$", r.err, re.M)  # one line per process that wrote
    check(sorted(listed) == sorted([base + ".collapsed", base + ".txt"]) and "profile2: no file" not in r.err and
          len(wrote) == 1 and sorted(wrote[0].split(", ")) == sorted(listed), "%s: one process wrote the two files "
          "asked for, once, and profile2 lists them (wrote %s, listed %s)" % (label, wrote, listed))
    info("%s: wall %.1f s, CPU %.1f s" % (label, r.wall, r.cpu))
    return r


def share_on(stacks, prefixes):
    """(weight of the complete stacks with a frame of prefixes, weight of
    the complete stacks)."""
    def whole(frames):
        return not any(f in ("[stale]", "[throttled]", "[lost]") or f.startswith("[error:") for f in frames[:2])
    w = sum(n for f, n in stacks if whole(f))
    on = sum(n for f, n in stacks if whole(f) and any(x.startswith(p) for x in f for p in prefixes))
    return on, w


def root_of(frame):
    """(name, tid) of a thread root frame [name tid=N], or None."""
    m = re.fullmatch(r"\[(?:(.*) )?tid=(\d+)\]", frame)
    return (m.group(1) or "", int(m.group(2))) if m else None


# --- clojure ------------------------------------------------------------------------

def clojure_program(path, primes, collatz, words):
    """Writes the program; returns its expected output lines."""
    with open(path, "w") as f:
        f.write("""(ns e2e.work)
(defn prime? [n]
  (and (> n 1) (not-any? #(zero? (mod n %%)) (take-while #(<= (* %% %%) n) (range 2 n)))))
(defn collatz-len [n]
  (loop [n n c 0]
    (if (= n 1) c (recur (if (even? n) (quot n 2) (inc (* 3 n))) (inc c)))))
(println "primes" (count (filter prime? (range 2 %(primes)d))))
(let [m (reduce (fn [m i] (assoc m i (collatz-len i))) (sorted-map) (range 1 %(collatz)d))
      best (reduce (fn [b [k v]] (if (> v (second b)) [k v] b)) [0 -1] m)]
  (println "collatz" (first best) (second best) (reduce + (vals m))))
(let [words (map (fn [i] (str "w" (mod (* i 7919) 5003))) (range %(words)d))
      freq (frequencies words)
      top (take 3 (sort-by (fn [[w c]] [(- c) w]) freq))]
  (println "words" (count freq) (pr-str top)))
""" % {"primes": primes, "collatz": collatz, "words": words})
    sieve = bytearray([1]) * primes
    sieve[0:2] = b"\0\0"
    for i in range(2, int(primes ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i::i] = bytes(len(range(i * i, primes, i)))
    best, total = (0, -1), 0
    for i in range(1, collatz):
        n, c = i, 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            c += 1
        total += c
        if c > best[1]:
            best = (i, c)
    freq = {}
    for i in range(words):
        w = "w%d" % (i * 7919 % 5003)
        freq[w] = freq.get(w, 0) + 1
    top = sorted(freq.items(), key=lambda x: (-x[1], x[0]))[:3]
    return ["primes %d" % sum(sieve),
            "collatz %d %d %d" % (best[0], best[1], total),
            "words %d (%s)" % (len(freq), " ".join('["%s" %d]' % x for x in top))]


def scenario_clojure(a):
    need("/usr/bin/clojure")
    size = a.size or 700000
    expected = clojure_program(os.path.join(a.workdir, "work.clj"), size, 20000, 600000)
    base = os.path.join(a.workdir, "clojure")
    r = profile2_run(a, "clojure", base, ["clojure", "work.clj"], java_env(a, a.workdir), a.workdir)
    check(r.rc == 0, "clojure: exit status 0 (%d)%s" % (r.rc, "" if r.rc == 0 else "\n" + r.err[-3000:]))
    got = r.out.splitlines()
    check(got == expected, "clojure: the program's output is the %d lines computed here%s"
          % (len(expected), "" if got == expected else " (got %r, expected %r)" % (got, expected)))
    return e2e_test.check_profile(a, "clojure", base, r, ("clojure/", "e2e/"))


# --- ant ------------------------------------------------------------------------------

BUILD_XML = """<project name="e2e" default="jar" basedir=".">
  <target name="compile">
    <mkdir dir="classes"/>
    <javac srcdir="src" destdir="classes" includeantruntime="false" debug="true"/>
  </target>
  <target name="jar" depends="compile">
    <jar destfile="e2e.jar" basedir="classes"/>
  </target>
</project>
"""

FAILING_XML = """<project name="e2e-fails" default="broken" basedir=".">
  <target name="broken">
    <fail message="e2e: this target fails on purpose"/>
  </target>
</project>
"""


def scenario_ant(a):
    ant = need("/usr/share/ant/bin/ant")
    nfiles = a.size or 60
    files = e2e_test.generate_javac_tree(os.path.join(a.workdir, "src"), nfiles, 2)
    with open(os.path.join(a.workdir, "build.xml"), "w") as f:
        f.write(BUILD_XML)
    base = os.path.join(a.workdir, "ant")
    env = java_env(a, a.workdir)
    r = profile2_run(a, "ant", base, [ant, "-f", "build.xml"], env, a.workdir)
    check(r.rc == 0, "ant: exit status 0 (%d)%s" % (r.rc, "" if r.rc == 0 else "\n" + r.out[-2000:] + r.err[-3000:]))
    check("BUILD SUCCESSFUL" in r.out and "Compiling %d source files" % len(files) in r.out,
          "ant: it says 'Compiling %d source files' and 'BUILD SUCCESSFUL'" % len(files))
    jar = os.path.join(a.workdir, "e2e.jar")
    classes = 0
    if os.path.exists(jar):
        with zipfile.ZipFile(jar) as z:
            classes = sum(1 for n in z.namelist() if n.endswith(".class"))
    # Each generated file holds 5 classes (the class, a record, a sealed
    # interface and its two implementations).
    check(classes == 5 * len(files), "ant: the jar holds %d classes (%d expected)" % (classes, 5 * len(files)))
    txt = e2e_test.check_profile(a, "ant", base, r, ("org/apache/tools/ant/", "com/sun/tools/javac/"))
    if txt:
        stacks = e2e_test.read_collapsed(base + ".collapsed")
        mine = [(f, n) for f, n in stacks if (root_of(f[0]) or ("", 0))[0] == "main"]
        on, w = share_on(mine, ("com/sun/tools/javac/",))
        check(w and on >= a.javac_share * w, "ant: javac's frames are on %d of main's %d complete samples (%.1f %%, "
              "at least %.0f %%)" % (on, w, 100 * on / max(w, 1), 100 * a.javac_share))
    # A failing build: ant's own status 1 comes through, with its message.
    with open(os.path.join(a.workdir, "fails.xml"), "w") as f:
        f.write(FAILING_XML)
    base2 = os.path.join(a.workdir, "ant-fails")
    r2 = profile2_run(a, "ant-fails", base2, [ant, "-f", "fails.xml"], env, a.workdir)
    check(r2.rc == 1 and "BUILD FAILED" in r2.out + r2.err and "this target fails on purpose" in r2.out + r2.err,
          "ant: a failing build exits with ant's status 1 and says BUILD FAILED (%d)" % r2.rc)
    return txt


# --- jetty ----------------------------------------------------------------------------

def set_pdeathsig():
    # The server dies with this script, whatever ends it.
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def jetty_base(a, nfiles):
    """A jetty.base: http on 127.0.0.1 (a free port), deploy, and the
    webapp ROOT of nfiles generated files. Returns (base, {name: bytes})."""
    jb = os.path.join(a.workdir, "jetty-base")
    root = os.path.join(jb, "webapps", "ROOT")
    os.makedirs(root)
    with open(os.path.join(jb, "start.ini"), "w") as f:
        f.write("--module=http\n--module=deploy\njetty.http.host=127.0.0.1\njetty.http.port=0\n")
    files = {}
    for i in range(nfiles):
        body = "".join("file %d line %d: %s\n" % (i, k, "x" * ((i * 7 + k) % 50)) for k in range(40 + i % 60))
        files["f%03d.txt" % i] = body.encode()
        with open(os.path.join(root, "f%03d.txt" % i), "wb") as f:
            f.write(files["f%03d.txt" % i])
    return jb, files


class Load:
    """nthreads clients on keep-alive connections: each request a file or
    (every 4th) the directory listing, checked. Counts per phase."""

    def __init__(self, port, files, nthreads, max_requests, max_seconds):
        self.port, self.files = port, files
        self.names = sorted(files)
        self.phase = "warm-up"
        self.ok, self.bad = {}, {}
        self.errors = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.max_requests, self.deadline = max_requests, time.monotonic() + max_seconds
        self.threads = [threading.Thread(target=self.client, args=(k,), daemon=True) for k in range(nthreads)]

    def count(self, phase, good, what=None):
        with self.lock:
            d = self.ok if good else self.bad
            d[phase] = d.get(phase, 0) + 1
            if what and len(self.errors) < 10:
                self.errors.append(what)

    def client(self, k):
        conn = None
        for i in range(self.max_requests):
            if self.stop.is_set() or time.monotonic() > self.deadline:
                break
            phase = self.phase
            listing = i % 4 == 3
            name = self.names[(i * 7 + k * 13) % len(self.names)]
            path = "/" if listing else "/" + name
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                conn.request("GET", path)
                resp = conn.getresponse()
                body = resp.read()
                if resp.status != 200:
                    self.count(phase, False, "%s: status %d" % (path, resp.status))
                elif listing and not all(("/%s" % n).encode() in body for n in self.names[::10]):
                    self.count(phase, False, "%s: the listing lacks files" % path)
                elif not listing and body != self.files[name]:
                    self.count(phase, False, "%s: %d bytes, not the file's %d" % (path, len(body), len(self.files[name])))
                else:
                    self.count(phase, True)
            except (OSError, http.client.HTTPException) as e:
                self.count(phase, False, "%s: %r" % (path, e))
                if conn is not None:
                    conn.close()
                conn = None
        if conn is not None:
            conn.close()


def tasks(pid):
    """{tid: comm} of pid now."""
    out = {}
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
                    out[int(t)] = f.read().strip()
            except OSError:
                pass
    except OSError:
        pass
    return out


def attach(a, label, pid, event, base):
    cmd = [a.profile2, "attach", str(pid), "-e", event, "-i", a.interval, "--duration", a.duration,
           "-o", base + ".collapsed", "-o", base + ".txt", "threads"] + a.agent_opt
    before = tasks(pid)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    took = time.monotonic() - t0
    after = tasks(pid)
    listed = re.findall(r"^profile2: output: (.*)$", p.stdout, re.M)
    check(p.returncode == 0 and sorted(listed) == sorted([base + ".collapsed", base + ".txt"]),
          "%s: profile2 attach exits 0 and lists the two files (%d, %s)%s"
          % (label, p.returncode, listed, "" if p.returncode == 0 else "\n" + p.stdout + p.stderr))
    info("%s: attach took %.1f s; %d threads before, %d after, %d in both"
         % (label, took, len(before), len(after), len(set(before) & set(after))))
    return before, after


def pool_threads(stacks):
    """{(name, tid): [(frames, n)]} of the threads named qtp..."""
    out = {}
    for f, n in stacks:
        rt = root_of(f[0]) if f else None
        if rt and rt[0].startswith("qtp"):
            out.setdefault(rt, []).append((f, n))
    return out


def check_jetty_cpu(a, pr):
    label = "jetty-cpu"
    rows = e2e_test.check_threads(label, pr)
    if rows is None:
        return
    pool = pool_threads(pr.stacks)
    mine = [x for v in pool.values() for x in v]
    weight = sum(n for _, n in mine)
    info("%s: %d pool threads sampled, weight %d of %d (%.1f %%); session %s"
         % (label, len(pool), weight, pr.total, 100 * weight / max(pr.total, 1), e2e_test.summary_value(pr.txt, "duration")))
    # The JIT compiler threads take a third to a half of the session's CPU
    # (the server is young; the load is light on a busy machine): of the
    # samples with a Java frame, Jetty's must be most.
    on, w = share_on([(f, n) for f, n in pr.stacks if any(e2e_test.is_java(x) for x in f)], ("org/eclipse/jetty/",))
    check(w and on >= 0.8 * w, "%s: Jetty's frames are on %d of the %d complete samples with a Java frame (%.1f %%, "
          "at least 80 %%)" % (label, on, w, 100 * on / max(w, 1)))
    on, w = share_on(mine, ("org/eclipse/jetty/",))
    check(w and on >= 0.9 * w, "%s: Jetty's frames are on %d of the pool threads' %d complete samples (%.1f %%, at "
          "least 90 %%)" % (label, on, w, 100 * on / max(w, 1)))
    on, w = share_on(mine, ("org/eclipse/jetty/server/",))
    check(w and on >= a.handling_share * w, "%s: request handling (org/eclipse/jetty/server/) is on %d of the pool "
          "threads' %d complete samples (%.1f %%, at least %.0f %%)"
          % (label, on, w, 100 * on / max(w, 1), 100 * a.handling_share))
    leaf = sum(n for f, n in mine if next((x for x in reversed(f) if e2e_test.is_java(x)), "").startswith("org/eclipse/jetty/"))
    info("%s: youngest Java frame in Jetty on %.1f %% of the pool threads' weight" % (label, 100 * leaf / max(weight, 1)))
    e2e_test.check_counted(a, label, pr, mine, weight, "the pool threads")


def check_jetty_wall(a, pr, before, after):
    label = "jetty-wall"
    rows = e2e_test.check_threads(label, pr)
    if rows is None:
        return
    m = re.match(r"([\d.]+) s", e2e_test.summary_value(pr.txt, "duration"))
    if not check(m is not None, label + ": the summary gives the session's duration"):
        return
    dur_ns = float(m.group(1)) * 1e9
    weights = {}
    for f, n in pr.stacks:
        rt = root_of(f[0]) if f else None
        if rt:
            weights[rt[1]] = (rt[0], weights.get(rt[1], ("", 0))[1] + n)
    # Alive through the session: in /proc before the attach and after it
    # returned, under the same kernel name.
    through = [t for t in before if t in after and before[t] == after[t]]
    pool = [t for t in through if before[t].startswith("qtp")]
    off = []
    for t in pool:
        w_ns = weights.get(t, ("", 0))[1] * pr.interval_ns
        if abs(w_ns - dur_ns) > 0.2 * dur_ns:
            off.append("%s tid=%d: %.2f s" % (before[t], t, w_ns / 1e9))
    shares = sorted(weights.get(t, ("", 0))[1] * pr.interval_ns / dur_ns for t in pool)
    others = sorted(weights[t][1] * pr.interval_ns / dur_ns for t in through if t in weights and t not in pool)
    info("%s: session %.3f s; %d pool threads alive through it, weight / duration %s; %d other threads sampled "
         "alive through it: %s" % (label, dur_ns / 1e9, len(pool), ["%.2f" % x for x in shares], len(others),
                                   ["%.2f" % x for x in others]))
    check(len(pool) >= 8, "%s: at least 8 pool threads alive through the session (%d)" % (label, len(pool)))
    check(not off, "%s: every pool thread alive through the session has its duration of wall time, within 20 %% "
          "(%.2f s; off: %s)" % (label, dur_ns / 1e9, off))
    mine = [(f, n) for f, n in pr.stacks if f and (root_of(f[0]) or ("", 0))[1] in set(pool)]
    on, w = share_on(mine, ("org/eclipse/jetty/",))
    check(w and on >= 0.9 * w, "%s: Jetty's frames are on %d of the pool threads' %d complete samples (%.1f %%, at "
          "least 90 %%)" % (label, on, w, 100 * on / max(w, 1)))
    e2e_test.check_counted(a, label, pr, mine, sum(n for _, n in mine), "the pool threads", states=True)


def serve(a, files, jb, tag, events):
    """Starts the server, drives the load, attaches once per event (files
    <event>.collapsed and .txt), stops the server. Returns {event: (tids
    before the attach, tids after it)}."""
    start_jar = need("/usr/share/jetty9/start.jar")
    log_path = os.path.join(a.workdir, tag + ".log")
    log = open(log_path, "w")
    java = os.path.join(a.java_home, "bin", "java")
    server = subprocess.Popen([java, "-jar", start_jar, "jetty.home=/usr/share/jetty9", "jetty.base=" + jb],
                              stdout=log, stderr=subprocess.STDOUT, cwd=a.workdir, env=java_env(a, a.workdir),
                              preexec_fn=set_pdeathsig)
    load = None
    seen = {}
    try:
        port = None
        deadline = time.monotonic() + 120
        while port is None and time.monotonic() < deadline and server.poll() is None:
            with open(log_path) as f:
                text = f.read()
            m = re.search(r"Started ServerConnector@\w+\{HTTP/1\.1.*?\}\{127\.0\.0\.1:(\d+)\}", text)
            if m and re.search(r"Started @\d+ms", text):
                port = int(m.group(1))
            time.sleep(0.2)
        if not check(port is not None, "%s: the server started and listens on 127.0.0.1 (%s)" % (tag, port)):
            with open(log_path) as f:
                print(f.read()[-3000:])
            return seen
        t_start = time.monotonic()
        load = Load(port, files, a.clients, 10 ** 6, 240)
        for t in load.threads:
            t.start()
        time.sleep(a.warmup)
        for k, event in enumerate(events):
            if k:
                load.phase = "between"
                time.sleep(0.5)
            load.phase = event
            seen[event] = attach(a, "jetty-" + event, server.pid, event, os.path.join(a.workdir, event))
        # Serving goes on after the sessions: wait for a few responses
        # (a loaded machine can hold a young server's responses for seconds).
        load.phase = "after"
        deadline = time.monotonic() + 30
        while load.ok.get("after", 0) < 3 and not load.bad and time.monotonic() < deadline:
            time.sleep(0.1)
        load.stop.set()
        for t in load.threads:
            t.join(60)
        info("%s: requests per phase: ok %s, failed %s; %.1f s from the server's start to the end of the load"
             % (tag, load.ok, load.bad, time.monotonic() - t_start))
        check(not load.bad, "%s: no request failed (%s)" % (tag, load.errors))
        for phase, least in [("warm-up", 1)] + [(e, a.min_requests) for e in events] + [("after", 1)]:
            check(load.ok.get(phase, 0) >= least, "%s: %d right responses during %s (at least %d)"
                  % (tag, load.ok.get(phase, 0), phase, least))
    finally:
        if load is not None:
            load.stop.set()
        server.send_signal(signal.SIGTERM)
        try:
            rc = server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            rc = server.wait()
        log.close()
    check(rc in (0, 143), "%s: the server stopped on SIGTERM (status %d)" % (tag, rc))
    with open(log_path) as f:
        text = f.read()
    bad = [line for line in text.splitlines() if ":WARN:" in line or "Exception" in line]
    check(not bad, "%s: its log has no warning or exception (%s)" % (tag, bad[:3]))
    return seen


def scenario_jetty(a):
    jb, files = jetty_base(a, a.size or 150)
    # One server per session by default: a session's handler budget leaves
    # weight in the agent's thread table that the next session in the same
    # JVM adds to its first samples without counting it (docs/testing.md,
    # e2e section); --same-server runs both sessions in one JVM.
    if a.same_server:
        seen = serve(a, files, jb, "jetty", ["cpu", "wall"])
    else:
        seen = serve(a, files, jb, "jetty-cpu", ["cpu"])
        seen.update(serve(a, files, jb, "jetty-wall", ["wall"]))
    pr = None
    for event in ("cpu", "wall"):
        if event not in seen:
            continue
        failed = len(e2e_test.FAILURES)
        pr = e2e_test.load_profile(a, "jetty-" + event, os.path.join(a.workdir, event), "")
        if pr:
            if event == "wall":
                check_jetty_wall(a, pr, *seen[event])
            else:
                check_jetty_cpu(a, pr)
            if len(e2e_test.FAILURES) > failed:
                print("the %s session's summary:\n%s" % (event, pr.txt.split("\nTop methods")[0]))
    return pr.txt if pr else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=["clojure", "ant", "jetty"])
    ap.add_argument("--java-home", required=True)
    ap.add_argument("--profile2", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--interval", default="1ms")
    ap.add_argument("--size", type=int, default=0, help="the work's size (primes below, source files, served files)")
    ap.add_argument("--duration", default="5s", help="jetty: each attach's --duration")
    ap.add_argument("--warmup", type=float, default=3.0, help="jetty: seconds of load before the first attach")
    ap.add_argument("--clients", type=int, default=3, help="jetty: client threads")
    ap.add_argument("--same-server", action="store_true", help="jetty: both sessions in one server")
    ap.add_argument("--min-requests", type=int, default=5, help="jetty: right responses in each session, at least")
    ap.add_argument("--handling-share", type=float, default=0.9,
                    help="jetty cpu: org/eclipse/jetty/server/ frames on the pool threads' samples, at least")
    ap.add_argument("--javac-share", type=float, default=0.7, help="ant: javac frames on main's samples, at least")
    ap.add_argument("--show-summary", action="store_true", help="print the text summary")
    ap.add_argument("--agent-opt", action="append", default=[],
                    help="one more agent option for profile2 (e.g. walk=safepoint); repeatable")
    a = ap.parse_args()
    a.walk = "signal"
    a.profile2 = os.path.abspath(a.profile2)
    a.workdir = os.path.abspath(a.workdir)
    if os.path.isdir(a.workdir):
        shutil.rmtree(a.workdir)
    os.makedirs(a.workdir)
    t0 = time.monotonic()
    txt = {"clojure": scenario_clojure, "ant": scenario_ant, "jetty": scenario_jetty}[a.scenario](a)
    info("test took %.1f s" % (time.monotonic() - t0))
    if a.show_summary and txt:
        print(txt)
    if e2e_test.FAILURES:
        print("%d check(s) failed" % len(e2e_test.FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
