#!/bin/bash
# The cost of one full ASGST_RunWithIterator walk at 10, 100 and 1,000 Java
# frames, on JDK 17 and (when installed) JDK 25, with warm compiled frames
# (default tiered JIT) and with interpreted frames (-Xint); from getcontext()
# in a JNI native method ("sync") and from a SIGPROF handler on a thread busy
# at that depth ("signal"). bench/walk_cost/walk_cost_agent.c says exactly
# what is timed. Prints the machine, the JDKs and a markdown table of
# medians (ns per walk, ns per frame) with a linear fit per series.
#
# usage: bench/walk_cost.sh [RUNS]        (default 5 JVM runs per JDK and mode)
# env:   BUILD  meson build directory (default: build/), must not be a
#               sanitizer build; `ninja -C $BUILD` is run first
#        OUT    scratch directory (default: $BUILD/bench-walk-cost); raw
#               results in $OUT/raw.txt
#        JDK17, JDK25  JDK homes (defaults: the meson options' defaults)
#        BATCHES (5) sync batches per depth and run; SIGNALS (2000) signals
#        per depth and run; DEPTHS ("10 100 1000")
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
runs=${1:-5}
out=${OUT:-$build/bench-walk-cost}
jdk17=${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}
jdk25=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
batches=${BATCHES:-5}
signals=${SIGNALS:-2000}
depths=${DEPTHS:-10 100 1000}

name=walk_cost.sh
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_check_build "$build"

# The agent is a customer of the library: built against the build tree
# through meson's uninstalled pkg-config file, like any profiler would be.
mkdir -p "$out"
cflags_libs=$(PKG_CONFIG_PATH="$build/meson-uninstalled" pkg-config --cflags --libs profile2)
cc -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -shared -fPIC -o "$out/libwalk_cost_agent.so" \
  "$root/bench/walk_cost/walk_cost_agent.c" $cflags_libs -Wl,-rpath,"$build/lib" || fail "cannot build the agent"
"$jdk17/bin/javac" -d "$out" "$root/bench/walk_cost/WalkCost.java" || fail "cannot compile WalkCost.java"

jdks=("jdk17:$jdk17")
[ -x "$jdk25/bin/java" ] && jdks+=("jdk25:$jdk25")

raw="$out/raw.txt"
: >"$raw"
for entry in "${jdks[@]}"; do
  name=${entry%%:*} home=${entry#*:}
  for mode in compiled interpreted; do
    flags=()
    [ "$mode" = interpreted ] && flags=(-Xint)
    for run in $(seq 1 "$runs"); do
      "$home/bin/java" "${flags[@]}" -agentpath:"$out/libwalk_cost_agent.so" -cp "$out" \
        WalkCost "$batches" "$signals" $depths | sed "s/^/jdk=$name mode=$mode run=$run /" >>"$raw" ||
        fail "$name $mode run $run failed"
    done
  done
done

echo "## walk cost: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "- profile2 $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- lib || echo ' (lib/ modified)'), build $build: buildtype=$buildtype, sanitize=$sanitize"
echo "- machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), kernel $(uname -r), load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
for entry in "${jdks[@]}"; do
  name=${entry%%:*} home=${entry#*:}
  echo "- $name: $("$home/bin/java" -version 2>&1 | sed -n 2p)"
done
echo "- command: bench/walk_cost.sh $runs (BATCHES=$batches SIGNALS=$signals DEPTHS=\"$depths\")"
echo
python3 - "$raw" <<'EOF'
import collections, re, statistics, sys

rows = collections.defaultdict(list)   # (jdk, mode, path, depth) -> [ns per walk]
shapes, errors = collections.defaultdict(collections.Counter), collections.Counter()
for line in open(sys.argv[1]):
    if " RESULT " not in line:
        continue
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    key = (kv["jdk"], kv["mode"], kv["path"], int(kv["depth"]))
    errors[key] += int(kv["errors"])
    if int(kv["n"]) == 0:
        continue
    rows[key].append(float(kv["ns_walk"]))
    comp = tuple(kv[k] for k in ("frames", "interp", "compiled", "inlined", "native"))
    shapes[key][comp] += 1

print("Median over all runs (sync: batches x runs values, each the mean of one batch;"
      " signal: one value per run, each the median of its signals).")
print()
print("| JDK | frames | path | depth | frames walked (interp/compiled/inlined/native) | ns per walk | ns per frame | fastest, slowest value | failed walks |")
print("| --- | --- | --- | ---: | --- | ---: | ---: | --- | ---: |")
fits = []
for key in sorted(rows, key=lambda k: (k[0], k[1], k[2], k[3])):
    v = rows[key]
    # The stack's make-up, from the walks themselves; several if it varied
    # between runs (e.g. a deoptimization), the most frequent first.
    comps = shapes[key].most_common()
    frames = int(comps[0][0][0])
    med = statistics.median(v)
    comp = " or ".join(f"{c[0]} ({c[1]}/{c[2]}/{c[3]}/{c[4]})" for c, _ in comps)
    print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {comp} | {med:,.0f} | {med / frames:,.1f} |"
          f" {min(v):,.0f}, {max(v):,.0f} (n={len(v)}) | {errors[key]} |")
print()
print("Linear fit per series through the smallest and largest depth, checked at the middle one,"
      " on the medians and on the fastest values:")
print()
for label, pick in (("median", statistics.median), ("fastest", min)):
    series = collections.defaultdict(dict)
    for key in rows:
        series[key[:3]][int(shapes[key].most_common(1)[0][0][0])] = pick(rows[key])
    for s in sorted(series):
        pts = sorted(series[s].items())
        if len(pts) < 3:
            continue
        (f0, c0), (f1, c1) = pts[0], pts[-1]
        slope = (c1 - c0) / (f1 - f0)
        base = c0 - slope * f0
        checks = ", ".join(f"{f} frames: predicted {base + slope * f:,.0f}, measured {c:,.0f}"
                           f" ({100 * (c - base - slope * f) / c:+.0f}%)" for f, c in pts[1:-1])
        print(f"- {label} {' '.join(s)}: cost ~ {base:,.0f} ns + {slope:,.1f} ns x frames; {checks}")
EOF
echo
echo "raw results: $raw"
