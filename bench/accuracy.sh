#!/bin/bash
# Accuracy with ground truth (issue 6, item 2): microbenchmarks whose hot spot
# is known by construction (bench/accuracy/Accuracy.java: the safepoint-bias
# cases of seeds/004 -- a counted loop in a non-inlined method, a hot loop
# just before a cheap non-inlined call, a hot loop at the top of 9 levels of
# cheap calls -- plus time in C code under a JNI method and an interpreted-only
# loop), each run for SECONDS_PER_RUN on one hot thread, on JDK 17 and (when
# installed) JDK 25, with default flags and with -XX:-UseCountedLoopSafepoints
# (C2's strip-mined counted loops poll for safepoints by default, so only the
# second setting takes the polls out of the hot loops), sampled by:
#
#   signal     the agent, event=cpu,interval=1ms,walk=signal
#   safepoint  the agent, event=cpu,interval=1ms,walk=safepoint
#   jfr        JDK Flight Recorder, jdk.ExecutionSample and
#              jdk.NativeMethodSample with period=1ms (the shortest JFR
#              accepts; its sampler thread wakes every period and samples up
#              to 5 threads in Java and 1 in native code)
#   jfr-cpu    JDK 25 only: jdk.CPUTimeSample (JEP 509) with throttle=1ms
#              (a CPU-time timer per thread, 1 ms of CPU time)
#   stacks     reference: Thread.getStackTrace() of the hot thread every 1 ms
#              from a Java thread (a handshake: safepoint-biased by design)
#
# Metric per run (bench/accuracy/score.py): of the hot thread's samples, the
# share whose top Java frame is the true hot method, and the share on the
# true hot line (the "// HOT: case" markers in Accuracy.java). Prints the
# machine, the JDKs and markdown tables of the medians over the rounds.
#
# usage: bench/accuracy.sh [ROUNDS]        (default 3)
# env:   BUILD  meson build directory (default: build/), not a sanitizer
#               build; `ninja -C $BUILD` is run first
#        OUT    scratch directory (default: $BUILD/bench-accuracy); one raw
#               line per run in $OUT/raw.txt, the profiles of the last round
#               in $OUT/runs/
#        SECONDS_PER_RUN (5) seconds of hot work per run (the JVM runs ~1 s longer)
#        CASES ("counted beforecall chain jni interp")
#        SAMPLERS ("signal safepoint jfr jfr-cpu stacks"; jfr-cpu only on JDK 25)
#        FLAGS ("default nocls"; nocls = -XX:-UseCountedLoopSafepoints)
#        JDK17, JDK25  JDK homes
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
rounds=${1:-3}
out=${OUT:-$build/bench-accuracy}
secs=${SECONDS_PER_RUN:-5}
cases=${CASES:-counted beforecall chain jni interp}
samplers=${SAMPLERS:-signal safepoint jfr jfr-cpu stacks}
flag_sets=${FLAGS:-default nocls}
jdk17=${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}
jdk25=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}

name=accuracy.sh
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_check_build "$build"
agent="$build/agent/libprofile2-agent.so"
[ -f "$agent" ] || fail "no $agent"

mkdir -p "$out/runs"
src="$root/bench/accuracy"
"$jdk17/bin/javac" -d "$out" "$src/Accuracy.java" || fail "cannot compile Accuracy.java"
cc -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -shared -fPIC -I"$jdk17/include" -I"$jdk17/include/linux" \
  -o "$out/libaccuracy.so" "$src/accuracy_jni.c" || fail "cannot build libaccuracy.so"

# JFR settings: only the samplers, nothing else recorded. JDK 17 has no
# `jfr configure`, so the .jfc files are written here.
jfc() { # NAME EVENT-XML
  printf '<?xml version="1.0" encoding="UTF-8"?>\n<configuration version="2.0" label="%s" description="bench/accuracy.sh" provider="profile2">\n%s\n</configuration>\n' \
    "$1" "$2" >"$out/$1.jfc"
}
jfc accuracy-exec '  <event name="jdk.ExecutionSample"><setting name="enabled">true</setting><setting name="period">1 ms</setting></event>
  <event name="jdk.NativeMethodSample"><setting name="enabled">true</setting><setting name="period">1 ms</setting></event>'
jfc accuracy-cpu '  <event name="jdk.CPUTimeSample"><setting name="enabled">true</setting><setting name="throttle">1ms</setting><setting name="stackTrace">true</setting></event>
  <event name="jdk.CPUTimeSamplesLost"><setting name="enabled">true</setting></event>'

jdks=("17=$jdk17")
[ -x "$jdk25/bin/java" ] && jdks+=("25=$jdk25")
raw="$out/raw.txt"
: >"$raw"
start=$(date +%s)

# One run: JVM with the sampler, then score.py appends the raw line.
run() {
  local jdk=$1 home=$2 case=$3 flags=$4 sampler=$5 round=$6
  local base="$out/runs/$jdk-$case-$flags-$sampler" fmt file
  local jvm=(-Djava.library.path="$out" -XX:CompileCommand=quiet "-XX:CompileCommand=dontinline,Accuracy::*")
  [ "$case" = interp ] && jvm+=("-XX:CompileCommand=exclude,Accuracy::interp")
  [ "$flags" = nocls ] && jvm+=(-XX:-UseCountedLoopSafepoints)
  rm -f "$base".*
  case $sampler in
    signal | safepoint)
      jvm+=(-agentpath:"$agent=event=cpu,interval=1ms,walk=$sampler,lines,tiers,threads,quiet,file=$base.collapsed,file=$base.txt")
      fmt=collapsed file=$base.collapsed ;;
    jfr) jvm+=("-XX:StartFlightRecording=filename=$base.jfr,settings=$out/accuracy-exec.jfc")
      fmt=jfr file=$base.json ;;
    jfr-cpu) jvm+=("-XX:StartFlightRecording=filename=$base.jfr,settings=$out/accuracy-cpu.jfc")
      fmt=jfr-cpu file=$base.json ;;
    stacks) jvm+=(-Daccuracy.stacks="$base.stacks")
      fmt=stacks file=$base.stacks ;;
    *) fail "unknown sampler $sampler" ;;
  esac
  "$home/bin/java" "${jvm[@]}" -cp "$out" Accuracy "$case" "$secs" >"$base.log" 2>&1 ||
    fail "run failed: jdk$jdk $case $flags $sampler (see $base.log)"
  case $sampler in
    jfr) "$home/bin/jfr" print --json --events jdk.ExecutionSample,jdk.NativeMethodSample --stack-depth 1 "$base.jfr" >"$file" ;;
    jfr-cpu) "$home/bin/jfr" print --json --events jdk.CPUTimeSample --stack-depth 1 "$base.jfr" >"$file" ;;
  esac
  python3 "$src/score.py" "$src/Accuracy.java" "$case" "$fmt" "$file" \
    "jdk=$jdk" "case=$case" "flags=$flags" "sampler=$sampler" "round=$round" >>"$raw" ||
    fail "cannot score jdk$jdk $case $flags $sampler"
}

for r in $(seq 1 "$rounds"); do
  for spec in "${jdks[@]}"; do
    jdk=${spec%%=*} home=${spec#*=}
    echo "accuracy.sh: round $r of $rounds, JDK $jdk ($(($(date +%s) - start)) s so far)" >&2
    for case in $cases; do
      for flags in $flag_sets; do
        for sampler in $samplers; do
          [ "$sampler" = jfr-cpu ] && [ "$jdk" = 17 ] && continue
          run "$jdk" "$home" "$case" "$flags" "$sampler" "$r"
        done
      done
    done
  done
done

echo "## accuracy: $(date -u '+%Y-%m-%d %H:%M UTC'), $(($(date +%s) - start)) s"
echo
echo "- profile2 $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- lib agent || echo ' (lib/ or agent/ modified)'), build $build: buildtype=$buildtype, sanitize=$sanitize"
echo "- machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), kernel $(uname -r), perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid), load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
for spec in "${jdks[@]}"; do
  echo "- JDK ${spec%%=*}: $("${spec#*=}/bin/java" -version 2>&1 | sed -n 2p)"
done
echo "- command: bench/accuracy.sh $rounds (SECONDS_PER_RUN=$secs CASES=\"$cases\" SAMPLERS=\"$samplers\" FLAGS=\"$flag_sets\")"
echo
python3 "$src/summarize.py" "$raw"
echo
echo "raw results: $raw"
