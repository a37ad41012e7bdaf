"""What a process a test finds stuck is doing, before the test kills it.

A JVM test that misses its time limit used to say only "timed out": a
deadlock in the agent, a disk that stopped writing and a machine that
stopped running look the same from there. report(pid) reads each thread's
scheduler state and kernel wait channel from /proc and, where gdb can
attach, its backtrace, and returns lines that start with "HANG" (kept in
scripts/failed_tests.py's digest, so a CI log's tail shows them): one line
of totals, then the threads that matter most: those with a profile2 frame
(its functions, its libraries, its threads "p2-..."), then the running (R) and disk-waiting (D) ones.
The whole gdb output goes to a file beside the test's other files.

  import hang_report
  r = hang_report.run(cmd, timeout=120, cwd=d)  # subprocess.run's result;
                                                # on a timeout, returncode
                                                # None and the report printed
  for l in hang_report.report(pid, "no reply to dump", where): print(l)
"""
import collections
import os
import re
import shutil
import subprocess

MAX_THREAD_LINES = 10
MAX_FRAMES = 7
# A frame of profile2's: its function's prefix, or its file (gdb names the
# library, or the source file where the build kept debug information), or
# one of its threads (agent and library name theirs "p2-...").
OURS = re.compile(r"^(p2_|profile2_|ASGST_|Agent_On)|libprofile2| at \.\./(agent|lib|unwind|queue|tools)/")


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return "?"


def _threads(pid):
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for t in tids:
        base = "/proc/%d/task/%s/" % (pid, t)
        stat = _read(base + "stat")
        # the state follows the command name's closing parenthesis
        state = stat[stat.rfind(")") + 2:][:1] if ")" in stat else "?"
        out[int(t)] = (_read(base + "comm"), state, _read(base + "wchan") or "-")
    return out


def _backtraces(pid, path, timeout):
    """{tid: [function, ...]} from gdb, innermost first; {} without gdb."""
    gdb = shutil.which("gdb")
    if not gdb:
        return {}, "gdb not installed"
    try:
        r = subprocess.run([gdb, "-p", str(pid), "-batch", "-nx", "-ex", "set pagination off",
                            "-ex", "thread apply all bt 40"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {}, "gdb took over %d s" % timeout
    try:
        with open(path, "w") as f:
            f.write(r.stdout + r.stderr)
    except OSError as e:
        path = "nowhere (%s)" % e.strerror
    bts, cur = {}, None
    for line in r.stdout.splitlines():
        m = re.match(r"^Thread \d+ \(.*?LWP (\d+)\)", line)
        if m:
            cur = bts.setdefault(int(m.group(1)), [])
            continue
        m = re.match(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(", line)
        if m and cur is not None:
            cur.append((m.group(1), bool(OURS.search(m.group(1)) or OURS.search(line))))
    return bts, ("backtraces in %s" % path) if bts else "gdb attached no thread (%s)" % (
        (r.stderr.strip().splitlines() or ["no output"])[-1][:120])


def report(pid, why, where, gdb_timeout=60):
    threads = _threads(pid)
    if not threads:
        return ["HANG pid %d (%s): gone before it could be read" % (pid, why)]
    bts, gdb_note = _backtraces(pid, os.path.join(where, "hang-%d.txt" % pid), gdb_timeout)
    states = collections.Counter(s for _, s, _ in threads.values())
    waits = collections.Counter(w for _, _, w in threads.values())
    lines = ["HANG pid %d (%s): %d threads, states %s; waiting in %s; %s" % (
        pid, why, len(threads), " ".join("%s %d" % kv for kv in sorted(states.items())),
        ", ".join("%s %d" % kv for kv in waits.most_common(4)), gdb_note)]

    def rank(tid):
        fr = bts.get(tid, [])
        comm, state, _ = threads[tid]
        ours = any(o for _, o in fr) or comm.startswith("p2-")
        return (0 if ours else 1 if state in "RD" else 2, tid)

    for tid in sorted(threads, key=rank)[:MAX_THREAD_LINES]:
        comm, state, wchan = threads[tid]
        if rank(tid)[0] == 2:
            break
        fr = bts.get(tid, [])
        lines.append("HANG   %d %s %s %s: %s" % (tid, comm, state, wchan, " < ".join(f for f, _ in fr[:MAX_FRAMES]) or "-"))
    return lines


class _Result:
    def __init__(self, args, returncode, stdout, stderr):
        self.args, self.returncode, self.stdout, self.stderr = args, returncode, stdout, stderr


def run(cmd, timeout, cwd, **kw):
    """subprocess.run(cmd, capture_output=True, text=True) that, when the
    process outlives timeout, prints report() on it before killing it and
    returns its output so far with returncode None."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, **kw)
    try:
        out, err = p.communicate(timeout=timeout)
        return _Result(cmd, p.returncode, out, err)
    except subprocess.TimeoutExpired:
        for line in report(p.pid, "still running after %d s" % timeout, cwd):
            print(line, flush=True)
        p.kill()
        out, err = p.communicate()
        return _Result(cmd, None, out, err)
