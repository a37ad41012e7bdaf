#!/usr/bin/env bash
# The project's test command (README, .ci/run):
#   1. bootstrap and build build/, run every default test suite;
#   2. the reliability suite's short form (tests/stress: the agent at 100 us
#      over hostile Java code, cpu and wall, both walks, every JDK);
#   3. build build-asan/ with ASan+UBSan (-Dsanitize=address), run the unit
#      and JVM suites again (the JVM tests preload the ASan runtime into java);
#   4. the queue and registry tests under TSan (scripts/test_tsan.sh);
#   5. every libFuzzer harness for 20 s (scripts/test_fuzz.sh, clang build).
# Every part runs even if an earlier one fails; the last line says what failed.
#
#   bash scripts/test.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

failed=()
export PROFILE2_TEST_PACKAGES=1 # scripts/bootstrap.sh: the tests' packages too

bash scripts/bootstrap.sh build
meson test -C build --print-errorlogs || failed+=("meson test -C build")
meson test -C build --setup stress --suite stress --print-errorlogs ||
  failed+=("meson test -C build --setup stress --suite stress")

if bash scripts/bootstrap.sh build-asan -Dsanitize=address; then
  meson test -C build-asan --suite unit --suite jvm --print-errorlogs ||
    failed+=("meson test -C build-asan --suite unit --suite jvm (ASan+UBSan)")
else
  failed+=("build of build-asan (ASan+UBSan)")
fi

bash scripts/test_tsan.sh build-tsan || failed+=("scripts/test_tsan.sh (TSan)")
bash scripts/test_fuzz.sh 20 || failed+=("scripts/test_fuzz.sh 20 (libFuzzer)")

if ((${#failed[@]} > 0)); then
  joined=$(printf '%s; ' "${failed[@]}")
  echo "test.sh: FAILED: ${joined%; }" >&2
  exit 1
fi
echo "test.sh: all tests passed (build: all suites and the stress short form; build-asan: unit and JVM suites under ASan+UBSan; TSan: queue and registries; libFuzzer: every harness 20 s)"
