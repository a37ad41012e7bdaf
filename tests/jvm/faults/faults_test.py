#!/usr/bin/env python3
"""Faults and hostile input around a live JVM (issue 7, item 5), one scenario per run.

The target is FaultsFixture.java, profiled from its start (-agentpath,
event=cpu, interval=1ms); commands go in with `jcmd PID JVMTI.agent_load`.
Every scenario checks that each failure is exactly one new `profile2:` line
on the JVM's stderr naming the path and the reason, that the agent answers
2 (the command failed), that the JVM keeps running (and exits 0 at the
end, no hs_err), and that nothing recorded is lost: a later dump to a good
path holds at least the weight of a dump taken before the failure.

  disk-full      (root only, else skipped) the output directory is a 64 KiB
                 tmpfs, filled up to its last few KiB: a dump of the flame
                 graph there fails with ENOSPC ("No space left on device"), the
                 previous file at the path keeps its content, no temporary
                 file is left. Why a tmpfs: it is the real ENOSPC from the
                 kernel, at write time, as on a full disk; /dev/full
                 is refused as a target (not a regular file) and an
                 RLIMIT_FSIZE gives EFBIG and a signal instead.
  dir-removed    the output directory is removed before a dump: one line
                 with ENOENT, nothing created; then 10 dumps of a large flame
                 graph while another thread removes and recreates the
                 directory: each either succeeds or fails in one line, and
                 what is at the path is never a partial file.
  symlink        (root only, else skipped) a sticky, world-writable directory
                 (like /tmp) where user nobody planted out.collapsed -> a file
                 the JVM's user owns: the dump refuses the link in one line,
                 the target keeps its content and the link stays; a link
                 planted at the temporary name (out.collapsed.tmp.PID) is not
                 written through either.
  unknown-version  a JVM whose version profile2 does not know (simulated with
                 PROFILE2_TEST_PRETEND_MAJOR=19): with -agentpath, one line
                 "... a version profile2 does not know ...; profiling is
                 disabled" (the library's, printed once) and the
                 program runs to its end without profiling, no file written;
                 jcmd JVMTI.agent_load into such a JVM answers 3, one line.

Exit status 0 when every check holds, 77 when skipped; otherwise the failed
checks are printed and the status is 1.
"""
import argparse
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time

FAILURES = []
HOT = "FaultsFixture.spinInFaultsFixture"


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)
    return cond


def run(cmd, timeout=60, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def weight(path):
    """Total weight of a collapsed file, -1 if there is none."""
    if not os.path.exists(path):
        return -1
    total = 0
    with open(path) as f:
        for line in f:
            if line.strip():
                total += int(line.rsplit(" ", 1)[1])
    return total


class Fixture:
    """A FaultsFixture JVM, profiled from its start, stderr in a file."""

    def __init__(self, a, options, env_extra=None, agent=True):
        self.a = a
        env = dict(os.environ)
        env.update(env_extra or {})
        cmd = [os.path.join(a.java_home, "bin", "java")]
        if agent:
            cmd.append("-agentpath:%s=%s" % (a.agent, options))
        cmd += ["-cp", a.classes, "FaultsFixture", "3"]
        self.err = open(os.path.join(a.workdir, "jvm-%d.stderr" % int(time.time() * 1000)), "w+")
        self.p = subprocess.Popen(cmd, cwd=a.workdir, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                  text=True, env=env)
        ready, _, _ = select.select([self.p.stdout], [], [], 60)
        line = self.p.stdout.readline().strip() if ready else ""
        if not check(line == "ready", "the fixture JVM started (pid %d)" % self.p.pid):
            self.finish("start")
            raise SystemExit(1)
        self.seen = 0

    def new_lines(self):
        """The profile2: lines on its stderr since the last call."""
        self.err.flush()
        with open(self.err.name) as f:
            lines = [l.rstrip("\n") for l in f if l.startswith("profile2:")]
        new, self.seen = lines[self.seen:], len(lines)
        return new

    def jcmd(self, args):
        rc, so, se = run([os.path.join(self.a.java_home, "bin", "jcmd"), str(self.p.pid), "JVMTI.agent_load",
                          self.a.agent, args])
        m = re.search(r"return code: (-?\d+)", so)
        # the agent writes its line before it returns; stderr is unbuffered
        return int(m.group(1)) if m else None

    def dump(self, path):
        return self.jcmd('"dump,file=%s"' % path.replace("\\", "\\\\").replace(",", "\\,"))

    def alive(self):
        return self.p.poll() is None

    def finish(self, label):
        if self.p.poll() is None:
            self.p.stdin.close()
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        so = self.p.stdout.read()
        with open(self.err.name) as f:
            se = f.read()
        check(self.p.returncode == 0 and "done" in so,
              "%s: the JVM ran on and exited 0 (exit %s)" % (label, self.p.returncode))
        check("A fatal error" not in se and "hs_err" not in se, "%s: the JVM did not crash" % label)
        return se


def one_failure(fx, rc, label, *words):
    lines = fx.new_lines()
    check(rc == 2, "%s: the agent answered 2 (command failed), got %s" % (label, rc))
    check(len(lines) == 1 and all(w in lines[0] for w in words),
          "%s: one line naming %s: %s" % (label, ", ".join(repr(w) for w in words), lines))


def good_dump(fx, label, before):
    """A dump to a good path holds at least `before` weight; returns it."""
    path = os.path.join(fx.a.workdir, "good-%d.collapsed" % int(time.time() * 1000))
    rc = fx.dump(path)
    w = weight(path)
    fx.new_lines()
    check(rc == 0 and w >= before and w > 0,
          "%s: a dump to a good path succeeds and holds every sample (%d >= %d, rc %s)" % (label, w, before, rc))
    return w


def leftovers(d, name):
    return [f for f in os.listdir(d) if f.startswith(name + ".tmp.")] if os.path.isdir(d) else []


# --- scenarios -----------------------------------------------------------------------------------


def scenario_disk_full(a):
    if os.geteuid() != 0:
        print("skipped: the disk-full scenario needs root (to mount a tmpfs)")
        return 77
    mnt = tempfile.mkdtemp(prefix="full-", dir=a.workdir)
    rc, _, se = run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", mnt])
    if not check(rc == 0, "a 64 KiB tmpfs is mounted at %s (%s)" % (mnt, se.strip())):
        return 1
    fx = None
    try:
        target = os.path.join(mnt, "profile.html")
        with open(target, "w") as f:
            f.write("the previous profile\n")
        # Leave a few KiB: the page template alone is ~13 KiB.
        fd = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            while os.write(fd, b"\0" * 4096) == 4096:
                pass
        except OSError:
            pass
        os.ftruncate(fd, os.fstat(fd).st_size - 8192)
        os.close(fd)
        fx = Fixture(a, "event=cpu,interval=1ms,file=%s" % os.path.join(a.workdir, "exit.collapsed"))
        time.sleep(1.5)
        fx.new_lines()
        before = good_dump(fx, "disk-full", 1)
        rc = fx.dump(target)
        one_failure(fx, rc, "disk-full: dump onto a full file system", target, "No space left on device")
        with open(target) as f:
            check(f.read() == "the previous profile\n", "disk-full: the previous file keeps its content")
        check(leftovers(mnt, "profile.html") == [], "disk-full: no temporary file is left: %s" % os.listdir(mnt))
        check(fx.alive(), "disk-full: the JVM still runs")
        # free the space: the same dump now succeeds
        os.unlink(os.path.join(mnt, "filler"))
        rc = fx.dump(target)
        fx.new_lines()
        with open(target, errors="replace") as f:
            check(rc == 0 and "<html" in f.read().lower(), "disk-full: with space again, the dump succeeds (rc %s)" % rc)
        good_dump(fx, "disk-full", before)
    finally:
        if fx is not None:
            fx.finish("disk-full")
        run(["umount", "-l", mnt])
        os.rmdir(mnt)
    check(weight(os.path.join(a.workdir, "exit.collapsed")) > 0, "disk-full: the files are written at exit")
    return 0


def scenario_dir_removed(a):
    d = os.path.join(a.workdir, "out")
    os.makedirs(d, exist_ok=True)
    fx = Fixture(a, "event=cpu,interval=1ms,threads,lines,tiers,file=%s" % os.path.join(a.workdir, "exit.collapsed"))
    try:
        time.sleep(1.5)
        fx.new_lines()
        before = good_dump(fx, "dir-removed", 1)
        shutil.rmtree(d)
        target = os.path.join(d, "p.collapsed")
        rc = fx.dump(target)
        one_failure(fx, rc, "dir-removed: dump into a removed directory", target, "No such file or directory")
        check(not os.path.exists(d), "dir-removed: nothing was created")
        # Removed and recreated while dumps run: never a partial file.
        stop = threading.Event()

        def churn():
            while not stop.is_set():
                shutil.rmtree(d, ignore_errors=True)
                time.sleep(0.005)
                os.makedirs(d, exist_ok=True)
                time.sleep(0.03)

        t = threading.Thread(target=churn)
        t.start()
        ok = failed = bad = 0
        target = os.path.join(d, "p.html")
        for _ in range(10):
            rc = fx.dump(target)
            lines = fx.new_lines()
            if rc == 0 and all(l.startswith("profile2: wrote ") for l in lines):
                ok += 1
            elif rc == 2 and len(lines) == 1 and target in lines[0]:
                failed += 1
            else:
                bad += 1
                print("      unexpected: rc %s, lines %s" % (rc, lines))
            try:
                with open(target, errors="replace") as f:
                    text = f.read()
                if not text.rstrip().endswith("</html>"):
                    bad += 1
                    print("      partial file at the path (%d bytes)" % len(text))
            except OSError:
                pass
        stop.set()
        t.join()
        check(bad == 0, "dir-removed: 10 dumps during removals: %d succeeded, %d failed in one line, %d otherwise"
              % (ok, failed, bad))
        check(fx.alive(), "dir-removed: the JVM still runs")
        good_dump(fx, "dir-removed", before)
    finally:
        fx.finish("dir-removed")
    return 0


def as_nobody(cmd):
    return ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups"] + cmd


def scenario_symlink(a):
    if os.geteuid() != 0:
        print("skipped: the symlink scenario needs root (to act as user nobody)")
        return 77
    # In /tmp: nobody must be able to reach it, whatever the build tree's modes.
    shared = tempfile.mkdtemp(prefix="profile2-shared-")
    os.chmod(shared, 0o1777)
    victim = os.path.join(a.workdir, "victim.txt")
    with open(victim, "w") as f:
        f.write("precious\n")
    os.chmod(victim, 0o644)
    link = os.path.join(shared, "out.collapsed")
    rc, _, se = run(as_nobody(["ln", "-s", victim, link]))
    check(rc == 0 and os.lstat(link).st_uid != 0, "symlink: nobody planted %s -> %s (%s)" % (link, victim, se.strip()))
    fx = Fixture(a, "event=cpu,interval=1ms,file=%s" % os.path.join(a.workdir, "exit.collapsed"))
    try:
        time.sleep(1.0)
        fx.new_lines()
        before = good_dump(fx, "symlink", 1)
        rc = fx.dump(link)
        one_failure(fx, rc, "symlink: dump onto a planted link", link, "symbolic link")
        with open(victim) as f:
            check(f.read() == "precious\n", "symlink: the link's target keeps its content")
        check(os.path.islink(link) and os.readlink(link) == victim, "symlink: the link is left as it was")
        check(leftovers(shared, "out.collapsed") == [], "symlink: no temporary file is left")
        # The temporary name, planted too (the JVM's pid is predictable).
        os.unlink(link)
        tmp = "%s.tmp.%d" % (link, fx.p.pid)
        rc2, _, _ = run(as_nobody(["ln", "-s", victim, tmp]))
        rc = fx.dump(link)
        one_failure(fx, rc, "symlink: dump with a link planted at its temporary name", link, "File exists")
        with open(victim) as f:
            check(rc2 == 0 and f.read() == "precious\n", "symlink: the temporary link's target keeps its content")
        check(not os.path.lexists(link), "symlink: nothing was put at the path")
        check(fx.alive(), "symlink: the JVM still runs")
        good_dump(fx, "symlink", before)
    finally:
        fx.finish("symlink")
        shutil.rmtree(shared, ignore_errors=True)
    return 0


def scenario_unknown_version(a):
    env = {"PROFILE2_TEST_PRETEND_MAJOR": "19"}
    out = os.path.join(a.workdir, "never.collapsed")
    fx = Fixture(a, "event=cpu,interval=1ms,file=%s" % out, env_extra=env)
    time.sleep(0.5)
    lines = fx.new_lines()
    check(len(lines) == 1 and "does not know" in lines[0] and "profiling is disabled" in lines[0],
          "unknown-version: -agentpath gives one line saying why: %s" % lines)
    se = fx.finish("unknown-version (agentpath)")
    check(not os.path.exists(out), "unknown-version: no file is written")
    check(len([l for l in se.splitlines() if l.startswith("profile2:")]) == 1,
          "unknown-version: nothing else is printed at exit")
    fx = Fixture(a, "", env_extra=env, agent=False)
    try:
        rc = fx.jcmd('"event=cpu,file=%s"' % out)
        lines = fx.new_lines()
        check(rc == 3, "unknown-version: jcmd JVMTI.agent_load answers 3 (cannot be profiled), got %s" % rc)
        check(len(lines) == 1 and "does not know" in lines[0], "unknown-version: attach gives one line: %s" % lines)
        check(fx.alive(), "unknown-version: the JVM still runs after the refused attach")
    finally:
        fx.finish("unknown-version (attach)")
    return 0


SCENARIOS = {
    "disk-full": scenario_disk_full,
    "dir-removed": scenario_dir_removed,
    "symlink": scenario_symlink,
    "unknown-version": scenario_unknown_version,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--java-home", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--classes", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    a.workdir = os.path.abspath(a.workdir)
    rc = SCENARIOS[a.scenario](a)
    if rc == 77:
        sys.exit(77)
    if FAILURES or rc:
        print("%d failed checks" % len(FAILURES))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
