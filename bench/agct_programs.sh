#!/bin/bash
# HotSpot's AsyncGetCallTrace against the walker on javac, Xalan-J and H2:
# every sample walked both ways in the same signal handler
# (tests/jvm/agct/agct_agent.c with the option `all`; bench/agct/).
#
# usage: bench/agct_programs.sh [ROUNDS]       (default 1)
# env:   BUILD (default build/), OUT (default $BUILD/bench-agct),
#        WORKLOADS ("javac,xslt,sql"), JDKS ("jdk17 jdk25"), JDK17, JDK25,
#        FLAGS (more JVM options, e.g. -XX:TieredStopAtLevel=1)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$build/bench-agct}
name=agct_programs.sh
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_check_build "$build"
agent="$build/tests/jvm/agct/libagct_agent.so"
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); profile2 $(git -C "$root" rev-parse --short HEAD), build $buildtype"
bench_each_jdk python3 "$root/bench/agct/agct_programs.py" --agent "$agent" \
  --out "$out" --rounds "${1:-1}" --workloads "${WORKLOADS:-javac,xslt,sql}" --flags "${FLAGS:-}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
