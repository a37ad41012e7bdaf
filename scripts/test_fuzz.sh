#!/usr/bin/env bash
# The libFuzzer harnesses of tests/fuzz (README.md there), each for a
# bounded time:
#
#   bash scripts/test_fuzz.sh [SECONDS]         short form (CI): SECONDS per
#                                               harness, default 20, over a
#                                               scratch copy of the checked-in
#                                               seed corpus, deleted after
#   bash scripts/test_fuzz.sh --long [SECONDS]  long form: default 600 s per
#                                               harness; the corpus grows in
#                                               build-fuzz/fuzz-corpus/ and
#                                               is kept for the next long run
#   ... [SECONDS] HARNESS...                    only these harnesses (options,
#                                               args, attach_reply, outputs,
#                                               walk_jdk17, walk_jdk25)
#
# Sets up build-fuzz/ (clang, -Dfuzz=true) if needed and builds it. The
# frame-iterator harness runs inside each JDK the build knows (17, and 25
# when present). Prints, per harness, libFuzzer's run count and coverage;
# exits 1 if any harness crashed, leaked, timed out or broke a check (the
# input that did it is kept under build-fuzz/fuzz-artifacts/, its path
# printed). With FUZZ_CPU=N every process runs on CPU N only (keep the
# fuzzers off CPUs a benchmark is measuring on); by default on any CPU.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

long=0
if [[ ${1:-} == --long ]]; then
  long=1
  shift
fi
seconds=${1:-$((long ? 600 : 20))}
if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 [--long] [SECONDS [HARNESS...]]" >&2
  exit 2
fi
shift $(($# > 0 ? 1 : 0))
only=" $* "
wanted() { [[ $only == "  " || $only == *" $1 "* ]]; }

build=build-fuzz
pin=()
if [[ -n ${FUZZ_CPU:-} ]]; then pin=(taskset -c "$FUZZ_CPU"); fi

if [[ ! -f $build/build.ninja ]]; then
  CC=clang CXX=clang++ "${pin[@]}" meson setup "$build" -Dfuzz=true
elif ! meson introspect "$build" --buildoptions | grep -q '"name": "fuzz", "value": true'; then
  meson configure "$build" -Dfuzz=true
fi
"${pin[@]}" ninja -C "$build"

opt() { # the value of a meson option of the build
  meson introspect "$build" --buildoptions |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == sys.argv[1]))' "$1"
}

artifacts=$root/$build/fuzz-artifacts
mkdir -p "$artifacts"
# this run's inputs and reports are named after its start; earlier ones stay
stamp=$(date +%Y%m%d-%H%M%S)
if ((long)); then
  corpora=$root/$build/fuzz-corpus
  mkdir -p "$corpora"
else
  corpora=$(mktemp -d)
  trap 'rm -rf "$corpora"' EXIT
fi

failed=()
summary=()

# run NAME CORPUS -- COMMAND...: one harness; libFuzzer's arguments are
# appended to COMMAND.
run() {
  local name=$1 corpus=$2
  shift 3
  local dir=$corpora/$name log=$artifacts/$stamp-$name.log
  mkdir -p "$dir"
  cp -n "$root/tests/fuzz/corpus/$corpus"/* "$dir"/ 2>/dev/null || true
  echo "--- fuzz $name: $seconds s"
  local rc=0
  # -timeout: a single input running longer is a hang, saved as timeout-*.
  (cd "$artifacts" && "${pin[@]}" "$@" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$stamp-$name-" "$dir") >"$log" 2>&1 || rc=$?
  local runs cov
  runs=$(sed -n 's/^Done \([0-9]*\) runs in.*/\1/p' "$log" | tail -1)
  # a failed run has no "Done" line: its last status line has the count
  [[ -n $runs || $rc == 0 ]] || runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  cov=$(grep -oE '^#[0-9]+[[:space:]]+DONE.*cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+' || true)
  local found
  found=$(ls "$artifacts/$stamp-$name"-* 2>/dev/null | tr '\n' ' ' || true)
  grep -E '^fuzz_walk: ' "$log" || true
  if ((rc != 0)) || [[ -n $found ]] || ! grep -q '^Done [0-9]* runs' "$log"; then
    echo "FAIL: fuzz $name (exit $rc) after ${runs:-?} runs; log $log; inputs: ${found:-none saved}"
    grep -E 'check failed|VIOLATION|ERROR|SUMMARY|deadly signal|timeout|hs_err' "$log" | head -20 || true
    failed+=("$name")
    summary+=("$name: FAIL after ${runs:-?} runs")
  else
    echo "fuzz $name: ${runs} runs in $seconds s (${cov:-cov ?}), no crash"
    summary+=("$name: ${runs} runs (${cov:-cov ?})")
  fi
}

for h in options args attach_reply outputs; do
  wanted "$h" || continue
  run "$h" "$h" -- "$root/$build/tests/fuzz/fuzz_$h"
done

# The frame iterator inside a JVM: libFuzzer must leave the signals HotSpot
# owns to HotSpot (SIGSEGV/SIGBUS for implicit null checks and safepoint
# polls, SIGUSR2, SIGINT/SIGTERM for shutdown); a crash reaches libFuzzer
# as the SIGABRT HotSpot's error handler ends with, and -XX:ErrorFile puts
# the hs_err report next to the saved input.
walk_dir=$root/$build/tests/fuzz/walk
jdks=("jdk17:$(opt jdk17)")
jdk25=$(opt jdk25)
if [[ -x $jdk25/bin/java ]]; then jdks+=("jdk25:$jdk25"); fi
for j in "${jdks[@]}"; do
  name=walk_${j%%:*}
  home=${j#*:}
  wanted "$name" || continue
  run "$name" walk -- "$home/bin/java" -Xmx256m -XX:CompileCommand=quiet \
    '-XX:CompileCommand=exclude,FuzzWalk::interp*' '-XX:CompileCommand=dontinline,FuzzWalk::noinline*' \
    -XX:ErrorLogTimeout=15 "-XX:ErrorFile=$artifacts/$stamp-hs_err_${name}_%p.log" \
    "-Dfuzzwalk.lib=$walk_dir/libfuzz_walk.so" -cp "$walk_dir" FuzzWalk \
    -handle_segv=0 -handle_bus=0 -handle_ill=0 -handle_fpe=0 -handle_usr1=0 -handle_usr2=0 \
    -handle_int=0 -handle_term=0
  if ls "$artifacts/$stamp-hs_err_$name"* >/dev/null 2>&1; then
    echo "FAIL: fuzz $name: the JVM crashed: $(ls "$artifacts/$stamp-hs_err_$name"*)"
    [[ " ${failed[*]} " == *" $name "* ]] || failed+=("$name")
  fi
done

echo "=== fuzz summary ($seconds s per harness$( ((long)) && echo ', long form'))"
printf '  %s\n' "${summary[@]}"
if ((${#failed[@]} > 0)); then
  echo "test_fuzz.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "test_fuzz.sh: all harnesses ran without a crash"
