#!/usr/bin/env bash
# Own time of two agent builds side by side (issue 15 item 3): javac at
# 1 ms, interleaved rounds of
#   A  the first build's agent, walk=safepoint
#   B  the second build's agent, walk=safepoint
#   S  the second build's agent, walk=signal (the reference item 3 names)
# and the medians of the summary's `own time` line per JDK: the total, its
# share of the process's CPU time, the handlers, the queue drainer (and per
# drained element), the aggregator.
#
#   BUILD_A=build BUILD_B=../other/build bash bench/own_time_ab.sh [ROUNDS]
#
# ROUNDS: 5 by default. The javac tree is the e2e test's (15 classes).
# JDKS, JDK17, JDK25 as in bench/lib.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=own_time_ab.sh
. "$root/bench/lib.sh"
a=${BUILD_A:?BUILD_A: the first build}
b=${BUILD_B:?BUILD_B: the second build}
bench_check_build "$a"
bench_check_build "$b"
rounds=${1:-5}
work=$(mktemp -d /tmp/own-time-ab.XXXXXX)
trap 'rm -rf "$work"' EXIT
python3 - "$work/src" <<EOF
import pathlib, sys
sys.path.insert(0, "$root/tests/jvm/e2e")
import e2e_test
files = e2e_test.generate_javac_tree(pathlib.Path(sys.argv[1]), 15, 2)
pathlib.Path(sys.argv[1], "sources.txt").write_text("\n".join(str(f) for f in files) + "\n")
EOF
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); A $a, B $b"
for jdk in ${JDKS:-jdk17 jdk25}; do
  home=${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}
  [ "$jdk" = jdk25 ] && home=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
  [ -x "$home/bin/javac" ] || { echo "$jdk: skipped (no $home/bin/javac)"; continue; }
  for i in $(seq 1 "$rounds"); do
    for v in A B S; do
      case $v in
        A) agent=$a/agent/libprofile2-agent.so walk=safepoint ;;
        B) agent=$b/agent/libprofile2-agent.so walk=safepoint ;;
        S) agent=$b/agent/libprofile2-agent.so walk=signal ;;
      esac
      rm -rf "$work/out"
      "$home/bin/javac" "-J-agentpath:$agent=event=cpu,interval=1ms,walk=$walk,file=$work/p.txt" \
        -proc:none -nowarn -d "$work/out" "@$work/src/sources.txt" >/dev/null 2>&1 || fail "javac failed ($jdk $v)"
      own=$(grep '^own time' "$work/p.txt")
      queued=$(grep -oE '^safepoint walks: [0-9]+ queued' "$work/p.txt" | grep -oE '[0-9]+' || echo 0)
      echo "$jdk $v $queued $own" >>"$work/rows"
    done
  done
done
python3 - "$work/rows" <<'EOF'
import re, statistics, sys
pat = re.compile(r"own time: ([0-9.]+) s, ([0-9.]+) %.*signal handlers ([0-9.]+) s.*queue drainer ([0-9.]+) s, "
                 r"aggregator ([0-9.]+) s")
rows = {}
for line in open(sys.argv[1]):
    jdk, v, queued, rest = line.split(" ", 3)
    m = pat.search(rest)
    if m:
        rows.setdefault((jdk, v), []).append([float(x) for x in m.groups()] + [int(queued)])
names = {"A": "A safepoint", "B": "B safepoint", "S": "B signal"}
print("| JDK | agent, walk | runs | own time | share of the process's CPU | handlers | drainer | drainer per element | aggregator |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for (jdk, v), rs in sorted(rows.items()):
    med = lambda k: statistics.median(r[k] for r in rs)
    per = [r[3] / r[5] * 1e6 for r in rs if r[5]]
    print("| %s | %s | %d | %.3f s | %.1f %% | %.3f s | %.3f s | %s | %.3f s |"
          % (jdk, names[v], len(rs), med(0), med(1), med(2), med(3),
             "%.0f us" % statistics.median(per) if per else "-", med(4)))
EOF
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
