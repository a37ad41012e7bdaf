#!/usr/bin/env python3
"""Tables of bench/overhead.sh: OUT/raw.jsonl (one line per run) and the
collapsed profiles in OUT/profiles/.

Overhead: a configuration's ratio in a round is its time over the mean of
the unprofiled runs just before and just after it in that round; the
tables give the median over the rounds, and for wall time the smallest and
largest ratio seen.

Side by side (when the runs include async-profiler, overhead.sh's AP=): per
workload, the CPU-time ratios of profile2 (its default walk, signal; the
safepoint walk next to it), async-profiler and JFR at each setting both
profilers were run at (cpu 10 ms, 1 ms, 100 us; wall 1 ms), and whether
profile2's median is at most async-profiler's, with the rounds in which it
was.

Sample fidelity (cpu mode): a profile's weight (the sum of its collapsed
stacks' counts: intervals for profile2, samples for async-profiler) over the
intervals the process's CPU time holds (CPU time / interval). The process's
CPU time includes the JVM's start before either agent starts sampling and
its exit after, so the figure is a lower bound for both; issue 14 asks for
0.95 at 1 ms. (Both count kernel time where the kernel lets them: as root,
or with kernel.perf_event_paranoid < 2. Otherwise their perf counters
exclude the kernel and a period that ends there gives no sample; raw.jsonl
has the user time, but the kernel splits user and system time by ticks.)

Agreement (seeds/000 §5.3, bench/overhead/cct.py): for each JDK, workload,
event and interval, the merged (averaged) CCT of the signal walks against
that of the safepoint walks (overlap, and hot-edge coverage with T = 0.1
both ways), and the stability of each: every run's CCT against the merged
CCT of the other rounds (median over the runs).

Two-phase against one-phase (issue 15 item 7): from the same runs, per
JDK, workload, event and interval, the CPU ratios of walk=signal and
walk=safepoint, the safepoint elements' latency, the stale elements, the
incomplete walks of each, what each did not walk or lost by reason (from
the text summaries), and the overlap of their merged trees.

  summarize.py OUT
"""
import json
import os
import re
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


INTERVAL_NS = {"10ms": 10000000, "1ms": 1000000, "100us": 100000}


def ratios(runs):
    """{(jdk, workload, config): {"wall": [...], "cpu": [...], "samples": [...],
    "base_wall": [...], "fidelity": [...], "round_cpu": {round: ratio}}}"""
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
            out[k].setdefault("round_cpu", {})[rnd] = out[k]["cpu"][-1]
            if r["samples"] is not None:
                out[k]["samples"].append(r["samples"])
            out[k]["base_wall"].append(statistics.mean(b["wall"] for b in bases))
            parts = r["config"].split("-")
            if r.get("weight") is not None and parts[1] == "cpu" and parts[-1] in INTERVAL_NS and r["cpu"] > 0:
                out[k]["fidelity"].append(r["weight"] / (r["cpu"] * 1e9 / INTERVAL_NS[parts[-1]]))
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
        if any(k[0] == jdk and k[1] in wls and k[2].startswith("ap-") for k in rat):
            side_by_side_tables(rat, jdk, wls)
        if any(k[0] == jdk and k[1] in wls and v["fidelity"] for k, v in rat.items()):
            fidelity_tables(rat, jdk, wls)


def config_order(c):
    """profile2, async-profiler, JFR, then the fixed costs."""
    order = {"10ms": 0, "1ms": 1, "100us": 2}
    parts = c.split("-")
    if c == "p2-idle" or c.startswith("jvm-"):
        return (3, [c], 0)
    group = {"p2": 0, "ap": 1}.get(parts[0], 2)
    return (group, parts[1:3] if parts[0] == "p2" else parts[1:2], order.get(parts[-1], 9))


# The side-by-side table's rows: (label, event, interval), the settings
# overhead.py runs async-profiler at (AP_SETTINGS there).
SETTINGS = (
    ("cpu 10 ms", "cpu", "10ms"),
    ("cpu 1 ms", "cpu", "1ms"),
    ("cpu 100 us", "cpu", "100us"),
    ("wall 1 ms", "wall", "1ms"),
)
# JFR has no wall-clock sampler: jdk.ExecutionSample samples the threads
# running Java code every period (1 ms at most), jdk.CPUTimeSample (JDK 25)
# each thread's CPU time. (column, configuration name pattern)
JFR = (("JFR ExecutionSample", "jfr-exec-%s"), ("JFR CPUTimeSample", "jfr-cpu-%s"))


def side_by_side_tables(rat, jdk, wls):
    """Per workload: the settings async-profiler ran at, each profiler's CPU
    ratio (median; median samples in parentheses)."""
    def cell(v):
        if not v or not v["cpu"]:
            return "-"
        s = "%.3f" % statistics.median(v["cpu"])
        if v["samples"]:
            s += " (%d)" % statistics.median(v["samples"])
        return s

    jfr = [(col, pat) for col, pat in JFR if any(k[0] == jdk and k[2].startswith(pat[:8]) for k in rat)]
    n = [len(v["cpu"]) for k, v in rat.items() if k[0] == jdk and k[2].startswith(("p2-", "ap-"))]
    print("\n### profile2 next to async-profiler and JFR, %s (CPU time profiled / unprofiled; median of %d+ "
          "rounds; median samples in parentheses)\n" % (jdk, min(n) if n else 0))
    print("profile2 with its default walk (signal); \"profile2 <= async-profiler\": profile2's median CPU ratio at "
          "most async-profiler's, with the rounds in which profile2's run cost at most async-profiler's. "
          "async-profiler's wall mode takes every thread of the process (the VM's own too) once per interval, "
          "signalling those that ran and counting idle ones without a signal; profile2's signals up to 16 Java "
          "threads per interval, round robin. JFR has no wall-clock sampler.\n")
    head = ["workload", "setting", "profile2", "profile2 walk=safepoint", "async-profiler"] + [c for c, _ in jfr] + \
        ["profile2 <= async-profiler"]
    print("| " + " | ".join(head) + " |")
    print("| --- | --- |" + " ---: |" * (len(head) - 3) + " --- |")
    for w in wls:
        for label, event, iv in SETTINGS:
            p2 = rat.get((jdk, w, "p2-%s-signal-%s" % (event, iv)))
            sp = rat.get((jdk, w, "p2-%s-safepoint-%s" % (event, iv)))
            ap = rat.get((jdk, w, "ap-%s-%s" % (event, iv)))
            if not p2 and not sp and not ap:
                continue  # not run (ONLY)
            cells = [w, label, cell(p2), cell(sp), cell(ap)]
            for _, pat in jfr:
                cells.append(cell(rat.get((jdk, w, pat % iv))) if event == "cpu" else "-")
            if p2 and ap and p2["cpu"] and ap["cpu"]:
                both = sorted(set(p2["round_cpu"]) & set(ap["round_cpu"]))
                won = sum(1 for r in both if p2["round_cpu"][r] <= ap["round_cpu"][r])
                cells.append("%s (%d of %d rounds)" % (
                    "yes" if statistics.median(p2["cpu"]) <= statistics.median(ap["cpu"]) else "no", won, len(both)))
            else:
                cells.append("-")
            print("| " + " | ".join(cells) + " |")


def fidelity_tables(rat, jdk, wls):
    """cpu mode: profile weight over the intervals of the process's CPU time."""
    cols = [("profile2", "p2-cpu-signal-%s"), ("profile2 walk=safepoint", "p2-cpu-safepoint-%s"),
            ("async-profiler", "ap-cpu-%s")]
    cols = [(c, pat) for c, pat in cols if any(k[0] == jdk and k[2].startswith(pat[:-2]) for k in rat)]
    print("\n### Sample fidelity, %s (cpu mode: profile weight / (process CPU time / interval); median [min, max])\n"
          % jdk)
    print("The process's CPU time includes the JVM's start before sampling starts and its exit after it stops: "
          "a lower bound for every profiler. Kernel time is sampled only where the perf counters may count it "
          "(root, or kernel.perf_event_paranoid < 2). Issue 14: at least 0.95 at 1 ms.\n")
    print("| workload | interval | " + " | ".join(c for c, _ in cols) + " | profile2 >= 0.95 |")
    print("| --- | --- |" + " ---: |" * len(cols) + " --- |")
    for w in wls:
        for iv, label in (("10ms", "10 ms"), ("1ms", "1 ms"), ("100us", "100 us")):
            vals = [rat.get((jdk, w, pat % iv), {}) for _, pat in cols]
            if not any(v.get("fidelity") for v in vals):
                continue
            cells = []
            for v in vals:
                f = v.get("fidelity")
                cells.append("%.3f [%.3f, %.3f]" % (statistics.median(f), min(f), max(f)) if f else "-")
            p2 = vals[0].get("fidelity") if cols and cols[0][0] == "profile2" else None
            ok = ("yes" if statistics.median(p2) >= 0.95 else "no") if p2 else "-"
            print("| %s | %s | %s | %s |" % (w, label, " | ".join(cells), ok))


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


def summary_figures(path):
    """The figures of one profile2 run's text summary the two-phase table
    uses: latency median and 99th percentile (ms), drained and stale
    elements, samples, incomplete walks, and samples not walked or lost by
    reason."""
    txt = open(path).read()
    f = {}
    m = re.search(r"^queue latency: .*?median ([\d.]+) ms, 99th percentile ([\d.]+) ms", txt, re.M)
    if m:
        f["p50"], f["p99"] = float(m.group(1)), float(m.group(2))
    m = re.search(r"^safepoint walks: .*?; (\d+) drained: (\d+) stale", txt, re.M)
    if m:
        f["drained"], f["stale"] = int(m.group(1)), int(m.group(2))
    m = re.search(r"^drains: (\d+),.*?; (\d+) drains did not suspend", txt, re.M)
    if m:
        f["drains"], f["unheld"] = int(m.group(1)), int(m.group(2))
    m = re.search(r"^in the profile: (\d+) samples", txt, re.M)
    f["samples"] = int(m.group(1)) if m else 0
    m = re.search(r"^incomplete walks: (\d+)", txt, re.M)
    f["incomplete"] = int(m.group(1)) if m else 0
    lost = defaultdict(int)
    m = re.search(r"^throttled: (\d+)", txt, re.M)
    if m:
        lost["throttled"] += int(m.group(1))
    m = re.search(r"^lost: (\d+)", txt, re.M)
    if m:
        lost["lost"] += int(m.group(1))
    m = re.search(r"^queue losses: (.*)$", txt, re.M)
    if m:
        for name, n in re.findall(r"(\w+) (\d+)", m.group(1)):
            if name in ("lost_resize", "lost_deregistered", "late_updates", "suspend_failures", "full", "other",
                        "capture_failed"):
                lost[name] += int(n)
    f["lost"] = lost
    return f


def two_phase_tables(out, runs):
    """issue 15 item 7: the two-phase walk (walk=safepoint: capture in the
    handler, completion at the drain) against the one-phase walk
    (walk=signal), from the same runs: cost, latency, stale elements,
    incomplete walks, losses by reason, overlap of the two walks' trees."""
    root = os.path.join(out, "profiles")
    if not os.path.isdir(root):
        return
    rat = ratios(runs)
    rows = []
    for jdk in sorted(os.listdir(root)):
        for wl in sorted(os.listdir(os.path.join(root, jdk))):
            d = os.path.join(root, jdk, wl)
            if not os.path.isdir(d) or wl.startswith("scale-"):
                continue
            for event in ("cpu", "wall"):
                for iv in ("10ms", "1ms", "100us"):
                    figs, trees = {}, {}
                    for walk in ("signal", "safepoint"):
                        name = "p2-%s-%s-%s" % (event, walk, iv)
                        txts = sorted(f for f in os.listdir(d) if f.startswith(name + ".r") and f.endswith(".txt"))
                        figs[walk] = [summary_figures(os.path.join(d, f)) for f in txts]
                        trees[walk] = [cct.read_collapsed(os.path.join(d, f[:-4] + ".collapsed")) for f in txts
                                       if os.path.exists(os.path.join(d, f[:-4] + ".collapsed"))]
                    if not figs["signal"] or not figs["safepoint"]:
                        continue
                    rows.append((jdk, wl, event, iv, figs, trees,
                                 {w: rat.get((jdk, wl, "p2-%s-%s-%s" % (event, w, iv)), {}) for w in figs}))
    if not rows:
        return
    print("\n### Two-phase (walk=safepoint) against one-phase (walk=signal) walks, same runs\n")
    print("CPU: the process's CPU time over the unprofiled run's, median over the rounds. Latency: signal to "
          "element handler, median over the rounds of each run's median and 99th percentile. Stale: elements "
          "delivered with their captured frames only, of those drained (all rounds). Incomplete: samples under "
          "[error:N] (all rounds). Not walked or lost: the summaries' counts over all rounds (throttled and "
          "lost for either walk; the queue's refusals, all walked in the handler instead, and losses for "
          "safepoint). Unheld: drains that did not suspend the thread (every element's capture whole), of all "
          "drains. Overlap: the merged trees of the two walks (as in the agreement table).\n")
    print("| JDK | workload | event, interval | CPU signal | CPU safepoint | latency p50 / p99 (ms) | stale | "
          "incomplete signal | incomplete safepoint | not walked or lost: signal | safepoint | unheld | overlap |")
    print("| --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | --- | --- | ---: | ---: |")

    def pct(a, b):
        return "%.2f %%" % (100.0 * a / b) if b else "-"

    def losses(fs):
        tot = defaultdict(int)
        for f in fs:
            for k, n in f["lost"].items():
                tot[k] += n
        return ", ".join("%s %d" % kv for kv in sorted(tot.items()) if kv[1]) or "none"

    for jdk, wl, event, iv, figs, trees, rat_w in rows:
        sp = figs["safepoint"]
        lat = [f for f in sp if "p50" in f]
        latency = ("%.2f / %.2f" % (statistics.median(f["p50"] for f in lat), statistics.median(f["p99"] for f in lat))
                   if lat else "-")
        cpu = {w: ("%.3f" % statistics.median(rat_w[w]["cpu"]) if rat_w[w].get("cpu") else "-") for w in rat_w}
        ov = "-"
        if trees["signal"] and trees["safepoint"]:
            ov = "%.3f" % cct.overlap(cct.merge(trees["signal"]), cct.merge(trees["safepoint"]))
        print("| %s | %s | %s %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            jdk, wl, event, iv, cpu["signal"], cpu["safepoint"], latency,
            pct(sum(f.get("stale", 0) for f in sp), sum(f.get("drained", 0) for f in sp)),
            pct(sum(f["incomplete"] for f in figs["signal"]), sum(f["samples"] for f in figs["signal"])),
            pct(sum(f["incomplete"] for f in sp), sum(f["samples"] for f in sp)),
            losses(figs["signal"]), losses(sp),
            pct(sum(f.get("unheld", 0) for f in sp), sum(f.get("drains", 0) for f in sp)), ov))


def main():
    out = sys.argv[1]
    runs = load(out)
    failed = [r for r in runs if not r["ok"]]
    print("%d runs, %d failed" % (len(runs), len(failed)))
    overhead_tables(runs)
    agreement_tables(out)
    two_phase_tables(out, runs)


if __name__ == "__main__":
    main()
