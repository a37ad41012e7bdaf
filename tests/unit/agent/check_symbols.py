#!/usr/bin/env python3
"""Native frame names in a stripped library (agent/symbols_linux.c), on
this machine's libc.so.6, which Debian ships without .symtab.

usage: check_symbols.py SYMBOLIZE     (tests/unit/agent/symbolize.c)

Sampled pcs: the middle of every 10th function in .text that libc's
.eh_frame describes (readelf's FDEs), a few hundred, plus the frames below a new
thread's start routine.

(a) With libc's separate debug file (Debian's libc6-dbg, found by build
    id under /usr/lib/debug): the thread's frames are start_thread and
    clone3 (glibc 2.36), and every sampled pc is named by a symbol of the
    debug file that starts where gdb says the function containing the pc
    starts (`info symbol`; aliases such as __GI___clone3 are the same
    function). Without the debug file, (a) is skipped with the reason.
(b) With PROFILE2_DEBUG_DIRS= (no debug file read): every name is
    libc.so.6+0x<the pc's offset>, or an exported symbol (.dynsym) whose
    size covers the pc or that starts where readelf's FDE covering the pc
    starts; with the debug file present, gdb must agree too.
"""
import os
import re
import shutil
import subprocess
import sys

FAILURES = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)
    return cond


def run_tool(tool, offsets, env_extra):
    env = dict(os.environ)
    env.update(env_extra)
    r = subprocess.run([tool], input="".join("%x\n" % o for o in offsets), capture_output=True, text=True,
                       env=env, timeout=60)
    if r.returncode != 0:
        sys.exit("symbolize failed (%d): %s" % (r.returncode, r.stderr))
    out = {"thread": [], "names": {}}
    for line in r.stdout.splitlines():
        w = line.split(" ")
        if w[0] == "module":
            out["path"], out["base"] = w[1], int(w[2], 16)
        elif w[0] == "thread":
            out["thread"].append((int(w[1], 16), w[2]))
        elif w[0] == "stats":
            out["debug_files"] = int(w[1])
        else:
            out["names"][int(w[0], 16)] = " ".join(w[1:])
    return out


def readelf(*args):
    # readelf exits 1 on libc ("Unable to find program interpreter name") yet prints all
    return subprocess.run(["readelf"] + list(args), capture_output=True, text=True).stdout


def fdes(path):
    """[(start, end)] of the FDEs in .eh_frame, sorted."""
    out = []
    for m in re.finditer(r" FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", readelf("--debug-dump=frames", path)):
        out.append((int(m.group(1), 16), int(m.group(2), 16)))
    return sorted(out)


def symbols(path, dyn):
    """name (without @version) -> [(addr, size)] of the function symbols."""
    out = {}
    for line in readelf("--dyn-syms" if dyn else "--syms", "-W", path).splitlines():
        w = line.split()
        if len(w) < 8 or w[3] not in ("FUNC", "IFUNC") or w[6] == "UND":
            continue
        out.setdefault(w[7].split("@")[0], []).append((int(w[1], 16), int(w[2], 0)))
    return out


def build_id(path):
    m = re.search(r"Build ID: ([0-9a-f]+)", readelf("-n", path))
    return m.group(1) if m else None


def gdb_starts(path, offsets):
    """offset -> where gdb says the function containing it starts (with
    the debug file gdb finds by itself), or None."""
    cmds = []
    for o in offsets:
        cmds += ["-ex", "info symbol 0x%x" % o]
    r = subprocess.run(["gdb", "-nx", "-batch"] + cmds + [path], capture_output=True, text=True, timeout=300)
    lines = [l for l in r.stdout.splitlines() if " in section " in l or l.startswith("No symbol matches")]
    if len(lines) != len(offsets):
        sys.exit("gdb gave %d answers for %d pcs:\n%s" % (len(lines), len(offsets), r.stdout[-2000:] + r.stderr[-2000:]))
    out = {}
    for o, l in zip(offsets, lines):
        m = re.match(r"^(\S+)(?: \+ (\d+))? in section", l)
        out[o] = o - int(m.group(2) or 0) if m else None
    return out


def covering_fde(fd, off):
    lo, hi = 0, len(fd)
    while lo < hi:
        mid = (lo + hi) // 2
        if fd[mid][0] <= off:
            lo = mid + 1
        else:
            hi = mid
    return fd[lo - 1] if lo > 0 and off < fd[lo - 1][1] else None


def main():
    tool = sys.argv[1]
    probe = run_tool(tool, [], {})
    path = probe["path"]
    mod = os.path.basename(path)
    fd = fdes(path)
    check(len(fd) > 1000, "%s: readelf lists %d FDEs" % (path, len(fd)))
    # .text only: the PLT's FDE covers stubs gdb calls "*ABS*+0x9f2f0@plt",
    # which no symbol names (the agent shows them as positions).
    text = re.search(r"\.text\s+PROGBITS\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", readelf("-S", "-W", path))
    t0, t1 = int(text.group(1), 16), int(text.group(1), 16) + int(text.group(2), 16)
    sample = [s + (e - s) // 2 for s, e in [f for f in fd if t0 <= f[0] < t1][::10] if e - s > 1]
    # libc's .symtab is in the debug file only: Debian strips it.
    has_symtab = ".symtab" in readelf("-S", "-W", path)
    bid = build_id(path)
    # Where the agent looks (PROFILE2_DEBUG_DIRS as the test runs, default
    # /usr/lib/debug): set to a directory without it, (a) is skipped too.
    dirs = [d for d in os.environ.get("PROFILE2_DEBUG_DIRS", "/usr/lib/debug").split(":") if d]
    cands = ["%s/.build-id/%s/%s.debug" % (d, bid[:2], bid[2:]) for d in dirs] if bid else []
    debug = next((c for c in cands if os.path.exists(c)), cands[0] if cands else None)
    have_debug = debug is not None and os.path.exists(debug) and not has_symtab
    have_gdb = shutil.which("gdb") is not None
    if have_debug and not have_gdb:
        check(False, "gdb is installed (scripts/bootstrap.sh with PROFILE2_TEST_PACKAGES=1 installs it)")
    gdb = gdb_starts(path, sample + [o for o, _ in probe["thread"]]) if have_debug and have_gdb else {}
    dbg_syms = symbols(debug, False) if have_debug else {}
    plain = re.compile(re.escape(mod) + r"\+0x([0-9a-f]+)$")

    # (a) with the debug file
    if not have_debug:
        print("SKIP  (a) names from the separate debug file: %s" %
              ("%s has a .symtab of its own" % path if has_symtab else
               "no %s (install libc6-dbg)" % (debug or "build id in " + path)))
    else:
        a = run_tool(tool, sample, {})
        check(a.get("debug_files", 0) >= 1, "(a) the debug file %s was read" % debug)
        names = [n for _, n in a["thread"]]
        check(names == ["start_thread", "clone3"], "(a) a new thread's frames below it: %s" % names)
        bad = []
        for o in sample + [o for o, _ in a["thread"]]:
            n = a["names"].get(o) or dict(a["thread"]).get(o)
            if gdb.get(o) is None or gdb[o] not in [s for s, _ in dbg_syms.get(n, [])]:
                bad.append("0x%x %s (gdb: function at %s)" % (o, n, "0x%x" % gdb[o] if gdb.get(o) else None))
        check(not bad, "(a) %d sampled pcs named by the debug file's symbol of the function gdb finds (%d differ: %s)"
              % (len(sample) + len(a["thread"]), len(bad), bad[:8]))

    # (b) without any debug file
    b = run_tool(tool, sample, {"PROFILE2_DEBUG_DIRS": ""})
    check(b.get("debug_files", 1) == 0, "(b) PROFILE2_DEBUG_DIRS= reads no debug file")
    dyn = symbols(path, True)
    named = positions = 0
    bad = []
    for o, n in list(b["names"].items()) + b["thread"]:
        m = plain.match(n)
        if m:
            positions += 1
            if int(m.group(1), 16) != o:
                bad.append("0x%x %s (wrong offset)" % (o, n))
            continue
        named += 1
        f = covering_fde(fd, o)
        ok = any(s <= o < s + z or (f is not None and s == f[0]) for s, z in dyn.get(n, []))
        if gdb and gdb.get(o) is not None:
            ok = ok and gdb[o] in [s for s, _ in dyn.get(n, [])]
        if not ok:
            bad.append("0x%x %s" % (o, n))
    total = named + positions
    print("info  (b) %d pcs: %d named by an exported symbol containing them, %d as %s+0x..." %
          (total, named, positions, mod))
    check(not bad, "(b) every name is an exported symbol containing the pc or %s+0x<offset> (%d are not: %s)"
          % (mod, len(bad), bad[:8]))
    check(all(plain.match(n) for _, n in b["thread"]) and len(b["thread"]) == 2,
          "(b) the thread's start frames are positions: %s" % [n for _, n in b["thread"]])
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
