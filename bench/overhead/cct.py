"""Calling-context trees from collapsed stacks, and the two agreement
measures of seeds/000 §5.3 (after Zhuang et al., PLDI'06):

  overlap(A, B)     = sum over edges e in both of min(weight(e, A), weight(e, B))
  hotcover(A, B, T) = |hotset(A, T) & hotset(B, T)| / |hotset(B, T)|
  hotset(C, T)      = edges of C whose weight >= T * the heaviest edge's weight

An edge is a call into a context: the path of Java methods from the root to
the callee (a node of the tree). Its weight is its inclusive sample weight
(the samples whose stack passes through it) divided by the sum of that over
all edges of the tree, as tests/jvm/queue/cct_overlap.h defines it, so 1.0
means the same trees with the same weights.

Only Java frames count: the profiles are written with the agent's `tiers`
option, which marks Java frames (`_[i]`, `_[1]`, `_[2]`, `_[inl]`, `_[n]`);
the marker is dropped (a method is the same node whatever tier ran it), and
so are native frames (the JIT compiler threads, the VM's own frames above
Java). Names the JVM makes up per run (lambda and reflection classes, hidden
class addresses) are normalized. A stack the profiler could not finish
([error:N ...], [stale], [truncated]) keeps its Java frames under a root of
its own, so it shares no edge with complete stacks: incomplete walks lower
the agreement, as they should.
"""
import re
from collections import defaultdict

TIER = re.compile(r"_\[(?:i|1|2|inl|n)\]$")
RUNTIME_NAMES = [
    (re.compile(r"\$\$Lambda\$\d+"), "$$Lambda$?"),
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),
    (re.compile(r"(Generated(?:Serialization)?(?:Method|Constructor)Accessor)\d+"), r"\1?"),
    (re.compile(r"(\$Proxy)\d+"), r"\1?"),
]
INCOMPLETE = ("[error:", "[stale]", "[truncated]")


def java_path(frames):
    """The stack's Java frames, root first, as a tuple (or None if it has none)."""
    path = []
    incomplete = False
    for f in frames:
        if f.startswith(INCOMPLETE):
            incomplete = True
            continue
        m = TIER.search(f)
        if not m:
            continue
        name = f[:m.start()]
        for rx, rep in RUNTIME_NAMES:
            name = rx.sub(rep, name)
        path.append(name)
    if not path:
        return None
    return (("[incomplete]",) if incomplete else ()) + tuple(path)


def read_collapsed(path):
    """{java path: weight} of one collapsed file."""
    stacks = defaultdict(float)
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            stack, _, n = line.rpartition(" ")
            if not stack:
                continue
            p = java_path(stack.split(";"))
            if p:
                stacks[p] += float(n)
    return stacks


def merge(trees):
    """Stacks of several runs as one (each run given the same total weight,
    so a longer run does not dominate the average)."""
    out = defaultdict(float)
    for t in trees:
        total = sum(t.values()) or 1.0
        for p, w in t.items():
            out[p] += w / total
    return out


def edges(stacks):
    """{edge: normalized inclusive weight}."""
    inc = defaultdict(float)
    for p, w in stacks.items():
        for i in range(1, len(p) + 1):
            inc[p[:i]] += w
    total = sum(inc.values()) or 1.0
    return {e: w / total for e, w in inc.items()}


_edges_cache = {}


def cached_edges(stacks):
    """edges(), remembered for the tree object (trees are not changed once built)."""
    key = id(stacks)
    hit = _edges_cache.get(key)
    if hit is None or hit[0] is not stacks:
        hit = (stacks, edges(stacks))
        _edges_cache[key] = hit
    return hit[1]


def overlap(a, b):
    ea, eb = cached_edges(a), cached_edges(b)
    return sum(min(w, eb[e]) for e, w in ea.items() if e in eb)


def hotset(e, t):
    top = max(e.values(), default=0.0)
    return {k for k, w in e.items() if w >= t * top}


def hotcover(a, b, t=0.1):
    ha, hb = hotset(cached_edges(a), t), hotset(cached_edges(b), t)
    return len(ha & hb) / len(hb) if hb else 0.0
