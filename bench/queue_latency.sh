#!/bin/bash
# walk=safepoint on javac, Xalan-J and H2 (issue 15, items 1 and 2): per run
# the queue latency (signal to element handler, median and 99th
# percentile), the stale elements, and the busiest thread's stale and
# incomplete shares; medians over the rounds (bench/queue_latency/
# queue_latency.py). The cost side is bench/overhead.sh's, e.g.
#   ONLY='p2-cpu-(signal|safepoint)-1?0?ms$' bash bench/overhead.sh 5
#
# usage: bench/queue_latency.sh [ROUNDS]       (default 3)
# env:   BUILD (default build/), OUT (default $BUILD/bench-queue-latency),
#        INTERVALS (default 1ms,10ms), WORKLOADS ("javac,xslt,sql"),
#        JDKS ("jdk17 jdk25"), JDK17, JDK25, OPTS (more agent options)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$build/bench-queue-latency}
name=queue_latency.sh
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_check_build "$build"
agent="$build/agent/libprofile2-agent.so"
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); profile2 $(git -C "$root" rev-parse --short HEAD), build $buildtype"
bench_each_jdk python3 "$root/bench/queue_latency/queue_latency.py" --agent "$agent" \
  --out "$out" --rounds "${1:-3}" --intervals "${INTERVALS:-1ms,10ms}" --workloads "${WORKLOADS:-javac,xslt,sql}" \
  --opts "${OPTS:-}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
