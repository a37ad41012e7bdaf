#!/bin/bash
# The cost of one full ASGST_RunWithIterator walk at 10, 100 and 1,000 Java
# frames, on JDK 17 and (when installed) JDK 25, with warm compiled frames
# (default tiered JIT) and with interpreted frames (-Xint); from getcontext()
# in a JNI native method ("sync") and from a SIGPROF handler on a thread busy
# at that depth ("signal"). bench/walk_cost/walk_cost_agent.c says exactly
# what is timed. Prints the machine, the JDKs and a markdown table of
# medians (ns per walk, ns per frame) with a linear fit per series.
#
# Then native frames (bench/walk_cost/native_unwind_agent.c says exactly
# what is timed and compared): on a JVM whose JIT compilers, GC and a JNI
# method in C are kept busy, SIGPROF handlers unwind the native stacks of
# those threads with the compact unwind tables (unwind/cfi.h) and with
# libunwind alone (the unwinder before the tables), and compare both with
# libunwind's local unwinder on the same ucontext. Prints the cost per
# native step and per whole native walk (median of the runs' medians) and
# the share of native frames equal to the reference, differences by kind.
#
# usage: bench/walk_cost.sh [RUNS]        (default 5 JVM runs per JDK and mode)
# env:   BUILD  meson build directory (default: build/), must not be a
#               sanitizer build; `ninja -C $BUILD` is run first
#        OUT    scratch directory (default: $BUILD/bench-walk-cost); raw
#               results in $OUT/raw.txt
#        JDK17, JDK25  JDK homes (defaults: the meson options' defaults)
#        BATCHES (5) sync batches per depth and run; SIGNALS (2000) signals
#        per depth and run; DEPTHS ("10 100 1000")
#        NATIVE_RUNS (3) JVM runs per JDK of the native study, NATIVE_SAMPLES
#        (4000) sampled stacks per run; NATIVE_ONLY=1 runs only the native
#        study, JAVA_ONLY=1 only the Java walks; NATIVE_ROW_CACHE=off walks
#        without the row cache and its prefetching (unwind/row_cache.h: the
#        unwinder before them; bench/native_row_cache.sh compares),
#        NATIVE_PREFETCH=off without the prefetching only;
#        NATIVE_PRETOUCH=stack|groups|cache|cachetlb reads, before each cold
#        walk, what the name says (the experiment in bench/RESULTS.md, "where
#        a cold step's time goes")
#        FLOOR_WORDS (5) words per interpreted frame the signal-floor check
#        reads (walk_cost_agent.c: 4 = those issue 14 item 2 names)
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
native_runs=${NATIVE_RUNS:-3}
native_samples=${NATIVE_SAMPLES:-4000}
native_only=${NATIVE_ONLY:-0}
java_only=${JAVA_ONLY:-0}

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
[ "$native_only" = 1 ] || for entry in "${jdks[@]}"; do
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
echo "- command: bench/walk_cost.sh $runs (BATCHES=$batches SIGNALS=$signals DEPTHS=\"$depths\" NATIVE_RUNS=$native_runs NATIVE_SAMPLES=$native_samples NATIVE_ONLY=$native_only JAVA_ONLY=$java_only FLOOR_WORDS=${FLOOR_WORDS:-5})"
echo
[ "$native_only" = 1 ] || python3 - "$raw" <<'EOF'
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

# Incremental walks (issue 14 item 2): the cached walk of the deepest stack
# against the plain walk of the shallowest, and what the caches did.
cache = collections.defaultdict(collections.Counter)  # (jdk, mode, depth) -> sums
skip = collections.defaultdict(collections.Counter)
floor = collections.defaultdict(list)   # (jdk, mode, depth) -> [median ns of a run]
floor_shape = {}
for line in open(sys.argv[1]):
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    if " CACHE " in line:
        for k in ("walks", "reused_walks", "reused_frames", "verified_reads", "rejected", "mismatches"):
            cache[(kv["jdk"], kv["mode"], int(kv["depth"]))][k] += int(kv[k])
    elif " SKIP " in line:
        for k in ("walks", "frames", "mismatches"):
            skip[(kv["jdk"], kv["mode"], int(kv["depth"]))][k] += int(kv[k])
    elif " FLOOR " in line and int(kv["n"]) > 0 and int(kv["frames"]) > 0:
        floor[(kv["jdk"], kv["mode"], int(kv["depth"]))].append(float(kv["ns"]))
        floor_shape[(kv["jdk"], kv["mode"], int(kv["depth"]))] = (int(kv["frames"]), int(kv["words_per_frame"]))
if cache:
    print()
    print("Incremental walks (signal-cached): the deepest stack walked with its walk cache, against a plain walk "
          "of the shallowest (median ns per walk), and the caches' counts over all runs:")
    print()
    print("signal-skip: the same, with a consumer that takes the reused frames from what it kept of its"
          " previous walk (profile2_iterator_skip_reused) instead of one by one.")
    print()
    print("| JDK | frames | cached walk, deepest | plain walk, shallowest | ratio | skipping consumer, deepest | ratio |"
          " walks reusing / walks | frames reused per reusing walk | words checked per reusing walk |"
          " walks skipping | different from the plain walk: cached, skipping |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |")
    for jdk, mode in sorted({(k[0], k[1]) for k in cache}):
        depths = sorted(d for j, m, d in cache if (j, m) == (jdk, mode))
        lo, hi = depths[0], depths[-1]
        c_hi = rows.get((jdk, mode, "signal-cached", hi))
        p_lo = rows.get((jdk, mode, "signal", lo))
        if not c_hi or not p_lo:
            continue
        ch, pl = statistics.median(c_hi), statistics.median(p_lo)
        s_hi = rows.get((jdk, mode, "signal-skip", hi))
        sh = statistics.median(s_hi) if s_hi else float("nan")
        t, k = cache[(jdk, mode, hi)], skip[(jdk, mode, hi)]
        rw = max(t["reused_walks"], 1)
        print(f"| {jdk} | {mode} | {ch:,.0f} ({hi}) | {pl:,.0f} ({lo}) | {ch / pl:.2f} | {sh:,.0f} | {sh / pl:.2f}"
              f" | {t['reused_walks']:,} / {t['walks']:,}"
              f" | {t['reused_frames'] / rw:,.0f} | {t['verified_reads'] / rw:,.0f} | {k['walks']:,}"
              f" | {t['mismatches']}, {k['mismatches']} |")
if floor:
    print()
    print("signal-floor: the least an exact check of the deepest stack's unchanged frames can cost (each noted"
          " word of each interpreted frame loaded and XORed with its value, nothing else; see walk_cost_agent.c),"
          " against the plain walk of the shallowest stack and the target's 3x:")
    print()
    print("| JDK | frames | interpreted frames noted | words per frame | check alone, deepest, ns | plain walk,"
          " shallowest, ns | ratio | room left for the rest of the walk (3x minus the check), ns |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for (jdk, mode, d) in sorted(floor):
        depths = sorted(dd for j, m, dd in floor if (j, m) == (jdk, mode))
        if d != depths[-1]:
            continue
        p_lo = rows.get((jdk, mode, "signal", min(k[3] for k in rows if k[:3] == (jdk, mode, "signal"))))
        if not p_lo:
            continue
        fl, pl = statistics.median(floor[(jdk, mode, d)]), statistics.median(p_lo)
        frames, wpf = floor_shape[(jdk, mode, d)]
        print(f"| {jdk} | {mode} | {frames:,} | {wpf} | {fl:,.0f} | {pl:,.0f} | {fl / pl:.2f} | {3 * pl - fl:,.0f} |")
EOF

if [ "$java_only" != 1 ]; then
  # The study calls the unwinder directly: it links profile2's internal
  # static library, and libunwind's local unwinder as the reference.
  jdk_inc=$jdk17/include
  cc -O2 -g -fomit-frame-pointer -Wall -Wextra -Werror -shared -fPIC -I"$root" -I"$root/include" -I"$jdk_inc" \
    -I"$jdk_inc/linux" -o "$out/libnative_unwind_agent.so" "$root/bench/walk_cost/native_unwind_agent.c" \
    "$build/lib/libprofile2_internal.a" -l:libunwind-x86_64.so.8 -l:libunwind.so.8 -ldl -lpthread ||
    fail "cannot build the native study's agent"
  "$jdk17/bin/javac" -d "$out" "$root/bench/walk_cost/NativeUnwind.java" || fail "cannot compile NativeUnwind.java"
  native_raw="$out/native_raw.txt"
  : >"$native_raw"
  for entry in "${jdks[@]}"; do
    name=${entry%%:*} home=${entry#*:}
    for run in $(seq 1 "$native_runs"); do
      "$home/bin/java" -XX:+UseG1GC -agentpath:"$out/libnative_unwind_agent.so=$native_samples" -cp "$out" \
        NativeUnwind "$out/javac-out" "$root/bench/walk_cost/WalkCost.java" "$root/bench/walk_cost/NativeUnwind.java" |
        sed "s/^/jdk=$name run=$run /" >>"$native_raw" || fail "native study: $name run $run failed"
    done
  done
  # The tables themselves, row by row, against readelf's reading of the
  # same CFI (bench/walk_cost/cfi_check.py says what is compared).
  cc -O1 -g -Wall -Wextra -Werror -I"$root" -I"$root/include" -I"$jdk_inc" -I"$jdk_inc/linux" -o "$out/cfi_rows" \
    "$root/bench/walk_cost/cfi_rows.c" "$build/lib/libprofile2_internal.a" -ldl || fail "cannot build cfi_rows"
  cfi_checks=()
  "$out/cfi_rows" libc.so >"$out/rows-libc.txt" || fail "cfi_rows libc.so failed"
  cfi_checks+=("$(python3 "$root/bench/walk_cost/cfi_check.py" "$out/rows-libc.txt")") || true
  for entry in "${jdks[@]}"; do
    name=${entry%%:*} home=${entry#*:}
    "$out/cfi_rows" libjvm.so "$home/lib/server/libjvm.so" >"$out/rows-$name.txt" || fail "cfi_rows $name failed"
    cfi_checks+=("$(python3 "$root/bench/walk_cost/cfi_check.py" "$out/rows-$name.txt")") || true
  done
  echo
  python3 - "$native_raw" <<'EOF'
import collections, re, statistics, sys

kinds = ["c2", "c1", "gc", "vm", "jni"]
label = {"c2": "C2 compiler", "c1": "C1 compiler", "gc": "GC (G1)", "vm": "VM (VM Thread, service)",
         "jni": "C code under JNI"}
runs = collections.defaultdict(list)        # (jdk, kind) -> [KIND line dicts]
diffs = collections.Counter()
setup = collections.defaultdict(list)
for line in open(sys.argv[1]):
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    if " KIND " in line:
        runs[(kv["jdk"], kv["kind"])].append(kv)
    elif " SETUP " in line:
        setup[kv["jdk"]].append(float(kv["init_ms"]))
    elif " DIFF " in line:
        diffs[(kv["jdk"], kv["kind"], kv["diff"], kv["step"], re.sub(r"\+0x[0-9a-f]+$", "", kv["from"]))] += 1

def med(key, field):
    vals = [float(r[field]) for r in runs[key] if int(r["timed"]) > 0 and float(r[field]) > 0]
    return statistics.median(vals) if vals else float("nan")

jdks = sorted({k[0] for k in runs})
print("### Native frames: cost")
print()
print("Median of the runs' medians. A step finds one caller; a walk is every native frame of the"
      " stack, from the signal's context down to the thread's start (or to JIT code). \"running\": the thread"
      " was running when signalled (what a CPU profiler samples). tables = the compact unwind tables"
      " (libunwind only for the rows they cannot express); libunwind = every step by libunwind, as before"
      " the tables. Each walk is timed first thing in the handler, on the caches the interrupted code left"
      " (tables and libunwind alternate in first place; each figure is from the samples where it ran first);"
      " \"tables, warm\": the same walk again right after, its rows and stack lines in cache. \"one step, cold\":"
      " each native step of the cold tables walks timed alone (rdtsc before and after it, a back-to-back"
      " pair's ticks subtracted): the walk's first step, which also pays the handler's first touches of the"
      " unwinder's code and the module list, and the median of every later step.")
print()
print("| JDK | thread | stacks timed (running) | ns per step: tables | libunwind | tables, warm"
      " | one step, cold, ns: first | later | whole walk, us: tables"
      " | libunwind | running thread's walk, us: tables | libunwind |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for jdk in jdks:
    for k in kinds:
        key = (jdk, k)
        if key not in runs:
            continue
        timed = sum(int(r["timed"]) for r in runs[key])
        busy = sum(int(r["busy"]) for r in runs[key])
        print(f"| {jdk} | {label[k]} | {timed:,} ({busy:,}) | {med(key, 'step_tables_ns'):,.0f}"
              f" | {med(key, 'step_old_ns'):,.0f} | {med(key, 'step_tables_warm_ns'):,.0f}"
              f" | {med(key, 'first_step_cold_ns'):,.0f} | {med(key, 'later_step_cold_ns'):,.0f}"
              f" | {med(key, 'walk_tables_ns') / 1000:,.2f}"
              f" | {med(key, 'walk_old_ns') / 1000:,.1f} | {med(key, 'busy_walk_tables_ns') / 1000:,.2f}"
              f" | {med(key, 'busy_walk_old_ns') / 1000:,.1f} |")
print()
for jdk in sorted(setup):
    print(f"- {jdk}: p2_unwind_init (the module list and every loaded module's table) took"
          f" {statistics.median(setup[jdk]):,.0f} ms (median of {len(setup[jdk])} runs)")
print()
print("### Native frames: correctness")
print()
print("A native frame of the reference (libunwind's local unwinder from the same ucontext, every register"
      " known) is equal when the compact-table walk has the same pc and sp at the same depth. First"
      " differences by kind: each stack's first unequal frame; the frames below it are all counted unequal.")
print()
print("| JDK | thread | stacks | native frames | equal: tables | equal: libunwind alone (before) |"
      " steps by table / libunwind / frame pointer | first differences: pc / sp / ours ended / ours failed |")
print("| --- | --- | ---: | ---: | ---: | ---: | --- | --- |")
for jdk in jdks:
    tot = collections.Counter()
    for k in kinds + ["all"]:
        if k == "all":
            c = tot
        else:
            key = (jdk, k)
            if key not in runs:
                continue
            c = collections.Counter()
            for r in runs[key]:
                for f in ("stacks", "native", "match", "old_match", "steps_table", "steps_libunwind", "steps_fp"):
                    c[f] += int(r[f])
                for i, v in enumerate(r["diffs"].split(",")):
                    c[f"d{i}"] += int(v)
            tot.update(c)
        name = "**all**" if k == "all" else label[k]
        print(f"| {jdk} | {name} | {c['stacks']:,} | {c['native']:,} | {100 * c['match'] / max(c['native'], 1):.3f} %"
              f" ({c['native'] - c['match']:,} unequal) | {100 * c['old_match'] / max(c['native'], 1):.3f} %"
              f" | {c['steps_table']:,} / {c['steps_libunwind']:,} / {c['steps_fp']:,}"
              f" | {c['d0']} / {c['d1']} / {c['d2']} / {c['d3']} |")
if diffs:
    print()
    print("First differences, with the step that made them (t table row, u libunwind, f frame pointer)"
          " and the function it stepped from (most frequent first):")
    print()
    for (jdk, k, d, step, frm), n in diffs.most_common(15):
        print(f"- {jdk} {label[k]}: {n} x {d}, step {step}, from {frm}")
EOF
  echo
  echo "The tables against readelf -wF (every row of every FDE; compact = a row the handler applies,"
  echo "fallback = a row left to libunwind, outermost = return address undefined):"
  echo
  for c in "${cfi_checks[@]}"; do echo "- ${c#CFICHECK }"; done
fi
echo
echo "raw results: $raw${native_raw:+, $native_raw}"
