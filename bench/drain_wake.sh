#!/bin/bash
# The least a drainer's wake-up costs (issue 15 item 3; bench/drain_wake/drain_wake.c):
# a thread that only sleeps and wakes as the safepoint queues' drainer does,
# its CPU time per wake-up, with 0, 1 and 2 busy threads beside it, woken by
# its poll's 1 ms timeout (elements keep coming) or by an eventfd write
# every 1 ms and every 10 ms (an idle drainer woken by an enqueue). Rounds
# interleave the settings; medians over the rounds.
#
# usage: bench/drain_wake.sh [ROUNDS]      (default 5)
# env:   OUT scratch directory (default build/bench-drain-wake), SECONDS_PER_RUN (3)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/build/bench-drain-wake}
rounds=${1:-5}
secs=${SECONDS_PER_RUN:-3}
mkdir -p "$out"
cc -O2 -Wall -Wextra -Werror -pthread -o "$out/drain_wake" "$root/bench/drain_wake/drain_wake.c"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
settings=("1000 0 period" "1000 1 period" "1000 2 period" "1000 0 write" "1000 2 write" "10000 0 write" "10000 2 write")
: >"$out/raw.txt"
for r in $(seq 1 "$rounds"); do
  for s in "${settings[@]}"; do
    read -r period busy mode <<<"$s"
    echo "period_us=$period $("$out/drain_wake" "$secs" "$period" "$busy" "$mode")" >>"$out/raw.txt"
  done
done
python3 - "$out/raw.txt" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    kv = dict(w.split("=", 1) for w in line.split())
    rows[(int(kv["period_us"]), kv["mode"], int(kv["busy"]))].append(kv)
def med(xs, k):
    return statistics.median(float(x[k]) for x in xs)
print("| woken by | every | busy threads beside it | runs | the woken thread's CPU per wake-up, µs | the writer's write(2), µs | sum, µs [min, max] |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for (period, mode, busy), xs in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
    wake = med(xs, "thread_cpu_us_per_wake")
    write = med(xs, "write_us") if mode == "write" else 0.0
    sums = sorted(float(x["thread_cpu_us_per_wake"]) + float(x.get("write_us", 0)) for x in xs)
    print("| %s | %g ms | %d | %d | %.1f | %s | %.1f [%.1f, %.1f] |" % (
        "poll timeout" if mode == "period" else "eventfd write", period / 1000, busy, len(xs), wake,
        "%.1f" % write if mode == "write" else "–", statistics.median(sums), sums[0], sums[-1]))
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
