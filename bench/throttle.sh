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
jdk17=${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}
jdk25=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
name=throttle.sh
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_check_build "$build"
agent="$build/agent/libprofile2-agent.so"
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); profile2 $(git -C "$root" rev-parse --short HEAD)"
for jdk in ${JDKS:-jdk17 jdk25}; do
  home=$jdk17
  [ "$jdk" = jdk25 ] && home=$jdk25
  [ -x "$home/bin/java" ] || { echo "$name: no $home/bin/java, $jdk skipped" >&2; continue; }
  python3 "$root/bench/throttle/throttle.py" --java-home "$home" --jdk "$jdk" --agent "$agent" --out "$out" \
    --rounds "${1:-3}" --interval "${INTERVAL:-1ms}" --workloads "${WORKLOADS:-javac,xslt,sql}" --opts "${OPTS:-}"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
