#!/usr/bin/env python3
"""A server on virtual threads (issue 15, items 2 and 5), JDK 21 and later.

VThreadServer.java (run from source) is the JDK's HTTP server with one
virtual thread per exchange, loaded by 32 virtual-thread clients for a few
seconds; each request computes (VThreadServer.work) and sleeps, so its
virtual thread parks and resumes with its older frames still in its heap
chunk. The agent profiles it at 1 ms, cpu with walk=signal and wall with
walk=safepoint, with `threads`. Checks, per run:
  - the program ran to the end and served requests;
  - at least MIN_WORK samples in VThreadServer.work;
  - every one of them under a virtual thread's root ([VirtualThread #N]);
  - at most INCOMPLETE_LIMIT % of the walked ones incomplete ([throttled]
    samples, the time budget's, are counted apart), and the complete ones
    whole: Continuation.enter at the root, the server's exchange
    (ServerImpl$Exchange.run) and the handler's lambda below work.
Measured (2026-11-28, 2-CPU VM, beside a clean-clone CI run): 896 and 968
samples in work, all under their virtual thread's root and whole but 2
incomplete; 11-37 incomplete walks in each whole profile (of ~3,500-7,000).
"""
import os
import re
import sys

import agent_test as at

# With the old linear congruential work (folded by C2): 98-299 in 15 runs of
# 2026-12-06, plain and ASan, against a limit of 80. With the xorshift work
# (2026-12-06): cpu 1,821-2,124 plain (4 runs), 1,190-1,530 under ASan (7);
# wall 2,835-3,113 plain, 2,116-2,459 ASan. A third of the lowest: 400.
MIN_WORK = 400
# Before the chunks were read nearly every sample after a sleep ended at
# the barrier; measured since: under 0.5 %. 3 % leaves room for a loaded
# machine's share of signals inside mount and unmount.
INCOMPLETE_LIMIT = 3.0


def served(stdout):
    """The server ran to its end and served more than 100 requests."""
    m = re.search(r"server done, (\d+) requests", stdout)
    return m is not None and int(m.group(1)) > 100


def scenario(a, event, walk):
    label = "%s %s" % (event, walk)
    base = os.path.join(a.workdir, event + "-" + walk)
    ran = at.profile_source_fixture(a, label, base, event, walk, ("VThreadServer.java", "4"), done=served)
    if ran is None:
        return
    summary = ran[1]
    print("      %s: virtual threads: %s" % (label, at.summary_value(summary, "virtual threads")))
    print("      %s: incomplete walks: %s" % (label, at.summary_value(summary, "incomplete walks")))
    work = complete = incomplete = throttled = unrooted = partial = 0
    example = None
    for frames, w in at.read_collapsed(base + ".collapsed"):
        if not any(f.startswith("VThreadServer.work") for f in frames):
            continue
        work += w
        if not re.match(r"^\[VirtualThread #\d+\]$", frames[0]):
            unrooted += w
            example = example or ";".join(frames)[:400]
            continue
        # [throttled]: under ASan's slower walks, 28 of 376 in one wall-mode
        # run.
        outcome = at.walk_outcome(frames)
        if outcome == "throttled":
            throttled += w
            continue
        if outcome == "incomplete":
            incomplete += w
            continue
        complete += w
        whole = (frames[1] == "jdk/internal/vm/Continuation.enter"
                 and any(f.startswith("sun/net/httpserver/ServerImpl$Exchange.run") for f in frames)
                 and any(f.startswith("VThreadServer.lambda$main$") for f in frames))
        if not whole:
            partial += w
            example = example or ";".join(frames)[:400]
    share = 100.0 * incomplete / max(work - throttled, 1)
    print("      %s: samples in work %d: complete %d (%d of them not whole), incomplete %d, throttled %d, not under a "
          "virtual thread's root %d" % (label, work, complete, partial, incomplete, throttled, unrooted))
    at.check(work >= MIN_WORK, "%s: %d samples in VThreadServer.work (at least %d)" % (label, work, MIN_WORK))
    at.check(unrooted == 0 and partial == 0,
             "%s: every one under its virtual thread's root, from Continuation.enter through the exchange "
             "(e.g. %s)" % (label, example))
    at.check(share <= INCOMPLETE_LIMIT, "%s: %.2f %% incomplete (at most %.1f %%)" % (label, share, INCOMPLETE_LIMIT))


def main():
    return at.source_fixture_main(lambda a: [scenario(a, event, walk)
                                             for event, walk in (("cpu", "signal"), ("wall", "safepoint"))])


if __name__ == "__main__":
    sys.exit(main())
