#!/bin/bash
# Unnamed frames in a real profile: javac (the JDK's own, compiling the
# generated tree of tests/jvm/e2e/e2e_test.py: 100 classes) under the agent
# at event=cpu,interval=1ms, on JDK 17 and (when installed) JDK 25. Per run,
# from the collapsed stacks: the samples, the samples with an [unknown]
# frame (native code outside every module), with a frame of the JVM's
# generated code (the vm_code kind, "<HotSpot name>_[v]"), and with a
# native frame shown as "module+0x..." (no symbol known to contain its
# pc), with one shown as "symbol+0x..." (the form a3a1214 gave a pc past
# the end of the nearest exported symbol: should be none), and with libc's
# start_thread by name (only where libc's debug file is found: see
# PROFILE2_DEBUG_DIRS in docs/agent.md); then the heaviest VM code names
# and libc positions of the last run.
#
# usage: bench/unknown_frames.sh [RUNS]       (default 3 runs per JDK)
# env:   BUILD  meson build directory (default: build/), must not be a
#               sanitizer build; `ninja -C $BUILD` is run first
#        OUT    scratch directory (default: $BUILD/bench-unknown-frames)
#        WALK   signal (default) or safepoint
#        JDK17, JDK25  JDK homes (defaults: the meson options' defaults)
#        PROFILE2_DEBUG_DIRS  passed to the agent (set and empty: no debug files)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=unknown_frames
build=${BUILD:-$root/build}
runs=${1:-3}
out=${OUT:-$build/bench-unknown-frames}
walk=${WALK:-signal}
jdk17=${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}
jdk25=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
. "$root/bench/lib.sh"
bench_check_build "$build"
agent=$build/agent/libprofile2-agent.so

rm -rf "$out"
mkdir -p "$out"
python3 - "$root/tests/jvm/e2e" "$out" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import e2e_test
files = e2e_test.generate_javac_tree(sys.argv[2] + "/src", 100, 2)
open(sys.argv[2] + "/sources.txt", "w").write("\n".join(files) + "\n")
PY

echo "machine: $(nproc) CPUs, $(uname -r); build $build ($buildtype); walk=$walk"
echo "PROFILE2_DEBUG_DIRS=${PROFILE2_DEBUG_DIRS-(unset: /usr/lib/debug)}"
echo "| JDK | run | samples | with [unknown] | with VM code (_[v]) | with module+0x | with symbol+0x | with start_thread |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for jdk in "$jdk17" "$jdk25"; do
  [ -x "$jdk/bin/javac" ] || continue
  v=$("$jdk/bin/java" -version 2>&1 | head -1 | sed 's/.*version "\([^"]*\)".*/\1/')
  for r in $(seq 1 "$runs"); do
    base=$out/javac-$v-$r
    rm -rf "$out/classes"
    "$jdk/bin/javac" "-J-agentpath:$agent=event=cpu,interval=1ms,walk=$walk,quiet,file=$base.collapsed" \
      -proc:none -nowarn -d "$out/classes" "@$out/sources.txt"
    python3 - "$base.collapsed" "$v" "$r" <<'PY'
import re, sys
tot = unk = vm = off = symoff = st = 0
# "X+0x...": a position in module X (a library, or the launcher), or, as
# the agent wrote before, an exported symbol X plus an offset past its end.
module = re.compile(r"([^ ;]+\.so[.0-9]*|java|javac)\+0x[0-9a-f]+")
plus = re.compile(r"[^ ;\[]+\+0x[0-9a-f]+")
for line in open(sys.argv[1]):
    stack, n = line.rstrip("\n").rsplit(" ", 1)
    n = int(n)
    frames = stack.split(";")
    tot += n
    unk += n if "[unknown]" in frames else 0
    vm += n if any(f.endswith("_[v]") for f in frames) else 0
    off += n if any(module.fullmatch(f) for f in frames) else 0
    symoff += n if any(plus.fullmatch(f) and not module.fullmatch(f) for f in frames) else 0
    st += n if "start_thread" in frames else 0
pct = lambda x: "%d (%.1f %%)" % (x, 100 * x / max(tot, 1))
print("| %s | %s | %d | %s | %s | %s | %s | %s |" % (sys.argv[2], sys.argv[3], tot, pct(unk), pct(vm), pct(off),
                                                     pct(symoff), pct(st)))
PY
  done
  python3 - "$out/javac-$v-$runs.collapsed" "$v" <<'PY'
import collections, sys
c, p = collections.Counter(), collections.Counter()
for line in open(sys.argv[1]):
    stack, n = line.rstrip("\n").rsplit(" ", 1)
    for f in set(stack.split(";")):
        if f.endswith("_[v]"):
            c[f[:-4]] += int(n)
        if "+0x" in f and not f.endswith("_[v]"):
            p[f] += int(n)
print("JDK %s, last run, samples per VM code name: %s" % (sys.argv[2], ", ".join("%s %d" % kv for kv in c.most_common(12))))
print("JDK %s, last run, samples per X+0x frame: %s" % (sys.argv[2], ", ".join("%s %d" % kv for kv in p.most_common(8))))
PY
done
