#!/usr/bin/env bash
# Issue 13 item 6's series: the JVM suites run after run, plain and under
# ASan alternately, on one clean clone of a commit, nothing changed between
# rounds. One line per suite run is appended to the record file (result,
# meson's counts, seconds, end time); a failed run also gets the failed
# tests' digest (scripts/failed_tests.py) with what the machine did meanwhile.
#
#   bash scripts/suite_series.sh REV ROUNDS [DIR] [RECORD]
#
# REV: the commit; ROUNDS: plain + ASan pairs; DIR: the clone (default
# /tmp/p2-series, removed first); RECORD: default DIR.txt. Takes the
# machine (a pair is 30-40 min on 2 CPUs): run nothing else beside it
# unless the series is meant to be run under load.
set -uo pipefail
rev=${1:?usage: suite_series.sh REV ROUNDS [DIR] [RECORD]}
rounds=${2:?usage: suite_series.sh REV ROUNDS [DIR] [RECORD]}
dir=${3:-/tmp/p2-series}
record=${4:-$dir.txt}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# the faults tests mount small file systems inside the build directory
for m in $(awk -v d="$dir/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do umount -l "$m"; done
rm -rf "$dir"
git clone -q "$src" "$dir" && git -C "$dir" checkout -q "$rev" || { echo "suite_series.sh: cannot clone $rev" >&2; exit 1; }
cd "$dir"
export PROFILE2_TEST_PACKAGES=1
machine=$dir.machine.log
python3 scripts/machine_watch.py record "$machine" </dev/null >/dev/null 2>&1 &
watch_pid=$!
trap 'kill $watch_pid 2>/dev/null' EXIT
if ! { bash scripts/bootstrap.sh build && bash scripts/bootstrap.sh build-asan -Dsanitize=address; } >"$dir.bootstrap.log" 2>&1; then
  echo "bootstrap of $rev failed: $dir.bootstrap.log" >>"$record"
  exit 1
fi
for i in $(seq 1 "$rounds"); do
  for b in build build-asan; do
    log=$dir.$b.$i.log
    start=$(date +%s)
    meson test -C "$b" --suite jvm --print-errorlogs >"$log" 2>&1
    rc=$?
    counts=$(grep -E '^(Ok|Expected Fail|Fail|Unexpected Pass|Skipped|Timeout):' "$log" | tr -s ' ' | tr '\n' ' ')
    echo "round $i $b $rev rc=$rc $(($(date +%s) - start)) s: $counts(end $(date -u +%H:%M))" >>"$record"
    if ((rc != 0)); then
      cp "$b/meson-logs/testlog.txt" "$dir.$b.$i.testlog.txt"
      python3 scripts/failed_tests.py "$b" "$b round $i" "$machine" >>"$record" 2>&1 || true
    fi
  done
done
echo "series of $rev finished" >>"$record"
