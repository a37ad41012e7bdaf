#!/bin/bash
# The safepoint queues measured (issue 4, item 8; docs/DESIGN.md "The
# safepoint-queue emulation"), on JDK 17 and (when installed) JDK 25:
#
#  overhead  2 busy threads, CPU-time sampling at 1 ms: throughput of the
#            workload unprofiled-but-signalled (mode=none), walking in the
#            handler (signal) and with the queues (queue), interleaved in
#            each round; ratio = calls completed / calls completed with none
#            in the same round; medians over the rounds. The queue runs also
#            give the signal-to-handler latency, the cost per drain and the
#            losses by reason.
#  wall      2 busy + 50 (WALL_IDLE) mostly idle threads, wall-clock sampling at 1 ms
#            (every thread every ms), queues of 64 and of 8, with and
#            without compression: queue-full rate, latency, drains.
#  capture   the queue test's recursive fixture (tests/jvm/queue) with
#            K = 1, 4, 8, 16, 32 frames captured below the first Java frame:
#            stale elements, CCT overlap with the signal-time walks, and the
#            time ASGST_Enqueue takes in the handler.
#
# usage: bench/queue_cost.sh [ROUNDS]      (default 5)
# env:   BUILD  meson build directory (default: build/), not a sanitizer
#               build; `ninja -C $BUILD` is run first
#        OUT    scratch directory (default: $BUILD/bench-queue); raw lines
#               in $OUT/raw.txt
#        SECONDS_PER_RUN (5) measured seconds of each overhead/wall run
#        EXPERIMENTS ("overhead wall capture") which ones to run
#        WALL_QUEUES ("64 8") queue sizes of the wall experiment
#        WALL_IDLE (50) mostly idle threads of the wall experiment
#        JDK17, JDK25  JDK homes
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
rounds=${1:-5}
out=${OUT:-$build/bench-queue}
secs=${SECONDS_PER_RUN:-5}
experiments=" ${EXPERIMENTS:-overhead wall capture} "
wall_queues=${WALL_QUEUES:-64 8}
wall_idle=${WALL_IDLE:-50}
jdk17=${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}
jdk25=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}

name=queue_cost.sh
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_check_build "$build"

# The agent is a customer of the library, built through meson's
# uninstalled pkg-config file like any profiler would be.
mkdir -p "$out"
export PKG_CONFIG_PATH="$build/meson-uninstalled"
# shellcheck disable=SC2046
cc -O2 -g -std=gnu11 -Wall -Wextra -Werror -shared -fPIC -o "$out/libqueue_bench_agent.so" \
  "$root/bench/queue/queue_bench_agent.c" $(pkg-config --cflags --libs profile2) -lpthread ||
  fail "cannot build the bench agent"
"$jdk17/bin/javac" -d "$out" "$root/bench/queue/QueueBench.java"
export LD_LIBRARY_PATH="$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
queue_test="$build/tests/jvm/queue"
[ -f "$queue_test/libqueue_agent.so" ] || fail "no $queue_test/libqueue_agent.so (tests not built?)"

jdks=("jdk17=$jdk17")
[ -x "$jdk25/bin/java" ] && jdks+=("jdk25=$jdk25")
raw="$out/raw.txt"
: >"$raw"

# One run of the workload: prints "JDK EXPERIMENT ROUND ops=N bench: ..." to raw.
bench_run() {
  local jdk=$1 home=$2 exp=$3 round=$4 opts=$5 busy=$6 idle=$7
  local o
  o=$("$home/bin/java" -agentpath:"$out/libqueue_bench_agent.so=$opts" -cp "$out" QueueBench "$busy" "$idle" "$secs" 2>&1) ||
    fail "run failed: $jdk $opts: $o"
  local ops line
  ops=$(sed -n 's/^ops //p' <<<"$o")
  line=$(grep '^bench:' <<<"$o")
  echo "$jdk $exp $round ops=$ops $line" >>"$raw"
}

for spec in "${jdks[@]}"; do
  jdk=${spec%%=*} home=${spec#*=}
  for r in $(seq 1 "$rounds"); do
    echo "queue_cost.sh: $jdk round $r of $rounds" >&2
    if [[ $experiments == *" overhead "* ]]; then
      for m in none signal queue; do
        bench_run "$jdk" "$home" overhead "$r" "mode=$m,clock=cpu,interval=1000" 2 0
      done
    fi
    if [[ $experiments == *" wall "* ]]; then
      for qsize in $wall_queues; do
        for c in 1 0; do
          bench_run "$jdk" "$home" wall "$r" "mode=queue,clock=wall,interval=1000,queue=$qsize,compress=$c" 2 "$wall_idle"
        done
      done
    fi
    [[ $experiments == *" capture "* ]] || continue
    for k in 1 4 8 16 32; do
      line=$("$home/bin/java" -XX:CompileCommand=quiet -XX:CompileCommand=exclude,QueueFixture::interp \
        -agentpath:"$queue_test/libqueue_agent.so=k=$k,samples=20000" -cp "$queue_test" QueueFixture 2>/dev/null |
        grep 'K=' || true)
      echo "$jdk capture $r $line" >>"$raw"
    done
  done
done

{
  echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "profile2: $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo '+changes'), build $build"
} >&2
WALL_IDLE=$wall_idle python3 "$root/bench/queue/summarize.py" "$raw"
