#!/usr/bin/env python3
"""Compares profile2's compact unwind table of a module (cfi_rows output)
with readelf's interpretation of the same CFI (readelf -wF: one row per
location of every FDE, with the CFA rule and each register's rule).

For each readelf row, the rule the compact table should hold there:
  return address undefined           -> outermost (kind 2)
  CFA rsp+n / rbp+n, ra at c-8, rbp
  unchanged (u) or at c+m            -> kind 3 / 4 with n (and m)
  anything else (exp, other
  registers, other rules)            -> fallback (kind 1: libunwind)
and the rule the table gives for that location. Prints the counts and the
first differences.

usage: cfi_check.py ROWS_FILE   (the module's path is on its first line)
"""
import bisect
import collections
import re
import subprocess
import sys


def expected(cfa, rbp, ra):
    if ra == "u":
        return (2,)
    m = re.match(r"(rsp|rbp)\+(\d+)$", cfa)
    if not m or ra != "c-8":
        return (1,)
    kind = 3 if m.group(1) == "rsp" else 4
    if rbp in ("u", "s"):
        return (kind, int(m.group(2)), 0, 0)
    m2 = re.match(r"c([+-]\d+)$", rbp)
    return (kind, int(m.group(2)), 1, int(m2.group(1))) if m2 else (1,)


def main():
    lines = open(sys.argv[1]).read().split("\n")
    _, text, elf = lines[0].split(maxsplit=2)
    text = int(text, 16)
    pcs, rules = [], []
    for line in lines[1:]:
        f = line.split()
        if f:
            pcs.append(int(f[0], 16) + text)
            rules.append(tuple(int(x) for x in f[1:]))
    out = subprocess.run(["readelf", "-wF", elf], capture_output=True, text=True).stdout  # exits 1 on warnings (no debug link)
    counts, first = collections.Counter(), []
    cie_rows = {}  # CIE offset -> its initial row: what an FDE without instructions has throughout

    def check(loc, row):
        want = expected(row["CFA"], row.get("rbp", "u"), row.get("ra", "u"))
        i = bisect.bisect_right(pcs, loc) - 1
        got = rules[i] if i >= 0 else None
        if got is not None and got[0] in (0, 1, 2):
            got = (got[0],)
        counts["rows"] += 1
        if got == want:
            counts["equal"] += 1
            counts["fallback" if want == (1,) else "outermost" if want == (2,) else "compact"] += 1
        else:
            counts["different"] += 1
            if len(first) < 10:
                first.append(f"  at {loc:#x}: readelf CFA={row['CFA']} rbp={row.get('rbp', 'u')}"
                             f" ra={row.get('ra', 'u')}, expected {want}, table {got}")

    for block in out.split("\n\n"):
        blines = [l for l in block.split("\n") if l.strip()]
        if not blines:
            continue
        cie = re.match(r"([0-9a-f]+) \S+ \S+ CIE", blines[0])
        fde = re.search(r"FDE cie=([0-9a-f]+) pc=([0-9a-f]+)\.\.", blines[0])
        head = next((i for i, l in enumerate(blines) if l.strip().startswith("LOC")), None)
        table = []
        if head is not None:
            cols = blines[head].split()
            table = [dict(zip(cols, l.split())) for l in blines[head + 1:] if len(l.split()) == len(cols)]
        if cie and table:
            cie_rows[cie.group(1)] = table[-1]
        elif fde and table:
            for row in table:
                check(int(row["LOC"], 16), row)
        elif fde and fde.group(1) in cie_rows:
            check(int(fde.group(2), 16), cie_rows[fde.group(1)])
    print(f"CFICHECK elf={elf} rows={counts['rows']} equal={counts['equal']} different={counts['different']}"
          f" compact={counts['compact']} fallback={counts['fallback']} outermost={counts['outermost']}")
    for line in first:
        print(line)
    return 0 if counts["rows"] > 0 and counts["different"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
