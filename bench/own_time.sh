#!/bin/bash
# profile2's own time by walk (issue 15, item 3): the summary's `own time`
# line (handlers, queue drainer, aggregator; share of the process's CPU
# time) with walk=signal and walk=safepoint in the same shuffled rounds, on
# javac, Xalan-J and H2, JDK 17 and (when installed) 25
# (bench/own_time/own_time.py). Unlike the process's CPU ratio
# (bench/overhead.sh, +-10-20 % from run to run on this VM), it is what
# profile2's code itself took.
#
# usage: bench/own_time.sh [ROUNDS]         (default 5)
# env:   BUILD (default build/), OUT (default $BUILD/bench-own-time),
#        INTERVAL (default 1ms), WORKLOADS ("javac,xslt,sql"),
#        JDKS ("jdk17 jdk25"), JDK17, JDK25, OPTS (more agent options)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$build/bench-own-time}
name=own_time.sh
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_check_build "$build"
agent="$build/agent/libprofile2-agent.so"
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); profile2 $(git -C "$root" rev-parse --short HEAD), $buildtype"
bench_each_jdk python3 "$root/bench/own_time/own_time.py" --agent "$agent" --out "$out" \
  --rounds "${1:-5}" --interval "${INTERVAL:-1ms}" --workloads "${WORKLOADS:-javac,xslt,sql}" --opts "${OPTS:-}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
