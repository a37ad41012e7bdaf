#!/usr/bin/env python3
"""The profile2 command (tools/, docs/cli.md) end to end, one scenario per run.

The target is CliFixture.java, whose hot method (burnCpuInCliFixture) must be
in every profile of it.

  run          `profile2 run -i 1ms -o run-%p.collapsed -o run.html -- java ...
               CliFixture 3 7`: exits 7 (the program's status), the program's
               stdout passes through, profile2 ends with the absolute paths of
               both files; the collapsed file has >= 100 samples in the hot
               method, the HTML names it. `run quiet` without -o: the agent's
               default file (profile2-<pid>.html) is written, and nothing is
               printed by profile2 or the agent. A fixture under `run` answers
               `attach PID dump`, and a SIGTERM sent to profile2 reaches it:
               exit 143, the files written at its shutdown and listed.
               Last, at 100 us with budget=1 (most signals throttled, those
               of the launcher before the JVM starts too): the summary's
               counts cover the whole profile, the native samples taken
               before the JVM included (their session's counts carry over
               into the JVM's): its weight is the signals' weight (plus
               [lost] weight), its [throttled] weight the throttled count
               (plus overruns).
  attach       a fixture JVM running in another directory: `attach PID -o
               FILE` starts (FILE relative to our directory, printed); a second
               start fails (1, one line); `dump -o FILE` writes FILE now;
               `status`; `stop` writes the start's FILE; a second stop fails
               (1, one line); `--duration 2s` waits >= 2 s and lists both its
               files (-o relative to us, a raw file= relative to the JVM); a
               `--duration 60s` ended by SIGINT stops early and writes its
               file. The JVM keeps running throughout and prints no thread
               dump; the trigger file is gone. Last, a `--duration 30s`
               during which the JVM exits (its stdin closed): the files it
               wrote at its exit are listed, exit 0.
  errors       `--help` and `help attach` (0, commands, options, exit
               statuses); attach to a pid that does not exist and to `sleep`
               (3, one line each; sleep survives, no trigger file is left);
               usage errors (2 for attach, 125 for run, one line naming the
               bad word); run's statuses: 127 not found, 126 not executable,
               the command's own, 128+N for a signal.
  report       collapsed stacks -> .html, .pb.gz, .txt, .collapsed (round trip),
               from a file and from stdin; a missing input and a malformed one
               (1, one line), an unknown output format (2).
  other-user   (root only, else skipped) a JVM running as nobody: another
               user (daemon) is refused with 3 and one line naming the owner;
               root and nobody itself attach with --duration and get the file.

Exit status 0 when every check holds, 77 when skipped; otherwise the failed
checks are printed and the status is 1.
"""
import argparse
import glob
import gzip
import os
import re
import resource
import select
import signal
import subprocess
import sys
import time

FAILURES = []
HOT = "CliFixture.burnCpuInCliFixture"


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)
    return cond


def run(cmd, cwd=None, timeout=60, stdin=None):
    p = subprocess.run(cmd, cwd=cwd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def one_line(text, *words):
    """text is one line "profile2: ..." holding every word."""
    lines = [l for l in text.splitlines() if l.strip()]
    return len(lines) == 1 and lines[0].startswith("profile2: ") and all(w in lines[0] for w in words)


def show(text):
    return text.strip().replace("\n", " | ")[:600]


def read_collapsed(path):
    """[(frames list root-first, weight)]"""
    out = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                stack, _, n = line.rpartition(" ")
                out.append((stack.split(";"), int(n)))
    return out


def hot_samples(path):
    if not os.path.exists(path):
        return -1
    return sum(n for frames, n in read_collapsed(path) if any(f == HOT or f.startswith(HOT + "_[") or
                                                              f.startswith(HOT + ":") for f in frames))


def outputs(text):
    return re.findall(r"^profile2: output: (.*)$", text, re.M)


def java(a):
    return os.path.join(a.java_home, "bin", "java")


def start_fixture(a, cwd, prefix=()):
    """A fixture JVM that runs until its stdin closes; returns it once it
    printed "ready". Its stderr goes to a file (never a full pipe)."""
    # Compiled before an attach, the hot method would be inlined without
    # full debug information (docs/agent.md): kept out of line.
    cmd = list(prefix) + [java(a), "-XX:CompileCommand=quiet",
                          "-XX:CompileCommand=dontinline,CliFixture::burnCpuInCliFixture",
                          "-cp", a.classes, "CliFixture", "0"]
    err = open(os.path.join(a.workdir, "jvm-%d.stderr" % int(time.time() * 1000)), "w+")
    p = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
    p.err_file = err
    ready, _, _ = select.select([p.stdout], [], [], 30)
    line = p.stdout.readline().strip() if ready else ""
    if not check(line == "ready", "the fixture JVM started (pid %d)" % p.pid):
        p.kill()
        p.wait()
        err.seek(0)
        print(err.read())
        raise SystemExit(1)
    return p


def finish_fixture(p, label):
    """Close its stdin: it ends. Checks it exited 0 with no thread dump and
    no crash; returns its stderr."""
    if p.poll() is None:
        p.stdin.close()
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    so = p.stdout.read()
    p.err_file.seek(0)
    se = p.err_file.read()
    check(p.returncode == 0 and "done" in so, "%s: the JVM ran on and exited 0 (exit %s)" % (label, p.returncode))
    # A SIGQUIT without the trigger file prints a thread dump on stdout.
    check("Full thread dump" not in so, "%s: the JVM printed no thread dump" % label)
    check("A fatal error" not in se and "hs_err" not in se, "%s: the JVM did not crash" % label)
    return se


def wait_for_line(stream, pattern, timeout):
    end = time.time() + timeout
    seen = ""
    while time.time() < end:
        ready, _, _ = select.select([stream], [], [], max(0.0, end - time.time()))
        if not ready:
            break
        line = stream.readline()
        if not line:
            break
        seen += line
        if re.search(pattern, line):
            return True, seen
    return False, seen


# --- scenarios -----------------------------------------------------------------------------


def children_cpu_ms():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return 1000.0 * (r.ru_utime + r.ru_stime)


def scenario_run(a):
    w = a.workdir
    cpu0 = children_cpu_ms()
    rc, so, se = run([a.profile2, "run", "-i", "1ms", "-o", "run-%p.collapsed", "-o", "run.html", "--",
                      java(a), "-cp", a.classes, "CliFixture", "3", "7"], cwd=w)
    # profile2 waits for the JVM, so the JVM's CPU time is in profile2's
    # children's, which this process gets when run() has waited for it.
    cpu_ms = children_cpu_ms() - cpu0
    check(rc == 7, "run: exits with the program's status 7 (got %d)" % rc)
    check(so.startswith("ready") and "done" in so, "run: the program's stdout passes through")
    outs = outputs(se)
    colls = [o for o in outs if re.fullmatch(re.escape(w) + r"/run-\d+\.collapsed", o)]
    html = os.path.join(w, "run.html")
    if not check(len(colls) == 1 and html in outs, "run: lists the absolute paths of both files (%s)" % outs):
        print(se)
    lines = se.strip().splitlines()
    check(len(lines) >= 2 and all(l.startswith("profile2: output: ") for l in lines[-2:]),
          "run: profile2's file list ends the output")
    if colls:
        # The fixture burns for 3 s of wall time: ~3,000 samples on an idle
        # machine, 410-2,950 with other tests beside it, 83 once in a
        # clean-clone .ci/run (2026-11-28), whose whole profile had 104: a
        # JVM that got little CPU, not samples lost. So the samples are
        # held to the CPU time the JVM used (all its threads at 1 ms:
        # weight >= half of it), and the hot method to most of them.
        hot = hot_samples(colls[0])
        total = sum(n for _, n in read_collapsed(colls[0]))
        check(hot >= 20 and hot >= 0.5 * total,
              "run: %d samples in %s, of %d (at least 20 and half)" % (hot, HOT, total))
        check(total >= 0.5 * cpu_ms, "run: the profile's weight %d covers the JVM's CPU time (%.0f ms of CPU; at "
              "least half)" % (total, cpu_ms))
    if os.path.exists(html):
        with open(html) as f:
            text = f.read()
        check(len(text) > 10000 and "burnCpuInCliFixture" in text, "run: the flame graph names the hot method")

    # No -o: the agent's default name, which profile2 must know; quiet: no
    # word from profile2 or the agent.
    d = os.path.join(w, "default")
    os.makedirs(d, exist_ok=True)
    for f in glob.glob(os.path.join(d, "*")):
        os.unlink(f)
    rc, so, se = run([a.profile2, "run", "quiet", "--", java(a), "-cp", a.classes, "CliFixture", "1"], cwd=d)
    files = glob.glob(os.path.join(d, "profile2-*.html"))
    check(rc == 0 and len(files) == 1, "run: without -o, the agent's default file %s (rc %d)" % (files, rc))
    check("profile2:" not in se, "run quiet: profile2 and the agent print nothing (%s)" % show(se))

    # A JVM under `run` answers `attach` (the preloaded agent is the one
    # the attach loads), and SIGTERM sent to profile2 reaches it: it shuts
    # down, the agent writes the files, profile2 exits 143 and lists them.
    fwd, mid = os.path.join(w, "fwd.collapsed"), os.path.join(w, "mid.collapsed")
    for f in (fwd, mid):
        if os.path.exists(f):
            os.unlink(f)
    q = subprocess.Popen([a.profile2, "run", "-i", "1ms", "-o", "fwd.collapsed", "--", java(a),
                          "-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,CliFixture::burnCpuInCliFixture",
                          "-cp", a.classes, "CliFixture", "0"],
                         cwd=w, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ok, seen = wait_for_line(q.stdout, r"^ready", 30)
        check(ok, "run: the fixture started under profile2 run")
        with open("/proc/%d/task/%d/children" % (q.pid, q.pid)) as f:
            children = f.read().split()
        check(len(children) == 1, "run: the JVM is profile2's only child (%s)" % children)
        if children:
            rc, so, se = run([a.profile2, "attach", children[0], "dump", "-o", "mid.collapsed"], cwd=w)
            check(rc == 0 and hot_samples(mid) > 0, "run + attach dump: the JVM under run dumps its profile "
                  "(%d: %s%s)" % (rc, show(so), show(se)))
        time.sleep(0.5)
        q.send_signal(signal.SIGTERM)
        # Not communicate() at once: closing its stdin would end the fixture
        # with 0, racing the SIGTERM's 143.
        q.wait(timeout=30)
        so, se = q.communicate(timeout=30)
    finally:
        if q.poll() is None:
            q.kill()
            q.communicate()
    check(q.returncode == 128 + signal.SIGTERM, "run + SIGTERM: profile2 exits 143 like its JVM (%d)" % q.returncode)
    check(fwd in outputs(se) and hot_samples(fwd) > hot_samples(mid) > 0,
          "run + SIGTERM: the JVM wrote %s at its shutdown, listed by profile2 (%s)" % (fwd, show(se)))
    run_counts(a)


def run_counts(a):
    """Every [throttled] sample is in the throttled count, the ones the
    launcher's native session took before the JVM started included (a
    clean-clone run, 2026-12-06: 'weight 2854 under [throttled], 2853
    counted'; that session's counts were reset when the JVM's started)."""
    w = os.path.join(a.workdir, "counts")
    os.makedirs(w, exist_ok=True)
    for f in glob.glob(os.path.join(w, "*")):
        os.unlink(f)
    rc, so, se = run([a.profile2, "run", "-i", "100us", "budget=1", "-o", "c.collapsed", "-o", "c.txt", "--",
                      java(a), "-cp", a.classes, "CliFixture", "1", "0"], cwd=w)
    coll, txt = os.path.join(w, "c.collapsed"), os.path.join(w, "c.txt")
    if not check(rc == 0 and os.path.exists(coll) and os.path.exists(txt),
                 "run counts: exit 0 and both files (%d: %s)" % (rc, show(se))):
        return
    with open(txt) as f:
        summary = f.read()
    sig = re.search(r"samples: (\d+) signals handled, weight (\d+)", summary)
    thr = re.search(r"throttled: (\d+) signals not walked", summary)
    before = re.search(r"before the JVM: (\d+) native samples", summary)
    if not check(sig is not None and thr is not None, "run counts: the summary has the samples and throttled "
                 "lines"):
        return
    signals, weight, throttled = int(sig.group(1)), int(sig.group(2)), int(thr.group(1))
    stacks = read_collapsed(coll)
    total = sum(n for _, n in stacks)
    seen_thr = sum(n for frames, n in stacks if "[throttled]" in frames)
    seen_lost = sum(n for frames, n in stacks if "[lost]" in frames)
    print("      run counts: %s samples before the JVM; signals %d, weight %d, throttled %d; profile: weight %d, "
          "[throttled] %d, [lost] %d" % (before.group(1) if before else "no", signals, weight, throttled, total,
                                         seen_thr, seen_lost))
    check(weight <= total <= weight + seen_lost,
          "run counts: the profile's weight %d is the signals' %d (plus %d under [lost])" % (total, weight, seen_lost))
    check(throttled <= seen_thr <= throttled + (weight - signals),
          "run counts: weight %d under [throttled], %d counted in 'throttled' (plus %d of overruns)"
          % (seen_thr, throttled, weight - signals))


def scenario_attach(a):
    w = a.workdir
    jcwd = os.path.join(w, "jvm-cwd")
    os.makedirs(jcwd, exist_ok=True)
    for f in glob.glob(os.path.join(w, "*.collapsed")) + glob.glob(os.path.join(w, "*.html")) + \
            glob.glob(os.path.join(jcwd, "*")):
        os.unlink(f)
    p = start_fixture(a, jcwd)
    pid = str(p.pid)
    P = a.profile2
    try:
        started = os.path.join(w, "attach.collapsed")
        rc, so, se = run([P, "attach", pid, "-i", "1ms", "-o", "attach.collapsed"], cwd=w)
        check(rc == 0 and "profiling started" in so and started in so,
              "attach: start returns 0 and names %s (%s%s)" % (started, show(so), show(se)))
        check(not os.path.exists(os.path.join(jcwd, ".attach_pid" + pid)) and
              not os.path.exists("/tmp/.attach_pid" + pid), "attach: the trigger file is removed")
        rc, so, se = run([P, "attach", pid, "-e", "wall"], cwd=w)
        check(rc == 1 and one_line(se, "start failed"), "attach: a second start fails with 1 and one line (%s)" % show(se))

        time.sleep(1.5)
        dump = os.path.join(w, "dump.collapsed")
        rc, so, se = run([P, "attach", pid, "dump", "-o", "dump.collapsed"], cwd=w)
        check(rc == 0 and dump in outputs(so), "attach: dump -o FILE returns 0 and lists %s (%s)" % (dump, show(so + se)))
        hot_dump = hot_samples(dump)
        check(hot_dump >= 50, "attach: the dump has %d samples in the hot method (at least 50)" % hot_dump)
        rc, so, se = run([P, "attach", pid, "status"], cwd=w)
        check(rc == 0 and "stderr" in so, "attach: status returns 0 (%s)" % show(so + se))

        time.sleep(0.5)
        rc, so, se = run([P, "attach", pid, "stop"], cwd=w)
        check(rc == 0 and "stopped" in so, "attach: stop returns 0 (%s)" % show(so + se))
        hot = hot_samples(started)
        check(hot > hot_dump, "attach: stop wrote %s, %d hot samples, more than the dump's %d" % (started, hot, hot_dump))
        rc, so, se = run([P, "attach", pid, "stop"], cwd=w)
        check(rc == 1 and one_line(se, "stop failed"), "attach: a second stop fails with 1 and one line (%s)" % show(se))

        # --duration: -o relative to us, a raw file= relative to the JVM.
        t0 = time.time()
        rc, so, se = run([P, "attach", pid, "--duration", "2s", "-i", "1ms", "-o", "dur.html", "file=dur-%p.collapsed"],
                         cwd=w)
        took = time.time() - t0
        want = [os.path.join(w, "dur.html"), os.path.join(jcwd, "dur-%s.collapsed" % pid)]
        check(rc == 0 and took >= 2.0 and sorted(outputs(so)) == sorted(want),
              "attach --duration 2s: returns 0 after %.1f s and lists %s (%s%s)" % (took, want, show(so), show(se)))
        check(hot_samples(want[1]) > 0, "attach --duration: the profile has the hot method")

        # --duration ended early by SIGINT.
        t0 = time.time()
        q = subprocess.Popen([P, "attach", pid, "-d", "60s", "-o", "int.collapsed"], cwd=w, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        ok, seen = wait_for_line(q.stdout, r"profiling for", 30)
        check(ok, "attach -d 60s: says it profiles for 60 s (%s)" % show(seen))
        time.sleep(1)
        q.send_signal(signal.SIGINT)
        try:
            so, se = q.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            q.kill()
            so, se = q.communicate()
        took = time.time() - t0
        inter = os.path.join(w, "int.collapsed")
        check(q.returncode == 0 and took < 30 and inter in outputs(so) and os.path.exists(inter),
              "attach -d 60s + SIGINT: stops early (%.1f s), returns 0, writes %s (%s%s)" %
              (took, inter, show(so), show(se)))
        check(p.poll() is None, "attach: the JVM still runs after every command")

        # The JVM ends during --duration (and stays a zombie until we reap
        # it): the files it wrote at its exit are listed.
        q = subprocess.Popen([P, "attach", pid, "-d", "30s", "-o", "exit.collapsed"], cwd=w, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        ok, seen = wait_for_line(q.stdout, r"profiling for", 30)
        time.sleep(1)
        p.stdin.close()
        try:
            so, se = q.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            q.kill()
            so, se = q.communicate()
        at_exit = os.path.join(w, "exit.collapsed")
        check(q.returncode == 0 and "exited before the end of --duration" in so and at_exit in outputs(so) and
              hot_samples(at_exit) > 0, "attach -d 30s, the JVM exits: returns 0 and lists %s (%d: %s%s)" %
              (at_exit, q.returncode, show(so), show(se)))
    finally:
        jvm_err = finish_fixture(p, "attach")
    started_lines = [l for l in jvm_err.splitlines() if "profiling started" in l]
    check(len(started_lines) == 4, "attach: the JVM's stderr shows 4 sessions started (%d)" % len(started_lines))


def scenario_errors(a):
    P = a.profile2
    w = a.workdir
    rc, so, se = run([P, "--help"])
    check(rc == 0 and se == "" and all(x in so for x in ("run [OPTIONS] --", "attach PID", "report INPUT", "--event",
                                                          "--duration", "Exit status", "125", "127")),
          "--help: exits 0 with the commands, options and exit statuses on stdout")
    rc, so, se = run([P, "help", "attach"])
    check(rc == 0 and "--duration" in so and "stop" in so, "help attach: exits 0")
    rc, so, se = run([P])
    check(rc == 2 and "Usage" in se, "no command: the help on stderr, exit 2")

    # A pid nobody has: that of a process that has just exited.
    q = subprocess.Popen(["true"])
    q.wait()
    gone = q.pid
    if not os.path.exists("/proc/%d" % gone):
        for action in ([], ["stop"]):
            rc, so, se = run([P, "attach", str(gone)] + action)
            check(rc == 3 and one_line(se, "no process with pid %d" % gone),
                  "attach %s %s: exit 3, one line (%d: %s)" % (gone, action, rc, show(se)))

    # A process that is not a JVM: refused, and it survives (SIGQUIT would
    # have ended it).
    s = subprocess.Popen(["sleep", "30"], cwd=w)
    try:
        for _ in range(100):
            if os.path.realpath("/proc/%d/exe" % s.pid).endswith("/sleep"):
                break
            time.sleep(0.02)
        rc, so, se = run([P, "attach", str(s.pid), "-o", "x.html"])
        check(rc == 3 and one_line(se, "pid %d (sleep) is not a Java process" % s.pid),
              "attach to sleep: exit 3, one line (%d: %s)" % (rc, show(se)))
        time.sleep(0.2)
        check(s.poll() is None, "attach to sleep: sleep still runs")
        check(not os.path.exists(os.path.join(w, ".attach_pid%d" % s.pid)) and
              not os.path.exists("/tmp/.attach_pid%d" % s.pid), "attach to sleep: no trigger file")
    finally:
        s.kill()
        s.wait()

    # Usage errors: one line naming the bad word; 2, or 125 for run.
    for args, word, want in ((["attach", "abc"], "'abc'", 2),
                             (["attach", "1", "-e", "nosuchevent"], "nosuchevent", 2),
                             (["attach", "1", "--bogus"], "'--bogus'", 2),
                             (["attach", "1", "stop", "--duration", "5s"], "'stop'", 2),
                             (["attach", "1", "-d", "soon"], "'soon'", 2),
                             (["frobnicate"], "'frobnicate'", 2),
                             (["run", "-e", "nosuchevent", "--", "true"], "nosuchevent", 125),
                             (["run", "-o", "prof.bmp", "--", "true"], "prof.bmp", 125),
                             (["attach", "1", "-o", "prof.svg"], "prof.svg", 2),
                             (["run", "true"], "'--'", 125),
                             (["report", "x.collapsed", "-o", "x.bmp"], "'x.bmp'", 2)):
        rc, so, se = run([P] + args, cwd=w)
        check(rc == want and so == "" and one_line(se, word),
              "%s: exit %d, one line naming %s (%d: %s)" % (" ".join(args), want, word, rc, show(se)))

    # run's statuses.
    noexec = os.path.join(w, "not-executable")
    with open(noexec, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(noexec, 0o644)
    for cmd, want in ((["/nonexistent/command"], 127), ([noexec], 126)):
        rc, so, se = run([P, "run", "--"] + cmd, cwd=w)
        check(rc == want and one_line(se, "cannot run"), "run %s: exit %d, one line (%d: %s)" % (cmd, want, rc, show(se)))
    for script, want in (("exit 5", 5), ("kill -TERM $$", 128 + signal.SIGTERM)):
        rc, so, se = run([P, "run", "quiet", "--", "sh", "-c", script], cwd=w)
        check(rc == want, "run sh -c '%s': exit %d (got %d)" % (script, want, rc))


def scenario_report(a):
    P = a.profile2
    w = a.workdir
    src = os.path.join(w, "in.collapsed")
    stacks = {"main;CliFixture.main;CliFixture.burnCpuInCliFixture": 30, "main;CliFixture.main": 5,
              "[GC Thread#0 tid=12];GCTaskThread::run": 7}
    with open(src, "w") as f:
        for s, n in stacks.items():
            f.write("%s %d\n" % (s, n))
    for ext in ("html", "pb.gz", "txt", "collapsed"):
        out = os.path.join(w, "out." + ext)
        if os.path.exists(out):
            os.unlink(out)
        rc, so, se = run([P, "report", src, "-o", out, "--title", "cli test"])
        check(rc == 0 and os.path.exists(out) and "42 samples" in so,
              "report -> .%s: exit 0, wrote it (%s%s)" % (ext, show(so), show(se)))
        if not os.path.exists(out):
            continue
        data = open(out, "rb").read()
        if ext == "pb.gz":
            data = gzip.decompress(data)
        check(b"burnCpuInCliFixture" in data, "report -> .%s: names the hot method" % ext)
        if ext == "collapsed":
            back = {";".join(f): n for f, n in read_collapsed(out)}
            check(back == stacks, "report -> .collapsed: the same stacks and counts (%s)" % back)
        if ext == "html":
            check(b"cli test" in data, "report -> .html: carries the title")
    out = os.path.join(w, "stdin.folded")
    rc, so, se = run([P, "report", "-", "-o", out], stdin=open(src).read())
    check(rc == 0 and os.path.exists(out), "report from stdin: exit 0 (%s)" % show(se))
    rc, so, se = run([P, "report", os.path.join(w, "missing.collapsed"), "-o", os.path.join(w, "x.html")])
    check(rc == 1 and one_line(se, "missing.collapsed"), "report of a missing file: exit 1, one line (%s)" % show(se))
    bad = os.path.join(w, "bad.collapsed")
    with open(bad, "w") as f:
        f.write("a;b 3\na;b;c no-count\n")
    rc, so, se = run([P, "report", bad, "-o", os.path.join(w, "x.html")])
    check(rc == 1 and one_line(se, "line 2"), "report of a malformed file: exit 1, one line naming line 2 (%s)" % show(se))


def scenario_other_user(a):
    if os.geteuid() != 0:
        print("skipped: the other-user scenario needs root (to run a JVM as nobody)")
        sys.exit(77)
    P = a.profile2
    d = os.path.join(a.workdir, "shared")
    os.makedirs(d, exist_ok=True)
    os.chmod(a.workdir, 0o755)
    os.chmod(d, 0o777)
    for f in glob.glob(os.path.join(d, "*")):
        os.unlink(f)
    as_user = lambda user, group: ["setpriv", "--reuid=" + user, "--regid=" + group, "--clear-groups"]
    p = start_fixture(a, d, as_user("nobody", "nogroup"))
    pid = str(p.pid)
    try:
        rc, so, se = run(as_user("daemon", "daemon") + [P, "attach", pid, "-o", "daemon.collapsed"], cwd=d)
        check(rc == 3 and one_line(se, "runs as user nobody"),
              "other-user: daemon is refused with 3 and one line naming the owner (%d: %s)" % (rc, show(se)))
        for who, prefix in (("root", []), ("nobody", as_user("nobody", "nogroup"))):
            out = os.path.join(d, who + ".collapsed")
            rc, so, se = run(prefix + [P, "attach", pid, "-d", "1s", "-i", "1ms", "-o", out], cwd=d)
            check(rc == 0 and out in outputs(so) and hot_samples(out) > 0,
                  "other-user: %s attaches and gets %s (%d: %s%s)" % (who, out, rc, show(so), show(se)))
        check(p.poll() is None, "other-user: the JVM still runs")
    finally:
        finish_fixture(p, "other-user")


SCENARIOS = {
    "run": scenario_run,
    "attach": scenario_attach,
    "errors": scenario_errors,
    "report": scenario_report,
    "other-user": scenario_other_user,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--profile2", required=True)
    ap.add_argument("--java-home", required=True)
    ap.add_argument("--classes", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    a.profile2 = os.path.abspath(a.profile2)
    a.workdir = os.path.abspath(a.workdir)
    os.makedirs(a.workdir, exist_ok=True)
    SCENARIOS[a.scenario](a)
    if FAILURES:
        print("\n%d check(s) failed:" % len(FAILURES))
        for f in FAILURES:
            print("  " + f)
        sys.exit(1)


if __name__ == "__main__":
    main()
