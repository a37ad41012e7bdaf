#!/usr/bin/env python3
"""What the machine did while the tests ran: a heartbeat and the kernel's
pressure figures, once a second, so that a failed test's digest can say
whether the machine stood still or its disk stalled while the test ran
(scripts/test.sh). Twice a CI run had two JVM tests miss a 60 s or 120 s
limit at the same time, with two others slowed by ~45 s just before: a
machine that stops running its vCPUs, or a disk that stops writing, looks
like that, and so does a deadlock. These figures tell them apart.

  machine_watch.py record LOG         append one line a second until the
                                      parent process exits
  machine_watch.py window LOG T0 T1   one line: the machine between epoch
                                      seconds T0 and T1
  machine_watch.py summary LOG        one line: the whole run

A line of LOG: epoch, the heartbeat's gap (seconds since the previous line,
1.0 on a machine that runs), then the cumulative stall times in
microseconds from /proc/pressure (cpu some, io some, io full, memory full;
-1 where the kernel has no PSI) and steal time in clock ticks (/proc/stat).
"""
import os
import sys
import time

TICK_S = 1.0
FIELDS = ("cpu some", "io some", "io full", "memory full")


def pressure():
    out = []
    for res, kind in (("cpu", "some"), ("io", "some"), ("io", "full"), ("memory", "full")):
        v = -1
        try:
            with open("/proc/pressure/" + res) as f:
                for line in f:
                    if line.startswith(kind):
                        v = int(line.rsplit("total=", 1)[1])
        except (OSError, ValueError, IndexError):
            pass
        out.append(v)
    return out


def steal_ticks():
    try:
        with open("/proc/stat") as f:
            cpu = f.readline().split()
        return int(cpu[8])
    except (OSError, ValueError, IndexError):
        return -1


def record(path):
    parent = os.getppid()
    last = time.monotonic()
    with open(path, "a", buffering=1) as log:
        while os.getppid() == parent:
            now = time.monotonic()
            log.write("%.1f %.2f %s %d\n" % (time.time(), now - last, " ".join(map(str, pressure())), steal_ticks()))
            last = now
            time.sleep(TICK_S)


def rows(path, t0=None, t1=None):
    out = []
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) != 7:
                    continue
                r = [float(p[0]), float(p[1])] + [int(x) for x in p[2:]]
                if (t0 is None or r[0] >= t0) and (t1 is None or r[0] <= t1 + TICK_S):
                    out.append(r)
    except (OSError, ValueError):
        pass
    return out


def describe(rs, what):
    if len(rs) < 2:
        return "machine %s: no heartbeat recorded" % what
    span = rs[-1][0] - rs[0][0]
    worst = max(rs[1:], key=lambda r: r[1])
    parts = ["%.0f s" % span,
             "longest heartbeat gap %.1f s (at %s)" % (worst[1], time.strftime("%H:%M:%S", time.gmtime(worst[0])))]
    for i, name in enumerate(FIELDS):
        a, b = rs[0][2 + i], rs[-1][2 + i]
        if a >= 0 and b >= a:
            parts.append("%s stalled %.1f s" % (name, (b - a) / 1e6))
    if rs[0][6] >= 0:
        parts.append("steal %.1f s" % ((rs[-1][6] - rs[0][6]) / os.sysconf("SC_CLK_TCK")))
    return "machine %s: %s" % (what, ", ".join(parts))


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "record" and len(sys.argv) == 3:
        record(sys.argv[2])
    elif cmd == "window" and len(sys.argv) == 5:
        t0, t1 = float(sys.argv[3]), float(sys.argv[4])
        print(describe(rows(sys.argv[2], t0, t1), "while it ran"))
    elif cmd == "summary" and len(sys.argv) == 3:
        print(describe(rows(sys.argv[2]), "over the whole run"))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
