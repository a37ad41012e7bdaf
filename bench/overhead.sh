#!/bin/bash
# Overhead on real Java programs (issue 6, item 1) and, from the same runs'
# profiles, agreement and stability of the calling-context trees (item 3):
# javac, Xalan-J and H2 (Debian packages; bench/overhead/overhead.py says
# what each does), unprofiled, under profile2 (event cpu and wall x walk
# signal and safepoint x interval 10 ms, 1 ms, 100 us) and under JFR
# (jdk.ExecutionSample at 10 ms and 1 ms, its shortest; on JDK 25 also
# jdk.CPUTimeSample at 10 ms, 1 ms and 100 us), on JDK 17 and (when
# installed) JDK 25; with AP= also under async-profiler, side by side with
# profile2 (issue 14, item 4): event cpu at 10 ms, 1 ms and 100 us and event
# wall at 1 ms, its default cstack (vm: Java, VM and native frames, as
# profile2's default cstack=on). Every round runs all configurations in a
# shuffled order with an unprofiled run before every third one; ratios are
# taken within the round; the tables give medians over the rounds
# (bench/overhead/summarize.py), with AP= also a table per workload of
# profile2, async-profiler and JFR at each of those settings (CPU-time
# ratios) and, for cpu mode, each profiler's sample fidelity (profile weight
# over the intervals in the process's CPU time).
#
# The long-running workload, sqlloop (~75 s a run, steady state: JDBC
# clients on an in-memory H2 database, bench/overhead/SqlLoop.java), is not
# in the default WORKLOADS: with every configuration it adds about an hour a
# round per JDK (ten hours for 5 rounds on two JDKs). Select it with
# WORKLOADS=javac,xslt,sql,sqlloop, or alone, with ONLY to keep it short.
#
# The side-by-side study (on an idle machine; hours):
#   AP=/tmp/ap/async-profiler-4.5/build/lib/libasyncProfiler.so \
#     CPUS=1 WORKLOADS=javac,xslt,sql,sqlloop bash bench/overhead.sh 5
# (async-profiler 4.5 built by build-async-profiler.sh of the shared anchors.)
#
# usage: bench/overhead.sh [ROUNDS]        (default 5)
# env:   BUILD  meson build directory (default: build/), not a sanitizer
#               build; `ninja -C $BUILD` is run first
#        OUT    scratch directory (default: $BUILD/bench-overhead): raw.jsonl
#               (one line per run), profiles/ (the collapsed stacks and text
#               summaries of every profile2 run)
#        CPUS   taskset CPU list for every run (default: none). Set it when
#               other work shares the machine, to keep that work off the
#               measured CPUs.
#        WORKLOADS ("javac,xslt,sql"; also sqlloop, sqlloop-SECONDS),
#        ONLY (regex on configuration names: p2-*, ap-*, jfr-*, ...)
#        P2_VARIANTS  more profile2 configurations, each a configuration's
#               name, "+" and agent options, ";"-separated, e.g.
#               "p2-cpu-safepoint-1ms+capture=127,queue=8" (an A/B of
#               options in the same rounds)
#        JDKS ("jdk17 jdk25"), JDK17, JDK25  JDK homes
#        AP     async-profiler's libasyncProfiler.so (default: none, its
#               configurations are left out)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
rounds=${1:-5}
out=${OUT:-$build/bench-overhead}
jdk17=${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}
jdk25=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}

name=overhead.sh
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_check_build "$build"
agent="$build/agent/libprofile2-agent.so"
[ -f "$agent" ] || fail "no $agent"
ap=${AP:-}
if [ -n "$ap" ]; then
  [ -f "$ap" ] || fail "no $ap (AP=: async-profiler's libasyncProfiler.so)"
  ap=$(cd "$(dirname "$ap")" && pwd)/$(basename "$ap")
  # Its version, from the agent itself (it prints it and lets the JVM go on).
  ap_version=$("$jdk17/bin/java" -agentpath:"$ap"=version -version 2>/dev/null | head -c 40 || true)
fi

mkdir -p "$out"
: >"$out/raw.jsonl"
rm -rf "$out/profiles"
for jdk in ${JDKS:-jdk17 jdk25}; do
  home=$jdk17
  [ "$jdk" = jdk25 ] && home=$jdk25
  [ -x "$home/bin/java" ] || { echo "$name: no $home/bin/java, $jdk skipped" >&2; continue; }
  python3 "$root/bench/overhead/overhead.py" --java-home "$home" --jdk "$jdk" --agent "$agent" \
    --out "$out" --rounds "$rounds" --workloads "${WORKLOADS:-javac,xslt,sql}" --only "${ONLY:-}" \
    --cpus "${CPUS:-}" --ap "$ap" || fail "a run failed (see above)"
done
{
  echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)${CPUS:+, runs pinned to CPU(s) $CPUS}"
  echo "profile2: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown), build $build ($buildtype)"
  [ -z "$ap" ] || echo "async-profiler: ${ap_version:-version unknown}, $ap"
} >&2
python3 "$root/bench/overhead/summarize.py" "$out"
