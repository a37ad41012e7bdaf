#!/usr/bin/env bash
# The concurrent data structures under ThreadSanitizer (issue 7, item 3):
# the per-thread sample queue (queue_stress), the registry of live queues
# (queue_registry_stress) and the agent's thread registry (threads_stress),
# i.e. meson's suite 'tsan'. Only those three programs are built, so this
# takes a few minutes on two CPUs. Criterion tests cannot run under TSan
# (Snaipe/Criterion#274), hence plain programs; a TSan report makes the
# program exit non-zero (TSan's exitcode), which fails the test.
#
#   bash scripts/test_tsan.sh [BUILD_DIR]      (default: build-tsan)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${1:-build-tsan}

if [[ ! -f $build/build.ninja ]]; then
  meson setup "$build" -Dsanitize=thread
elif [[ $(meson introspect "$build" --buildoptions |
  python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="sanitize"))') != thread ]]; then
  echo "test_tsan.sh: $build is not a -Dsanitize=thread build" >&2
  exit 2
fi

ninja -C "$build" tests/unit/queue/queue_stress tests/unit/agent/threads_stress \
  tests/unit/lib/safepoint/queue_registry_stress

# halt_on_error=0: see every report of a run, not just the first;
# second_deadlock_stack: both stacks of a lock-order inversion.
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}halt_on_error=0:second_deadlock_stack=1:exitcode=66"
if meson test -C "$build" --suite tsan --no-rebuild --print-errorlogs; then
  echo "test_tsan.sh: queue and registry tests passed under TSan"
else
  echo "test_tsan.sh: FAILED (see $build/meson-logs/testlog.txt)" >&2
  exit 1
fi
