#!/usr/bin/env bash
# The project's test command (README, .ci/run):
#   1. bootstrap and build build/, run every default test suite;
#   2. build build-asan/ with ASan+UBSan (-Dsanitize=address), run the unit
#      and JVM suites again (the JVM tests preload the ASan runtime into java).
# Both parts run even if the first fails; the last line says what failed.
#
#   bash scripts/test.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

failed=()
export PROFILE2_TEST_PACKAGES=1 # scripts/bootstrap.sh: the tests' packages too

bash scripts/bootstrap.sh build
meson test -C build --print-errorlogs || failed+=("meson test -C build")

if bash scripts/bootstrap.sh build-asan -Dsanitize=address; then
  meson test -C build-asan --suite unit --suite jvm --print-errorlogs ||
    failed+=("meson test -C build-asan --suite unit --suite jvm (ASan+UBSan)")
else
  failed+=("build of build-asan (ASan+UBSan)")
fi

if ((${#failed[@]} > 0)); then
  joined=$(printf '%s; ' "${failed[@]}")
  echo "test.sh: FAILED: ${joined%; }" >&2
  exit 1
fi
echo "test.sh: all tests passed (build: all suites; build-asan: unit and JVM suites under ASan+UBSan)"
