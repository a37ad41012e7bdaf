#!/usr/bin/env bash
# The project's test command (README, .ci/run):
#   1. bootstrap and build build/, run every default test suite;
#   2. the reliability suite's short form (tests/stress: the agent at 100 us
#      over hostile Java code, cpu and wall, both walks, every JDK);
#   3. build build-asan/ with ASan+UBSan (-Dsanitize=address), run the unit
#      and JVM suites again (the JVM tests preload the ASan runtime into java);
#   4. the queue and registry tests under TSan (scripts/test_tsan.sh);
#   5. every libFuzzer harness for 20 s (scripts/test_fuzz.sh, clang build).
# Every part runs even if an earlier one fails. The output ends with the
# failed tests' digest (with what the machine did while each ran), a line
# of what it did over the run, what could not run and why, the failed
# steps, and one line of counts over all
# parts: "test.sh: N passed, N failed, N skipped" (a fuzz harness counts as
# one test).
#
#   bash scripts/test.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

failed=()
not_run=()
passed_n=0 failed_n=0 skipped_n=0 steps=0
export PROFILE2_TEST_PACKAGES=1 # scripts/bootstrap.sh: the tests' packages too
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# The machine's heartbeat and stall times, once a second (it stops when this
# script exits): the digest of a failed test says what the machine did
# while the test ran, the end of the output what it did over the run.
machine_log=$logs/machine.log
python3 scripts/machine_watch.py record "$machine_log" </dev/null >/dev/null 2>&1 &

# Add the counts of meson's closing summary in log $1 ("Ok: N", "Fail: N",
# ...); a step that printed none (it did not get to run tests) counts as one
# failure.
count_meson() {
  local ok fail skip
  ok=$(awk '/^Ok:/ {n += $2} /^Expected Fail:/ {n += $3} END {print n + 0}' "$1")
  fail=$(awk '/^Fail:/ || /^Timeout:/ {n += $2} /^Unexpected Pass:/ {n += $3} END {print n + 0}' "$1")
  skip=$(awk '/^Skipped:/ {n += $2} END {print n + 0}' "$1")
  if ! grep -q '^Ok:' "$1"; then fail=$((fail + 1)); fi
  passed_n=$((passed_n + ok)) failed_n=$((failed_n + fail)) skipped_n=$((skipped_n + skip))
}

# Run a meson test command ($3...) in build directory $2, counted; $1 names
# it in the failure list. The failed tests' digest (scripts/failed_tests.py)
# is kept for the end of the output.
digests=$logs/digests.txt
: >"$digests"
meson_step() {
  local name=$1 dir=$2 log
  shift 2
  steps=$((steps + 1))
  log=$logs/step$steps.log
  # pipefail (set above): the pipeline fails when the command does
  if "$@" 2>&1 | tee "$log"; then :; else
    failed+=("$name")
    python3 scripts/failed_tests.py "$dir" "$name" "$machine_log" >>"$digests" || true
  fi
  count_meson "$log"
}

jdk25=$(sed -n "s/^option('jdk25', type : 'string', value : '\([^']*\)'.*/\1/p" meson_options.txt)
if [[ ! -x $jdk25/bin/java ]]; then
  not_run+=("every JVM test, stress run and fuzz harness on JDK 25: Temurin 25 is not installed at $jdk25")
fi

bash scripts/bootstrap.sh build
meson_step "meson test -C build" build meson test -C build --print-errorlogs
meson_step "meson test -C build --setup stress --suite stress" build \
  meson test -C build --setup stress --suite stress --print-errorlogs

if bash scripts/bootstrap.sh build-asan -Dsanitize=address; then
  meson_step "meson test -C build-asan --suite unit --suite jvm (ASan+UBSan)" build-asan \
    meson test -C build-asan --suite unit --suite jvm --print-errorlogs
else
  failed+=("build of build-asan (ASan+UBSan)")
  failed_n=$((failed_n + 1))
fi

tsan_log=$logs/tsan.log
if bash scripts/test_tsan.sh build-tsan 2>&1 | tee "$tsan_log"; then :; fi
count_meson "$tsan_log"
if ! grep -q 'test_tsan.sh: queue and registry tests passed' "$tsan_log"; then
  failed+=("scripts/test_tsan.sh (TSan)")
fi

fuzz_log=$logs/fuzz.log
bash scripts/test_fuzz.sh 20 2>&1 | tee "$fuzz_log" || true
fuzz_ok=$(grep -cE '^  [a-z_0-9]+: [0-9]+ runs' "$fuzz_log" || true)
fuzz_fail=$(grep -cE '^  [a-z_0-9]+: FAIL' "$fuzz_log" || true)
passed_n=$((passed_n + fuzz_ok)) failed_n=$((failed_n + fuzz_fail))
if ! grep -q 'test_fuzz.sh: all harnesses ran without a crash' "$fuzz_log"; then
  failed+=("scripts/test_fuzz.sh 20 (libFuzzer)")
  if ((fuzz_fail == 0)); then failed_n=$((failed_n + 1)); fi
fi

cat "$digests"
python3 scripts/machine_watch.py summary "$machine_log" | sed 's/^/test.sh: /' || true
for n in "${not_run[@]}"; do echo "test.sh: not run: $n"; done
status=0
if ((${#failed[@]} > 0)); then
  joined=$(printf '%s; ' "${failed[@]}")
  echo "test.sh: FAILED: ${joined%; }"
  status=1
elif ((failed_n > 0)); then
  echo "test.sh: FAILED: a step counted failures but exited 0"
  status=1
else
  echo "test.sh: all tests passed (build: all suites and the stress short form; build-asan: unit and JVM suites under ASan+UBSan; TSan: queue and registry; libFuzzer: every harness 20 s)"
fi
echo "test.sh: $passed_n passed, $failed_n failed, $skipped_n skipped"
exit $status
