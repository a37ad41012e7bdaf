#!/bin/bash
# The row cache and its prefetching (unwind/row_cache.h) against the
# compact tables alone: bench/walk_cost.sh's native study, run in
# interleaved rounds without (NATIVE_ROW_CACHE=off) and with them. Prints
# per JDK and thread kind the medians over the rounds of: the cost per step
# (a walk's time divided by its steps), each later step timed alone (the
# walk's second step on), the walk's first step, and the whole walk, cold
# (first thing in the handler).
#
# usage: bench/native_row_cache.sh [ROUNDS]   (default 3)
# env:   NATIVE_SAMPLES (4000) sampled stacks per JVM run; BUILD, JDK17,
#        JDK25 as for bench/walk_cost.sh; OUT (default /tmp/native-row-cache)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
out=${OUT:-/tmp/native-row-cache}
rm -rf "$out"
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  for mode in off on; do
    NATIVE_ROW_CACHE=$mode NATIVE_ONLY=1 NATIVE_RUNS=1 NATIVE_SAMPLES=${NATIVE_SAMPLES:-4000} \
      OUT="$out/$mode-$round" bash "$root/bench/walk_cost.sh" >"$out/$mode-$round.log" 2>&1 ||
      { echo "native_row_cache.sh: round $round ($mode) failed, see $out/$mode-$round.log" >&2; exit 1; }
  done
done
python3 - "$out" "$rounds" <<'EOF'
import collections, re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
fields = ["step_tables_ns", "later_step_cold_ns", "first_step_cold_ns", "walk_tables_ns"]
rows = collections.defaultdict(lambda: collections.defaultdict(list))
unequal = collections.Counter()
for mode in ("off", "on"):
    for r in range(1, rounds + 1):
        for line in open(f"{out}/{mode}-{r}/native_raw.txt"):
            kv = dict(re.findall(r"(\w+)=(\S+)", line))
            if " KIND " in line:
                for f in fields:
                    rows[(kv["jdk"], kv["kind"], mode)][f].append(float(kv[f]))
                unequal[mode] += int(kv["native"]) - int(kv["match"])
label = {"c2": "C2 compiler", "c1": "C1 compiler", "gc": "GC (G1)", "vm": "VM (VM Thread, service)",
         "jni": "C code under JNI (no frame pointers)"}
print(f"Medians of {rounds} interleaved rounds; off = the compact tables alone, on = with the row cache and"
      " its prefetching.")
print()
print("| JDK | thread | ns per step (walk / steps): off | on | one later step, ns: off | on"
      " | first step, ns: off | on | whole walk, us: off | on |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for jdk, kind in sorted({(j, k) for (j, k, m) in rows}, key=lambda x: (x[0], list(label).index(x[1]))):
    a, b = rows[(jdk, kind, "off")], rows[(jdk, kind, "on")]
    m = lambda d, f, s=1: statistics.median(d[f]) / s if d[f] else float("nan")
    print(f"| {jdk} | {label[kind]} | {m(a, 'step_tables_ns'):,.0f} | {m(b, 'step_tables_ns'):,.0f}"
          f" | {m(a, 'later_step_cold_ns'):,.0f} | {m(b, 'later_step_cold_ns'):,.0f}"
          f" | {m(a, 'first_step_cold_ns'):,.0f} | {m(b, 'first_step_cold_ns'):,.0f}"
          f" | {m(a, 'walk_tables_ns', 1000):,.2f} | {m(b, 'walk_tables_ns', 1000):,.2f} |")
print()
print(f"Native frames unequal to the reference unwind: off {unequal['off']}, on {unequal['on']}.")
EOF
