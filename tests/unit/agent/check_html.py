#!/usr/bin/env python3
"""The HTML flame graph's data, read by Python's json module and checked
against the tree it came from.

Runs html_fixture, which writes an HTML file and the collapsed stacks of
the same tree, and prints the hostile frame names it used (hex). Checks:

- the file is ASCII and references nothing external (no http:// or https://);
- the data element holds exactly one JSON object, nothing ends it early;
- every hostile name decodes to what a browser shows for its bytes
  (UTF-8 with U+FFFD for invalid sequences, as Python's "replace" does);
- the flat preorder node array is consistent (child totals never exceed the
  parent's) and its leaf paths with self weights are the collapsed lines.

Usage: check_html.py HTML_FIXTURE"""
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter

OPEN = '<script type="application/json" id="p2-data">'


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def main():
    fixture = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        html_path, coll_path = os.path.join(d, 'f.html'), os.path.join(d, 'f.collapsed')
        out = subprocess.run([fixture, html_path, coll_path], check=True, stdout=subprocess.PIPE).stdout
        hostile = [bytes.fromhex(h) for h in out.decode().split()]
        with open(html_path, 'rb') as f:
            raw = f.read()
        with open(coll_path, 'rb') as f:
            collapsed = f.read()

    if any(b > 0x7e or (b < 0x20 and b not in (9, 10, 13)) for b in raw):
        fail('non-ASCII or control bytes in the HTML file')
    html = raw.decode('ascii')
    if re.search(r'https?://', html):
        fail('the page references http:// or https://')
    if html.count(OPEN) != 1:
        fail('expected exactly one data element')
    start = html.index(OPEN) + len(OPEN)
    end = html.lower().index('</script', start)
    data_text = html[start:end]
    if '<' in data_text or '>' in data_text or '&' in data_text:
        fail('raw < > or & inside the data element')
    data = json.loads(data_text)  # raises on anything but one JSON value
    if not html[end:].startswith('</script>'):
        fail('data element not closed by the template')
    if '@P2_' in html[:start] or '@P2_' in html[end:]:
        fail('a template marker was left in the page')
    if data['title'] != 'fixture </title><script>alert(4)</script> \ufffd':
        fail('title decodes to %r' % data['title'])
    if data['stats'] != [['samples', '5014'], ['<b>lost</b>', '0 </script>']]:
        fail('stats decode to %r' % data['stats'])

    names = data['names']
    frames = data['frames']
    if len(data['kinds']) != 11 or data['kinds'][0] != 'interpreted' or data['kinds'][10] != 'vm_code':
        fail('unexpected kinds %r' % data['kinds'])

    # Hostile names were written as C1 frames, so with the "_[1]" suffix.
    for h in hostile:
        want = h.decode('utf-8', 'replace') + '_[1]'
        if want not in names:
            fail('hostile name %r not found decoded as %r' % (h, want))

    # Rebuild the leaf paths and their self weights from the preorder array:
    # four numbers a node (frame, children, total weight, total samples).
    nodes = data['nodes']
    if len(nodes) % 4 != 0 or not nodes or nodes[0] != -1:
        fail('node array malformed or not starting with the root')
    n = len(nodes) // 4
    got = Counter()
    stack = []  # [path, children left, total, children's totals]
    for i in range(n):
        f, nkids, total, _samples = nodes[4 * i:4 * i + 4]
        if stack:
            if f < 0:
                fail('root frame below the root')
            stack[-1][1] -= 1
            stack[-1][3] += total
            path = stack[-1][0] + [names[frames[2 * f]]]
        else:
            if i != 0:
                fail('a second tree after the root closed')
            path = []
        stack.append([path, nkids, total, 0])
        while stack and stack[-1][1] == 0:
            path, _, total, kids = stack.pop()
            if kids > total:
                fail('children weigh more than their parent at %r' % path)
            if total > kids and path:
                got[';'.join(collapsed_form(x) for x in path)] += total - kids
    if stack:
        fail('node array ends inside a subtree')

    want = Counter()
    for line in collapsed.split(b'\n'):
        if line:
            stack_bytes, weight = line.rsplit(b' ', 1)
            want[stack_bytes.decode('utf-8', 'replace')] += int(weight)
    if got != want:
        diff = set(got.items()) ^ set(want.items())
        fail('HTML leaf paths differ from the collapsed stacks, e.g. %r' % sorted(diff)[:3])
    print('ok: %d nodes, %d names, %d leaf paths, %d hostile names' % (n, len(names), len(want), len(hostile)))


def collapsed_form(name):
    """What the collapsed writer does to characters it cannot carry."""
    return ''.join(':' if c == ';' else '?' if ord(c) < 0x20 else c for c in name)


if __name__ == '__main__':
    main()
