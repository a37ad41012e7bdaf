#!/bin/bash
# Scaling (issue 6, item 5): profile2's overhead as the number of threads
# grows (1, 8, 64, 512 threads at 10 frames; event cpu and wall) and as the
# stack deepens (10, 100, 1,000 frames on one thread; walk signal and
# safepoint), all at interval=1ms, on bench/scaling/Scaling.java: a fixed
# amount of work split over the threads, done at the bottom of the
# recursion. Same design and driver as bench/overhead.sh (shuffled rounds,
# an unprofiled run before every third configuration, ratios within the
# round, medians over the rounds).
#
# usage: bench/scaling.sh [ROUNDS]         (default 5)
# env:   BUILD, CPUS, JDKS, JDK17, JDK25 as for bench/overhead.sh
#        OUT    scratch directory (default: $BUILD/bench-scaling)
#        THREADS ("1 8 64 512"), DEPTHS ("10 100 1000")
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
rounds=${1:-5}
out=${OUT:-$build/bench-scaling}
jdk17=${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}
jdk25=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}

name=scaling.sh
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_check_build "$build"
agent="$build/agent/libprofile2-agent.so"
[ -f "$agent" ] || fail "no $agent"

join() { local IFS=,; echo "$*"; }
by_threads=() by_depth=()
for t in ${THREADS:-1 8 64 512}; do by_threads+=("scale-t$t-d10"); done
for d in ${DEPTHS:-10 100 1000}; do by_depth+=("scale-t1-d$d"); done

mkdir -p "$out"
: >"$out/raw.jsonl"
for jdk in ${JDKS:-jdk17}; do
  home=$jdk17
  [ "$jdk" = jdk25 ] && home=$jdk25
  [ -x "$home/bin/java" ] || { echo "$name: no $home/bin/java, $jdk skipped" >&2; continue; }
  run() {
    python3 "$root/bench/overhead/overhead.py" --java-home "$home" --jdk "$jdk" --agent "$agent" \
      --out "$out" --rounds "$rounds" --cpus "${CPUS:-}" "$@" || fail "a run failed (see above)"
  }
  run --workloads "$(join "${by_threads[@]}")" --only '^p2-(cpu|wall)-signal-1ms$'
  run --workloads "$(join "${by_depth[@]}")" --only '^p2-cpu-(signal|safepoint)-1ms$'
done
{
  echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)${CPUS:+, runs pinned to CPU(s) $CPUS}"
  echo "profile2: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown), build $build ($buildtype)"
} >&2
python3 "$root/bench/overhead/summarize.py" "$out"
