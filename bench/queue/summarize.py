#!/usr/bin/env python3
"""Markdown tables from bench/queue_cost.sh's raw lines (medians over rounds)."""
import re
import statistics
import os
import sys
from collections import defaultdict


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs, fmt):
    return "%s (%s..%s)" % (fmt % med(xs), fmt % min(xs), fmt % max(xs)) if xs else "-"


def parse(path):
    runs = defaultdict(list)  # (jdk, exp, key) -> [dict]
    for line in open(path):
        parts = line.split(None, 3)
        if len(parts) < 4:
            continue
        jdk, exp, rnd, rest = parts
        d = {"round": int(rnd)}
        if exp == "capture":
            m = re.search(r"K=(\d+): ([\d.]+) % of (\d+) elements stale; CCT overlap ([\d.]+) \(whole stacks ([\d.]+)\)"
                          r".*?ASGST_Enqueue in the handler: median (\d+) ns, p99 (\d+) ns", rest)
            if not m:
                continue
            d.update(k=int(m[1]), stale=float(m[2]), elements=int(m[3]), overlap=float(m[4]),
                     stack_overlap=float(m[5]), enq_p50=int(m[6]), enq_p99=int(m[7]))
            runs[(jdk, exp, d["k"])].append(d)
            continue
        for kv in re.findall(r"(\w+)=([-\w.]+)", rest):
            k, v = kv
            try:
                d[k] = float(v)
            except ValueError:
                d[k] = v
        key = d["mode"] if exp == "overhead" else (int(d["queue"]), int(d["compress"]))
        runs[(jdk, exp, key)].append(d)
    return runs


def main():
    runs = parse(sys.argv[1])
    jdks = sorted({k[0] for k in runs})
    print("### Overhead at 1 ms (CPU time, 2 busy threads)\n")
    print("| JDK | mode | throughput vs none, median (min..max) | process CPU s | signals | "
          "latency p50 / p99 (us) | drains | held per drain (us) | stale | lost: full / other / no Java frame / failed |")
    print("| --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | --- |")
    for jdk in jdks:
        base = {d["round"]: d["ops"] for d in runs.get((jdk, "overhead", "none"), [])}
        for mode in ("none", "signal", "queue"):
            ds = runs.get((jdk, "overhead", mode), [])
            if not ds:
                continue
            ratios = [d["ops"] / base[d["round"]] for d in ds if base.get(d["round"])]
            sig = med([d["signals"] for d in ds])
            if mode == "queue":
                lat = "%.0f / %.0f" % (med([d["latency_p50_us"] for d in ds]), med([d["latency_p99_us"] for d in ds]))
                extra = "%.0f | %.1f | %.3f %% | %.0f / %.0f / %.0f / %.0f" % (
                    med([d["drains"] for d in ds]), med([d["held_per_drain_us"] for d in ds]),
                    100 * sum(d["stale"] for d in ds) / max(1, sum(d["handled"] for d in ds)),
                    sum(d["full"] for d in ds), sum(d["other"] for d in ds), sum(d["no_java"] for d in ds),
                    sum(d["elem_errors"] for d in ds))
            elif mode == "signal":
                lat = "0 (in the handler)"
                extra = "- | - | - | failed walks %.0f" % sum(d["walk_failed"] for d in ds)
            else:
                lat, extra = "-", "- | - | - | -"
            print("| %s | %s | %s | %.2f | %.0f | %s | %s |" % (jdk, mode, spread(ratios, "%.3f"),
                  med([d["cpu_s"] for d in ds]), sig, lat, extra))
    idle = int(os.environ.get("WALL_IDLE", "50"))
    print("\n### Wall clock, 2 busy + %d mostly idle threads, every thread every 1 ms\n" % idle)
    print("| JDK | queue | compression | signals | enqueued | compressed | full (rate) | "
          "lost: other / no Java frame / failed | stale | "
          "latency p50 / p99 (us) | drains | held per drain (us) | process CPU s |")
    print("| --- | ---: | --- | ---: | ---: | ---: | --- | --- | ---: | --- | ---: | ---: | ---: |")
    for jdk in jdks:
        for qsize, c in sorted({key[2] for key in runs if key[0] == jdk and key[1] == "wall"}, reverse=True):
            ds = runs.get((jdk, "wall", (qsize, c)), [])
            if not ds:
                continue
            rates = [d["full"] / d["signals"] for d in ds if d["signals"]]
            print("| %s | %d | %s | %.0f | %.0f | %.0f | %.0f (%s %%) | %.0f / %.0f / %.0f | %.3f %% | %.0f / %.0f | "
                  "%.0f | %.1f | %.2f |" % (
                      jdk, qsize, "on" if c else "off", med([d["signals"] for d in ds]), med([d["enqueued"] for d in ds]),
                      med([d["compressed"] for d in ds]), med([d["full"] for d in ds]),
                      spread([100 * r for r in rates], "%.2f"), med([d["other"] for d in ds]),
                      med([d["no_java"] for d in ds]), med([d["elem_errors"] for d in ds]),
                      100 * sum(d["stale"] for d in ds) / max(1, sum(d["handled"] for d in ds)),
                      med([d["latency_p50_us"] for d in ds]), med([d["latency_p99_us"] for d in ds]),
                      med([d["drains"] for d in ds]), med([d["held_per_drain_us"] for d in ds]),
                      med([d["cpu_s"] for d in ds])))
    print("\n### Frames captured below the first Java frame (K), queue test fixture, 20,000 signals a run\n")
    print("| JDK | K | stale elements %, median (min..max) | CCT overlap | whole-stack overlap | "
          "ASGST_Enqueue p50 / p99 (ns) |")
    print("| --- | ---: | --- | --- | --- | --- |")
    for jdk in jdks:
        for k in sorted({key[2] for key in runs if key[0] == jdk and key[1] == "capture"}):
            ds = runs[(jdk, "capture", k)]
            print("| %s | %d | %s | %s | %.4f | %.0f / %.0f |" % (
                jdk, k, spread([d["stale"] for d in ds], "%.2f"), spread([d["overlap"] for d in ds], "%.4f"),
                med([d["stack_overlap"] for d in ds]), med([d["enq_p50"] for d in ds]),
                med([d["enq_p99"] for d in ds])))


main()
