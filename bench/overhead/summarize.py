#!/usr/bin/env python3
"""Tables of bench/overhead.sh: OUT/raw.jsonl (one line per run) and the
collapsed profiles in OUT/profiles/.

Overhead: a configuration's ratio in a round is its time over the mean of
the unprofiled runs just before and just after it in that round; the
tables give the median over the rounds, and for wall time the smallest and
largest ratio seen.

Agreement (seeds/000 §5.3, bench/overhead/cct.py): for each JDK, workload,
event and interval, the merged (averaged) CCT of the signal walks against
that of the safepoint walks (overlap, and hot-edge coverage with T = 0.1
both ways), and the stability of each: every run's CCT against the merged
CCT of the other rounds (median over the runs).

  summarize.py OUT
"""
import json
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cct  # noqa: E402


def load(out):
    runs = []
    with open(os.path.join(out, "raw.jsonl")) as f:
        for line in f:
            if line.strip():
                runs.append(json.loads(line))
    return runs


def ratios(runs):
    """{(jdk, workload, config): {"wall": [...], "cpu": [...], "samples": [...]}}"""
    by_round = defaultdict(list)
    for r in runs:
        by_round[(r["jdk"], r["workload"], r["round"])].append(r)
    out = defaultdict(lambda: defaultdict(list))
    for (jdk, wl, rnd), rs in by_round.items():
        rs.sort(key=lambda r: r["seq"])
        for i, r in enumerate(rs):
            if r["config"] == "base" or not r["ok"]:
                continue
            before = next((x for x in reversed(rs[:i]) if x["config"] == "base" and x["ok"]), None)
            after = next((x for x in rs[i + 1:] if x["config"] == "base" and x["ok"]), None)
            bases = [x for x in (before, after) if x]
            if not bases:
                continue
            k = (jdk, wl, r["config"])
            for m in ("wall", "cpu"):
                out[k][m].append(r[m] / statistics.mean(b[m] for b in bases))
            if r["samples"] is not None:
                out[k]["samples"].append(r["samples"])
            out[k]["base_wall"].append(statistics.mean(b["wall"] for b in bases))
    return out


def cells_of(v):
    """wall median [min, max], CPU median, samples median of one configuration."""
    if not v or not v["wall"]:
        return ["", "", ""]
    return ["%.3f [%.3f, %.3f]" % (statistics.median(v["wall"]), min(v["wall"]), max(v["wall"])),
            "%.3f" % statistics.median(v["cpu"]),
            "%d" % statistics.median(v["samples"]) if v["samples"] else ""]


def scaling_tables(rat, jdk, wls):
    """Rows: workloads (scale-tTHREADS-dDEPTH); columns: configurations."""
    cfgs = sorted({k[2] for k in rat if k[0] == jdk and k[1] in wls}, key=config_order)
    print("\n### Scaling, %s (profiled / unprofiled, median over the rounds; wall [min, max])\n" % jdk)
    print("| threads | depth | unprofiled wall | " + " | ".join("%s wall | CPU | samples" % c for c in cfgs) + " |")
    print("| ---: | ---: | ---: |" + " ---: | ---: | ---: |" * len(cfgs))
    for w in wls:
        _, t, d = w.split("-")
        cells = []
        base = [x for c in cfgs for x in rat.get((jdk, w, c), {}).get("base_wall", [])]
        for c in cfgs:
            cells += cells_of(rat.get((jdk, w, c)))
        print("| %s | %s | %.2f s | %s |" % (t[1:], d[1:], statistics.median(base) if base else 0, " | ".join(cells)))


def overhead_tables(runs):
    rat = ratios(runs)
    jdks = sorted({k[0] for k in rat})
    for jdk in jdks:
        wls = []
        for r in runs:
            if r["jdk"] == jdk and r["workload"] not in wls:
                wls.append(r["workload"])
        scale = [w for w in wls if w.startswith("scale-")]
        if scale:
            scaling_tables(rat, jdk, scale)
        wls = [w for w in wls if w not in scale]
        if not wls:
            continue
        cfgs = sorted({k[2] for k in rat if k[0] == jdk and k[1] in wls}, key=config_order)
        n = min(len(v["wall"]) for k, v in rat.items() if k[0] == jdk and k[1] in wls)
        print("\n### Overhead, %s (profiled / unprofiled; median of %d+ rounds; wall [min, max])\n" % (jdk, n))
        base = "; ".join("%s %.2f s" % (w, statistics.median(
            x for k, v in rat.items() if k[0] == jdk and k[1] == w for x in v["base_wall"])) for w in wls)
        print("Unprofiled wall time (median): %s.\n" % base)
        head = "| configuration | " + " | ".join("%s wall | %s CPU | %s samples" % (w, w, w) for w in wls) + " |"
        print(head)
        print("| --- |" + " ---: | ---: | ---: |" * len(wls))
        for c in cfgs:
            cells = []
            for w in wls:
                cells += cells_of(rat.get((jdk, w, c)))
            print("| %s | %s |" % (c, " | ".join(cells)))


def config_order(c):
    order = {"10ms": 0, "1ms": 1, "100us": 2}
    parts = c.split("-")
    if c == "p2-idle" or c.startswith("jvm-"):
        return (2, [c], 0)
    return (parts[0] != "p2", parts[1:3] if parts[0] == "p2" else parts[1:2], order.get(parts[-1], 9))


def agreement_tables(out):
    root = os.path.join(out, "profiles")
    if not os.path.isdir(root):
        return
    print("\n### Agreement and stability of the calling-context trees (Java frames; T = 0.1)\n")
    print("signal vs safepoint: the merged CCTs of all rounds; hot cover s/sp = hotcover(signal, safepoint), "
          "sp/s the reverse. Stability: each run against the merged CCT of the other rounds, median.\n")
    print("| JDK | workload | event, interval | overlap signal vs safepoint | hot cover s/sp | hot cover sp/s "
          "| stability overlap signal | safepoint | stability hot cover signal | safepoint | edges signal, safepoint |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for jdk in sorted(os.listdir(root)):
        for wl in sorted(os.listdir(os.path.join(root, jdk))):
            d = os.path.join(root, jdk, wl)
            if not os.path.isdir(d):
                continue
            runs = defaultdict(list)  # (event, walk, interval) -> [stacks per round]
            for f in sorted(os.listdir(d)):
                if not f.endswith(".collapsed") or wl.startswith("scale-"):
                    continue
                parts = f.split(".")[0].split("-")
                if len(parts) != 4:
                    continue
                _, event, walk, iv = parts
                runs[(event, walk, iv)].append(cct.read_collapsed(os.path.join(d, f)))
            for event in ("cpu", "wall"):
                # Not 100 us: the budget and the kernel's cost per signal
                # (bench/RESULTS.md) make those runs a different program.
                for iv in ("10ms", "1ms"):
                    s, sp = runs.get((event, "signal", iv)), runs.get((event, "safepoint", iv))
                    if not s or not sp:
                        continue
                    ms, msp = cct.merge(s), cct.merge(sp)
                    stab = {}
                    for name, rs in (("s", s), ("sp", sp)):
                        ov, hc = [], []
                        for i, r in enumerate(rs):
                            others = cct.merge(rs[:i] + rs[i + 1:])
                            if others:
                                ov.append(cct.overlap(r, others))
                                hc.append(cct.hotcover(r, others))
                        stab[name] = (statistics.median(ov) if ov else float("nan"),
                                      statistics.median(hc) if hc else float("nan"))
                    print("| %s | %s | %s %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %d, %d |" % (
                        jdk, wl, event, iv, cct.overlap(ms, msp), cct.hotcover(ms, msp), cct.hotcover(msp, ms),
                        stab["s"][0], stab["sp"][0], stab["s"][1], stab["sp"][1],
                        len(cct.edges(ms)), len(cct.edges(msp))))


def main():
    out = sys.argv[1]
    runs = load(out)
    failed = [r for r in runs if not r["ok"]]
    print("%d runs, %d failed" % (len(runs), len(failed)))
    overhead_tables(runs)
    agreement_tables(out)


if __name__ == "__main__":
    main()
