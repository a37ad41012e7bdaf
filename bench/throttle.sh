#!/bin/bash
# The handler budget's throttled share at one interval (issue 14, item 3) on
# javac, Xalan-J and H2, JDK 17 and (when installed) 25: the summary's
# signals and throttled signals per run, and on which threads the
# [throttled] samples fell (bench/throttle/throttle.py).
#
# usage: bench/throttle.sh [ROUNDS]         (default 3)
# env:   BUILD (default build/), OUT (default $BUILD/bench-throttle),
#        INTERVAL (default 1ms), WORKLOADS ("javac,xslt,sql"),
#        JDKS ("jdk17 jdk25"), JDK17, JDK25, OPTS (more agent options)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$build/bench-throttle}
name=throttle.sh
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_check_build "$build"
agent="$build/agent/libprofile2-agent.so"
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); profile2 $(git -C "$root" rev-parse --short HEAD)"
bench_each_jdk python3 "$root/bench/throttle/throttle.py" --agent "$agent" --out "$out" \
  --rounds "${1:-3}" --interval "${INTERVAL:-1ms}" --workloads "${WORKLOADS:-javac,xslt,sql}" --opts "${OPTS:-}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
