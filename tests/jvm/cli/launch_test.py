#!/usr/bin/env python3
"""Programs started the way launchers start them, under `profile2 run` and
LD_PRELOAD (docs/cli.md, docs/agent.md "Processes"): forks and execs
everywhere in the process tree, at short intervals, many times in a row.

  java     (per JDK) LaunchFixture.java, four ways:
    exec-sh        sh -c 'a=$(echo x); b=$(uname); exec java ...' (issue 13's
                   reproduction: the JVM died of SIGPROF)
    exec-script    a bash script: $(...), a pipeline, a background job and
                   wait, a subshell, then exec java
    noexec-sh      sh runs java without exec and exits with its status
                   after echoing "after"; every other run under plain
                   LD_PRELOAD + PROFILE2_OPTS instead of profile2 run
    children       java starts 6 processes with ProcessBuilder (/bin/true and
                   sh -c 'u=$(uname); echo ...': the JDK's posix_spawn of
                   jspawnhelper, which execs them), the last `java -version`:
                   a JVM below a profiled JVM, which must say nothing and
                   write nothing
  native   fork_fixture.c: a two-thread C program that forks children that
           exit(), _exit(), burn CPU, fork again, execl, call system(); and
           calls system() itself
           sh-root, bash-root: a shell that is the root and profiled
           natively: a loop of its own, $(uname), a command, exit 3; every
           other run under plain LD_PRELOAD + PROFILE2_OPTS. dash ends with
           _exit (its profile was never written); bash exports its own
           getenv and setenv (under LD_PRELOAD its options were read as
           unset and its children did not see PROFILE2_ROOT)

Each scenario runs RUNS times (20; 6 under ASan, see ASAN_RUNS) at each
interval (1ms, 100us), each run in
a fresh directory with -o prof-%p.collapsed, so that any process that writes
a profile leaves a file of its own. Every run must: exit with the program's
status (5 for the JVM, 4 for the C program; a signal is 128+N, a hang is
killed after 60 s), print the program's output (its pid, the children's
statuses, "done"), print "profile2: wrote" exactly once, leave exactly one
file, named with the program's pid (the JVM's, not the shell's; the C
parent's, not a child's), which holds the program's own frames
(LaunchFixture.main and burnInLaunchFixture / burn_in_fork_fixture) and no
frame of the shell, and leave no claim file behind.

Exit status 0 when every check holds; otherwise the failed checks are
printed and the status is 1.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import time

FAILURES = []


def check(cond, what):
    if not cond:
        print("FAIL  " + what)
        FAILURES.append(what)
    return cond


def read_collapsed(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                stack, _, n = line.rpartition(" ")
                out.append((stack.split(";"), int(n)))
    return out


def weight_with(stacks, name):
    return sum(n for frames, n in stacks if any(f == name or f.startswith(name + "_[") or
                                                f.startswith(name + ":") for f in frames))


BASH_SCRIPT = """#!/bin/bash
# What launchers do before they exec java: subshells, pipelines, a job.
os=$(uname)
dir=$(cd "$(dirname "$0")" && pwd)
n=$( (echo a; echo b) | wc -l | tr -d ' ')
sleep 0.01 &
( : "$os" "$dir" "$n" )
wait
exec "$JAVA" -cp "$CLASSES" LaunchFixture "$MILLIS" 5
"""


def java_command(a, scenario, d):
    """(argv, expected status, extra env, plain LD_PRELOAD?)"""
    j = os.path.join(a.java_home, "bin", "java")
    fixture = [j, "-cp", a.classes, "LaunchFixture", str(a.millis), "5"]
    q = " ".join("'%s'" % x for x in fixture)
    if scenario == "exec-sh":
        return ["sh", "-c", "a=$(echo x); b=$(uname); exec " + q]
    if scenario == "exec-script":
        path = os.path.join(d, "launcher.sh")
        with open(path, "w") as f:
            f.write(BASH_SCRIPT)
        os.chmod(path, 0o755)
        return [path]
    if scenario == "noexec-sh":
        return ["sh", "-c", "a=$(uname); " + q + "; s=$?; echo after; exit $s"]
    if scenario == "children":
        return fixture + ["6"]
    raise ValueError(scenario)


def run_profiled(a, cmd, d, env, interval, plain):
    """cmd in d under `profile2 run -i INTERVAL -o prof-%p.collapsed`, or,
    when plain, under LD_PRELOAD + PROFILE2_OPTS; env without the tree's
    variables. Returns (status or "hang", stdout, stderr, seconds)."""
    for k in ("PROFILE2_ROOT", "PROFILE2_CLAIM", "PROFILE2_OPTS"):
        env.pop(k, None)
    if plain:
        pre = env.get("LD_PRELOAD", "")
        env["LD_PRELOAD"] = (pre + ":" if pre else "") + a.agent
        env["PROFILE2_OPTS"] = "interval=%s,file=prof-%%p.collapsed" % interval
    else:
        cmd = [a.profile2, "run", "-i", interval, "-o", "prof-%p.collapsed", "--"] + cmd
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=d, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=60)
        rc, so, se = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, so, se = "hang", e.stdout or "", e.stderr or ""
        if isinstance(so, bytes):
            so, se = so.decode(errors="replace"), (se or b"").decode(errors="replace")
    return rc, so, se, time.time() - t0


def finish_run(ok, so, se, d):
    """A failed run's output is printed; a passed run's directory removed."""
    if not ok:
        print("      stdout: " + so.strip().replace("\n", " | ")[:800])
        print("      stderr: " + se.strip().replace("\n", " | ")[:1500])
    else:
        shutil.rmtree(d, ignore_errors=True)


def one_run(a, scenario, interval, i, plain):
    d = os.path.join(a.workdir, "%s-%s-%d" % (scenario, interval, i))
    shutil.rmtree(d, ignore_errors=True)
    tmp = os.path.join(d, "tmp")
    os.makedirs(tmp)
    label = "%s %s run %d%s" % (scenario, interval, i + 1, " (LD_PRELOAD)" if plain else "")
    env = dict(os.environ, TMPDIR=tmp, JAVA=os.path.join(a.java_home or "", "bin", "java"),
               CLASSES=a.classes or "", MILLIS=str(a.millis))
    if scenario == "native":
        cmd, status = [a.fork_fixture, str(a.millis)], 4
    else:
        cmd, status = java_command(a, scenario, d), 5
    rc, so, se, secs = run_profiled(a, cmd, d, env, interval, plain)
    ok = True

    def c(cond, what):
        nonlocal ok
        if not cond:
            ok = False
            check(False, "%s: %s" % (label, what))

    c(rc == status, "exit status %s, expected %d" % (rc, status))
    m = re.search(r"^pid (\d+)$", so, re.M)
    pid = int(m.group(1)) if m else -1
    c(pid > 0 and re.search(r"^done", so, re.M), "the program's output (pid, done): %r" % so[:300])
    if scenario == "noexec-sh":
        c(re.search(r"^after$", so, re.M), "the script's own output after java")
    if scenario == "children":
        for k in range(5):
            want = r"^child %d exited 0%s$" % (k, ": child \\S+ %d" % k if k % 2 else "")
            c(re.search(want, so, re.M), "child %d's status and output" % k)
        m5 = re.search(r"^child 5 exited 0: .*version.*$", so, re.M)
        c(m5 and "profile2" not in m5.group(0), "java -version below the JVM ran, not profiled: %r" %
          (m5.group(0) if m5 else None))
    if scenario == "native":
        for k, st in enumerate([10, 11, 12, 13, 0, 15]):
            c(re.search(r"^child %d exited %d$" % (k, st), so, re.M), "child %d exited %d" % (k, st))
        c(re.search(r"^system$", so, re.M) and re.search(r"^system exited 0$", so, re.M), "system()'s output")
    wrote = re.findall(r"^profile2: wrote .*$", se, re.M)
    c(len(wrote) == 1, "'profile2: wrote' printed once, not %d times" % len(wrote))
    files = sorted(os.path.basename(f) for f in glob.glob(os.path.join(d, "prof-*.collapsed")))
    want = "prof-%d.collapsed" % pid
    c(files == [want], "one profile, the program's (%s), not %s" % (want, files))
    if not plain:
        listed = re.findall(r"^profile2: output: (.*)$", se, re.M)
        c(listed == [os.path.join(d, want)], "profile2 lists that file only: %s" % listed)
    if os.path.exists(os.path.join(d, want)):
        stacks = read_collapsed(os.path.join(d, want))
        if scenario == "native":
            hot = weight_with(stacks, "burn_in_fork_fixture")
            c(hot >= a.min_hot, "burn_in_fork_fixture weight %d (>= %d)" % (hot, a.min_hot))
        else:
            c(weight_with(stacks, "LaunchFixture.main") > 0, "LaunchFixture.main in the profile")
            hot = weight_with(stacks, "LaunchFixture.burnInLaunchFixture")
            c(hot >= a.min_hot, "burnInLaunchFixture weight %d (>= %d)" % (hot, a.min_hot))
        shell = [f for frames, _ in stacks for f in frames if re.match(r"(dash|bash|sh)\+0x", f)]
        c(not shell, "no frame of the shell: %s" % shell[:3])
    left = os.listdir(tmp)
    c(not left, "no claim file left in TMPDIR: %s" % left)
    finish_run(ok, so, se, d)
    return ok, secs


ROOT_SHELLS = {"sh-root": "dash", "bash-root": "bash"}
SHELL_SCRIPT = ('echo "pid $$"; i=0; while [ "$i" -lt %d ]; do i=$((i+1)); done; u=$(uname); /bin/true; '
                'env | grep -c "^PROFILE2_ROOT=$$$" | sed "s/^/root seen by a child: /"; echo done; exit 3')


def shell_root_run(a, shell, interval, i, plain):
    """One run of a shell as the profiled root (see the module's doc)."""
    d = os.path.join(a.workdir, "%s-root-%s-%d" % (shell, interval, i))
    shutil.rmtree(d, ignore_errors=True)
    tmp = os.path.join(d, "tmp")
    os.makedirs(tmp)
    label = "%s-root %s run %d%s" % (shell, interval, i + 1, " (LD_PRELOAD)" if plain else "")
    cmd = [shutil.which(shell) or shell, "-c", SHELL_SCRIPT % a.shell_loop]
    rc, so, se, secs = run_profiled(a, cmd, d, dict(os.environ, TMPDIR=tmp), interval, plain)
    ok = True

    def c(cond, what):
        nonlocal ok
        if not cond:
            ok = False
            check(False, "%s: %s" % (label, what))

    c(rc == 3, "exit status %s, expected 3" % rc)
    m = re.search(r"^pid (\d+)$", so, re.M)
    pid = int(m.group(1)) if m else -1
    c(pid > 0 and re.search(r"^done$", so, re.M), "the script's output (pid, done): %r" % so[:300])
    c(re.search(r"^root seen by a child: 1$", so, re.M), "a child sees PROFILE2_ROOT=<the shell's pid>: %r" % so[:300])
    wrote = re.findall(r"^profile2: wrote .*$", se, re.M)
    c(len(wrote) == 1, "'profile2: wrote' printed once, not %d times" % len(wrote))
    files = sorted(os.path.basename(f) for f in glob.glob(os.path.join(d, "prof-*.collapsed")))
    want = "prof-%d.collapsed" % pid
    default_named = sorted(os.path.basename(f) for f in glob.glob(os.path.join(d, "profile2-*")))
    c(files == [want] and not default_named, "one profile, the shell's (%s), not %s%s" %
      (want, files + default_named, " (default-named: the options were not read)" if default_named else ""))
    if os.path.exists(os.path.join(d, want)):
        stacks = read_collapsed(os.path.join(d, want))
        total = sum(n for _, n in stacks)
        c(total >= a.min_hot, "the shell's own samples: weight %d (>= %d)" % (total, a.min_hot))
    left = os.listdir(tmp)
    c(not left, "no claim file left in TMPDIR: %s" % left)
    finish_run(ok, so, se, d)
    return ok, secs


# Under ASan every process of a tree maps and faults in its shadow memory
# and starts its own session: on a VM whose page faults are dear
# (2026-12-05) bash-root took 11.5 s a run, and cli-launch-native passed
# its 900 s limit before its last scenario (cli-launch-jdk25: 358 s, 148 s
# plain). The ASan build is there for memory errors, which a few runs of
# each scenario and interval meet as well as 20 do; the plain build keeps
# the 20 in a row the issue asks for.
UNDER_ASAN = "libasan" in os.environ.get("LD_PRELOAD", "")
ASAN_RUNS = 6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["java", "native"])
    ap.add_argument("--profile2", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--java-home")
    ap.add_argument("--classes")
    ap.add_argument("--fork-fixture")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--runs", type=int, default=ASAN_RUNS if UNDER_ASAN else 20)
    ap.add_argument("--millis", type=int, default=200)
    ap.add_argument("--min-hot", type=int, default=20)
    ap.add_argument("--scenarios", default="")
    ap.add_argument("--shell-loop", type=int, default=100000)
    a = ap.parse_args()
    a.profile2, a.agent, a.workdir = (os.path.abspath(x) for x in (a.profile2, a.agent, a.workdir))
    if a.fork_fixture:
        a.fork_fixture = os.path.abspath(a.fork_fixture)
    os.makedirs(a.workdir, exist_ok=True)
    scenarios = (["native", "sh-root", "bash-root"] if a.what == "native"
                 else ["exec-sh", "exec-script", "noexec-sh", "children"])
    if a.scenarios:
        scenarios = a.scenarios.split(",")
    for scenario in scenarios:
        for interval in ("1ms", "100us"):
            passed, total = 0, 0.0
            for i in range(a.runs):
                if scenario in ROOT_SHELLS:
                    ok, secs = shell_root_run(a, ROOT_SHELLS[scenario], interval, i, plain=i % 2 == 1)
                else:
                    ok, secs = one_run(a, scenario, interval, i, plain=scenario == "noexec-sh" and i % 2 == 1)
                passed += ok
                total += secs
            print("%s  %s at %s: %d of %d runs passed (%.1f s each)" %
                  ("ok  " if passed == a.runs else "FAIL", scenario, interval, passed, a.runs, total / a.runs))
            sys.stdout.flush()
    if FAILURES:
        print("%d checks failed" % len(FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
