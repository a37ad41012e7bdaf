#!/usr/bin/env python3
"""How close the JVM tests' checks came to their limits, over many runs.

    python3 scripts/limit_use.py TESTLOG [TESTLOG ...]

Each TESTLOG is a meson testlog.txt (e.g. the series' copies: issue 13
item 6, scripts/suite_series.sh). The checks print their measured value and
their limit on one line ("ok  javac: 12 of 3000 signals throttled (at most
1 %)"); this reads the common forms:

  A of B ... at most P %        upper bound on A/B (also "(X %, at most P %)")
  A of B ... at least P %       lower bound on A/B
  ...; X %, within Z %          |X| <= Z (a rate's deviation)
  ...; X %, within -L .. +H %   -L <= X <= H
  A s sampled for B s of CPU (at least P of it)
                                lower bound on A/B
  X % of ... (Y % ..., +-Z)     |X - Y| <= Z (points)
  R of the session's ... (T +- Z), ... is X s for Y s ... (T +- Z)
                                |value - T| <= Z
  N ... (at least M; ...)       lower bound on a count

and prints, per check (the test, and the line with its numbers blanked),
how many runs printed it and its "use" of the allowed room at worst: value
/ limit for an upper bound; for a lower bound on a share, the part of the
room below 100 % that it missed, (100 - value) / (100 - limit); limit /
value for a lower bound on a count or ratio; |value - target| / tolerance
for a two-sided one. 1.0 is the limit itself; a check that never
came near its limit is a check that could be tighter, one near 1.0 is one
that will fail on a slower machine. Lines in no known form are skipped (and
counted).
"""
import collections
import re
import sys

NUM = r"(-?\d+(?:\.\d+)?)"
PATTERNS = [
    # "A of B ... (X %, at most P %)" / "(at most P %)" / "(budget=...: at least P %)"
    ("upper", re.compile(NUM + r" of (?:the [^0-9]*?|main's |)" + NUM + r"\b.*?at most " + NUM + r" ?%")),
    ("lower", re.compile(NUM + r" of (?:the [^0-9]*?|main's |)" + NUM + r"\b.*?at least " + NUM + r" ?%")),
    ("two-sided-points", re.compile(r"has " + NUM + r" % of .*?\(" + NUM + r" % (?:by construction, )?\+-" + NUM)),
    ("two-sided", re.compile(r"\b" + NUM + r" of the session's .*?\(" + NUM + r" \+- " + NUM + r"\)")),
    ("two-sided-ratio", re.compile(r"weight is " + NUM + r" s for " + NUM + r" s of its CPU time \(" + NUM + r" \+- " + NUM + r"\)")),
    ("two-sided-pct", re.compile(r"; " + NUM + r" %, within " + NUM + r" %\)")),
    ("range-pct", re.compile(r"; " + NUM + r" %, within " + NUM + r" \.\. \+?" + NUM + r" %\)")),
    ("lower-ratio", re.compile(NUM + r" s sampled for " + NUM + r" s of CPU \(at least " + NUM + r" of it\)")),
    ("lower-count", re.compile(r"\b" + NUM + r" [a-z][^()0-9]*\(at least " + NUM + r"[;)]")),
]


def use_of(kind, m):
    g = [float(x) for x in m.groups()]
    if kind == "upper":
        a, b, p = g
        v = 100.0 * a / b if b else 0.0
        return v, p, (v / p if p else (0.0 if v == 0 else float("inf")))
    if kind == "lower":
        # of the room below 100 % that the limit leaves, the share missed
        a, b, p = g
        v = 100.0 * a / b if b else 0.0
        return v, p, ((100.0 - v) / (100.0 - p) if p < 100 else (0.0 if v >= 100 else float("inf")))
    if kind == "two-sided-pct":
        v, z = g
        return v, "0 ± %g" % z, abs(v) / z if z else float("inf")
    if kind == "range-pct":
        v, lo, hi = g
        return v, "%g .. +%g" % (lo, hi), (v / lo if v < 0 else v / hi) if lo and hi else float("inf")
    if kind == "lower-ratio":
        a, b, p = g
        v = a / b if b else 0.0
        return v, p, (p / v if v else float("inf"))
    if kind in ("two-sided-points", "two-sided"):
        v, t, z = g
        return v, "%g ± %g" % (t, z), abs(v - t) / z if z else float("inf")
    if kind == "two-sided-ratio":
        w, cpu, t, z = g
        v = w / cpu if cpu else 0.0
        return v, "%g ± %g" % (t, z), abs(v - t) / z if z else float("inf")
    if kind == "lower-count":
        v, n = g
        return v, n, (n / v if v else float("inf"))
    raise ValueError(kind)


def checks(path):
    test = "?"
    for line in open(path, errors="replace"):
        if line.startswith("test:"):
            test = line.split("/", 1)[-1].strip()
            continue
        s = line.strip()
        if not (s.startswith("ok ") or s.startswith("FAIL") or s.startswith("not ok")):
            continue
        text = s.split(None, 1)[1] if " " in s else s
        for kind, rx in PATTERNS:
            m = rx.search(text)
            if m:
                key = (re.sub(r"-jdk\d+$", "-jdkN", test), re.sub(r"\d+(\.\d+)?", "#", text))
                yield key, kind, use_of(kind, m)
                break
        else:
            yield None, None, None


def main(paths):
    worst = {}
    runs = collections.Counter()
    skipped = 0
    for p in paths:
        for key, kind, got in checks(p):
            if key is None:
                skipped += 1
                continue
            runs[key] += 1
            v, limit, use = got
            if key not in worst or use > worst[key][2]:
                worst[key] = (v, limit, use, kind)
    print("| use at worst | checks printed | test (both JDKs) | check | value at worst | limit |")
    print("| ---: | ---: | --- | --- | ---: | ---: |")
    for key, (v, limit, use, kind) in sorted(worst.items(), key=lambda kv: -kv[1][2]):
        bound = limit if isinstance(limit, str) else ("≤ %g" if kind == "upper" else "≥ %g") % limit
        print("| %.2f | %d | %s | %s | %.3g | %s |" % (use, runs[key], key[0], key[1][:110], v, bound))
    print("\n%d logs, %d checks in known forms, %d check lines in none" % (len(paths), len(worst), skipped))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: limit_use.py TESTLOG [TESTLOG ...]")
    main(sys.argv[1:])
