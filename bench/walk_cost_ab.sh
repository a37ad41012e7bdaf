#!/bin/bash
# Two libprofile2 builds against each other on bench/walk_cost.sh's Java walk
# (the same agent and WalkCost fixture; default tiered JIT, so compiled and
# inlined frames): one JVM run per build in turn, each round in a rotated
# order, and a third variant that is build A again, the control: a B/A ratio
# means something only where it lies outside the spread of C/A.
#
# Each build's libprofile2.so is copied to a directory of its own under OUT,
# all three paths of the same length, and loaded through LD_LIBRARY_PATH by
# an agent built without an rpath. Why: two runs of the same library from
# its two build directories' lib/ (paths of different lengths) differed by
# 1-5 %; the environment's size moves the stack's alignment.
#
# usage: bench/walk_cost_ab.sh ROUNDS BUILD_A BUILD_B
# env:   OUT scratch directory (default: BUILD_A/bench-walk-cost-ab); raw
#            results in OUT/raw.txt
#        JDK17, JDK25, BATCHES (5), SIGNALS (2000), DEPTHS ("10 100 1000") as
#            in bench/walk_cost.sh; JAVA_FLAGS extra JVM flags (e.g. -Xint)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# = 3 ] || {
  echo "usage: $0 ROUNDS BUILD_A BUILD_B" >&2
  exit 2
}
rounds=$1 build_a=$(cd "$2" && pwd) build_b=$(cd "$3" && pwd)
out=${OUT:-$build_a/bench-walk-cost-ab}
jdk17=${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}
jdk25=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
read -r -a java_flags <<<"${JAVA_FLAGS:-}"
read -r -a depths <<<"${DEPTHS:-10 100 1000}"

# shellcheck disable=SC2034 # lib.sh names the script in its messages
name=walk_cost_ab.sh
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
bench_check_build "$build_b"
bench_check_build "$build_a"

mkdir -p "$out"
rm -rf "${out:?}/lib"
for v in a:$build_a b:$build_b c:$build_a; do
  mkdir -p "$out/lib/${v%%:*}"
  cp -a "${v#*:}"/lib/libprofile2.so* "$out/lib/${v%%:*}/"
done
# The API is the same in both builds: the agent is compiled against A's.
read -r -a cflags_libs <<<"$(PKG_CONFIG_PATH="$build_a/meson-uninstalled" pkg-config --cflags --libs profile2)"
cc -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -shared -fPIC -o "$out/libwalk_cost_agent.so" \
  "$root/bench/walk_cost/walk_cost_agent.c" "${cflags_libs[@]}" || fail "cannot build the agent"
"$jdk17/bin/javac" -d "$out" "$root/bench/walk_cost/WalkCost.java" || fail "cannot compile WalkCost.java"

jdks=("jdk17:$jdk17")
[ -x "$jdk25/bin/java" ] && jdks+=("jdk25:$jdk25")
variants=(a b c)
raw=$out/raw.txt
: >"$raw"
for round in $(seq 1 "$rounds"); do
  for entry in "${jdks[@]}"; do
    for k in 0 1 2; do
      v=${variants[$(((k + round) % 3))]}
      tag="build=$v jdk=${entry%%:*} round=$round"
      echo "$tag LOAD $(cut -d' ' -f1 /proc/loadavg)" >>"$raw"
      LD_LIBRARY_PATH=$out/lib/$v "${entry#*:}/bin/java" "${java_flags[@]}" \
        -agentpath:"$out/libwalk_cost_agent.so" -cp "$out" WalkCost "${BATCHES:-5}" "${SIGNALS:-2000}" \
        "${depths[@]}" | sed "s/^/$tag /" >>"$raw" || fail "$tag failed"
    done
  done
done

echo "## walk cost A/B: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "- A (and C): $build_a; B: $build_b"
echo "- machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "- command: bench/walk_cost_ab.sh $rounds A B (BATCHES=${BATCHES:-5} SIGNALS=${SIGNALS:-2000}" \
  "DEPTHS=\"${DEPTHS:-10 100 1000}\" JAVA_FLAGS=\"${JAVA_FLAGS:-}\")"
echo
python3 - "$raw" <<'EOF'
import collections, re, statistics, sys

values = collections.defaultdict(list)  # (jdk, path, depth, build) -> [ns per walk]
runs = collections.defaultdict(lambda: collections.defaultdict(list))
loads, failed = [], 0
for line in open(sys.argv[1]):
    if " LOAD " in line:
        loads.append(float(line.split(" LOAD ")[1]))
        continue
    if " RESULT " not in line:
        continue
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    failed += int(kv["errors"])
    if int(kv["n"]) == 0:
        continue
    key = (kv["jdk"], kv["path"], int(kv["depth"]), kv["build"])
    values[key].append(float(kv["ns_walk"]))
    runs[key][kv["round"]].append(float(kv["ns_walk"]))

print(f"Load average (1 min) when a run started: {min(loads):.1f} to {max(loads):.1f},"
      f" median {statistics.median(loads):.1f}. Failed walks: {failed}.")
print()
print("Median ns per walk over every value of every run (sync: batch means; signal: each run's median),"
      " in parentheses the spread of the runs' medians. C is A again.")
print()
print("| JDK | path | depth | A | B | C | B / A | C / A |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for key in sorted({k[:3] for k in values}):
    med, cells = {}, []
    for b in "abc":
        per_run = [statistics.median(v) for v in runs[key + (b,)].values()]
        med[b] = statistics.median(values[key + (b,)])
        cells.append(f"{med[b]:,.0f} ({min(per_run):,.0f}-{max(per_run):,.0f})")
    print(f"| {key[0]} | {key[1]} | {key[2]} | {' | '.join(cells)} | {med['b'] / med['a']:.3f} |"
          f" {med['c'] / med['a']:.3f} |")
EOF
echo
echo "raw results: $raw"
