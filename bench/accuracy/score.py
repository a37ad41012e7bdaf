#!/usr/bin/env python3
"""Score one run of bench/accuracy.sh: the share of the hot thread's samples
whose top Java frame is the true hot method, and the share on the true hot
line. Prints one raw line (key=value, space separated) for summarize.py.

usage: score.py SOURCE CASE FORMAT FILE [key=value ...]

SOURCE  bench/accuracy/Accuracy.java; the truth is its "// HOT: CASE" marker:
        the marker's line is the hot line, the method it sits in (or declares,
        for the native method of the jni case) the hot method
FORMAT  collapsed  the agent's collapsed stacks, written with threads,lines,tiers:
                   the hot thread's stacks are under "[hot tid=N]"; Java frames
                   end in a tier suffix (_[i] _[1] _[2] _[inl] _[n]), native
                   frames (above a native method) do not; weight as written
        jfr        `jfr print --json` of jdk.ExecutionSample and
                   jdk.NativeMethodSample events: one sample each
        jfr-cpu    `jfr print --json` of jdk.CPUTimeSample events (JDK 25):
                   weighted by their samplingPeriod; failed ones are misses
        stacks     Accuracy's own Thread.getStackTrace() sampler: "frame count"
key=value  copied to the front of the output line (jdk=, case=, ...)

Output fields: samples (count), weight, method and line (shares of the weight,
0..1; line=- for a method without lines), then top= the five heaviest top
frames ("Class.method:line", "Class.method:native", or "(why)" for samples
without a Java frame) as frame@share separated by '|', and for jfr-cpu
biased= the share of samples JFR marked as biased.
"""
import collections
import json
import re
import sys

TIER = re.compile(r"^(?P<m>.*?)(?::(?P<l>\d+))?_\[(?:i|1|2|inl|n)\]$")


def truth(source, case):
    lines = open(source).read().split("\n")
    decl = re.compile(r"^\s*static\s+(?:native\s+)?[\w\[\]<>]+\s+(\w+)\s*\(")
    for i, text in enumerate(lines):
        if re.search(r"//\s*HOT:\s*%s\b" % re.escape(case), text):
            for j in range(i, -1, -1):
                m = decl.match(lines[j])
                if m:
                    native = " native " in lines[j]
                    return "Accuracy." + m.group(1), (None if native else i + 1)
    sys.exit("score.py: no '// HOT: %s' marker in %s" % (case, source))


def from_collapsed(path):
    tops = collections.Counter()
    count = 0
    for rec in open(path):
        rec = rec.rstrip("\n")
        if not rec.startswith("[hot tid="):
            continue
        stack, _, w = rec.rpartition(" ")
        w = float(w)
        count += w  # the agent's weight is its sample count with the perf engine
        label = "(no Java frame)"
        for frame in reversed(stack.split(";")[1:]):
            m = TIER.match(frame)
            if m:
                label = m["m"].replace("/", ".") + ":" + (m["l"] if m["l"] else "native" if frame.endswith("_[n]") else "?")
                break
        tops[label] += w
    return tops, count, {}


def jfr_events(path):
    return json.load(open(path))["recording"]["events"]


def frame_label(frames):
    if not frames:
        return "(no stack)"
    f = frames[0]
    name = f["method"]["type"]["name"].replace("/", ".") + "." + f["method"]["name"]
    line = "native" if f.get("type") == "Native" else str(f["lineNumber"])
    return name + ":" + line


def hot_thread_events(path, thread_field):
    """The values of path's events taken on the thread named "hot"."""
    for e in jfr_events(path):
        v = e["values"]
        th = v.get(thread_field)
        if th and th.get("javaName") == "hot":
            yield v


def from_jfr(path):
    tops = collections.Counter()
    count = 0
    for v in hot_thread_events(path, "sampledThread"):
        st = v.get("stackTrace")
        tops[frame_label(st and st["frames"])] += 1
        count += 1
    return tops, count, {}


def seconds(iso):  # "PT0.004S"
    m = re.fullmatch(r"PT(?:(\d+)M)?([\d.]+)S", iso or "")
    return (60 * int(m[1] or 0) + float(m[2])) if m else 0.0


def from_jfr_cpu(path):
    tops = collections.Counter()
    count, biased = 0, 0
    for v in hot_thread_events(path, "eventThread"):
        st = v.get("stackTrace")
        label = "(failed)" if v.get("failed") else frame_label(st and st["frames"])
        tops[label] += 1000 * seconds(v.get("samplingPeriod"))  # ms of CPU time
        count += 1
        biased += bool(v.get("biased"))
    return tops, count, {"biased": "%.4f" % (biased / count if count else 0)}


def from_stacks(path):
    tops = collections.Counter()
    for rec in open(path):
        label, _, n = rec.strip().rpartition(" ")
        if label:
            tops[label] += int(n)
    return tops, sum(tops.values()), {}


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    source, case, fmt, path = sys.argv[1:5]
    method, line = truth(source, case)
    reader = {"collapsed": from_collapsed, "jfr": from_jfr, "jfr-cpu": from_jfr_cpu, "stacks": from_stacks}[fmt]
    tops, count, extra = reader(path)
    weight = sum(tops.values())
    on_method = sum(w for k, w in tops.items() if k.rpartition(":")[0] == method)
    on_line = sum(w for k, w in tops.items() if line is not None and k == "%s:%d" % (method, line))
    share = lambda x: "%.4f" % (x / weight) if weight else "nan"
    out = list(sys.argv[5:])
    out += ["samples=%d" % count, "weight=%g" % weight, "method=" + share(on_method),
            "line=" + (share(on_line) if line is not None else "-")]
    out += ["%s=%s" % kv for kv in extra.items()]
    out.append("top=" + "|".join("%s@%s" % (k.replace(" ", "_"), share(w)) for k, w in tops.most_common(5)))
    print(" ".join(out))


if __name__ == "__main__":
    main()
