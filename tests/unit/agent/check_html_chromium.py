#!/usr/bin/env python3
"""The HTML flame graph, driven in headless Chromium as a user would.

Writes a known profile as collapsed stacks (PROFILE below), turns it into
the agent's HTML page with html_from_collapsed (the agent's own reader and
writer), adds html_chromium_test.js and the expected layout to a copy of the
page, loads it in headless Chromium and reads back the verdict the script
writes into the DOM. The script checks, on the real page:

  render  every frame of the profile is drawn once, where its weight puts it
          (children sorted by name, widths proportional, root at the bottom),
          nothing else is drawn, the labels belong to their frames, and the
          canvas pixels are those colours (empty above self time);
  hover   the status bar names the frame under the pointer and its share;
  search  Ctrl+F focuses the search box; typing a regular expression
          highlights exactly the frames whose name matches and shows the
          matched share, a matching subtree counted once; no match says so;
          clearing the box restores every colour;
  zoom    a click on a frame draws it at the full width with its subtree
          relative to it, its callers dimmed at the full width, nothing
          else, the tooltip gives a frame's share of the zoomed one, and
          the canvas shrinks to the subtree's depth;
  reset   the Reset button and Esc bring back exactly the first drawing;
  flip    the Icicle button puts the root at the top, and back;
  errors  the page raised no script error.

Nothing waits for a fixed time: the script polls for the page's state
(redrawn canvas, updated text) and Chromium runs with a virtual time
budget, so the debounce timers fire as soon as the page is idle.

Usage: check_html_chromium.py HTML_FROM_COLLAPSED TEST_JS [--keep DIR]
                              [--html PAGE] [--screenshot PNG]

  --keep DIR        keep the profile, the page, the test page and the DOM
  --html PAGE       test PAGE (an HTML page of PROFILE, e.g. one kept with
                    --keep and then edited) instead of writing one
  --screenshot PNG  also save a screenshot of the untouched page

CHROMIUM=/path/to/chromium overrides the browser (default: `chromium` on
PATH, Debian's package `chromium`)."""
import argparse
import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# Weights are 10 ms steps (html_from_collapsed), 1000 in all. Db.query is
# called from two places (550 = 55.00 %) and calls read (450 = 45.00 %:
# "query|`read" is 55.00 %, read counted once as part of Db.query);
# Worker.run (300) has Cache.get (125: 41.67 % of it) left of Db.query.
PROFILE = """\
java/lang/Thread.run;app/Server.handle;app/Db.query;libc.so.6`read 300
java/lang/Thread.run;app/Server.handle;app/Db.query 100
java/lang/Thread.run;app/Server.handle;app/Json.encode 200
java/lang/Thread.run;app/Server.handle 50
java/lang/Thread.run;app/Worker.run;app/Db.query;libc.so.6`read 150
java/lang/Thread.run;app/Worker.run;app/Cache.get 125
java/lang/Thread.run;app/Worker.run 25
[GC];libjvm.so`G1CollectedHeap::collect 50
"""
INTERVAL_NS = 10000000

# Searches as typed into the box (regular expressions), and zooms: the frame
# clicked and the frame hovered while zoomed.
SEARCHES = [r'Db\.query', 'query|`read', 'Cache', 'no-such-frame']
ZOOMS = [
    {'path': 'java/lang/Thread.run;app/Worker.run', 'hover': 'java/lang/Thread.run;app/Worker.run;app/Cache.get'},
    {'path': '[GC]', 'hover': '[GC];libjvm.so`G1CollectedHeap::collect'},
]
HOVER = 'java/lang/Thread.run;app/Server.handle;app/Json.encode'

CHECKS = ['render', 'hover', 'search', 'zoom', 'reset', 'flip', 'errors']
VERDICT = re.compile(r'<pre id="p2-test-verdict"[^>]*>(.*?)</pre>', re.S)
TIMEOUT_S = 60


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def fmt_weight(v):
    """The page's duration format (fmtWeight for nanoseconds)."""
    x = v * INTERVAL_NS
    for div, unit in ((1e9, 's'), (1e6, 'ms'), (1e3, 'us')):
        if x >= div:
            return '%.2f %s' % (x / div, unit)
    return '%d ns' % x


def pct(v, of):
    return '%.2f%%' % (100.0 * v / of)


def expectations():
    """The tree of PROFILE laid out as a flame graph: each node's depth,
    left edge and width as fractions of the root, children sorted by name."""
    root = {'name': 'all', 'total': 0, 'kids': {}}
    for line in PROFILE.splitlines():
        frames, weight = line.rsplit(' ', 1)
        node = root
        node['total'] += int(weight)
        for f in frames.split(';'):
            node = node['kids'].setdefault(f, {'name': f, 'total': 0, 'kids': {}})
            node['total'] += int(weight)
    total = root['total']
    nodes = []

    def walk(node, path, depth, x0):
        kids_total = sum(k['total'] for k in node['kids'].values())
        nodes.append({'path': ';'.join(path), 'name': node['name'], 'depth': depth, 'x0': x0 / total,
                      'w': node['total'] / total, 'total': node['total'], 'self': node['total'] - kids_total,
                      'kidsEnd': (x0 + kids_total) / total})
        x = x0
        for name in sorted(node['kids']):  # byte order, as the writer's strcmp
            walk(node['kids'][name], path + [name], depth + 1, x)
            x += node['kids'][name]['total']

    walk(root, [], 0, 0)
    by_path = {n['path']: n for n in nodes}

    searches = []
    for q in SEARCHES:
        matches = [n['path'] for n in nodes if n['depth'] > 0 and re.search(q, n['name'])]
        # The matched share counts a matching frame's subtree once.
        top = [p for p in matches if not any(p.startswith(m + ';') for m in matches)]
        weight = sum(by_path[p]['total'] for p in top)
        searches.append({'query': q, 'matches': matches, 'pct': pct(weight, total) if matches else None,
                         'weight': fmt_weight(weight) if matches else None})

    def hover(path, zoom=None):
        n = by_path[path]
        h = {'path': path, 'name': n['name'], 'pct': pct(n['total'], total), 'weight': fmt_weight(n['total'])}
        if zoom:
            h['zoomPct'] = pct(n['total'], by_path[zoom]['total'])
        return h

    zooms = [{'path': z['path'], 'hover': hover(z['hover'], z['path'])} for z in ZOOMS]
    return {'total': total, 'nodes': nodes, 'maxDepth': max(n['depth'] for n in nodes), 'searches': searches,
            'zooms': zooms, 'hover': hover(HOVER), 'checks': CHECKS}


def script_json(obj):
    """JSON that cannot end the <script> element it is put in."""
    return json.dumps(obj).replace('<', '\\u003c').replace('>', '\\u003e').replace('&', '\\u0026')


def test_page(page, test_js, expect):
    """The page with the expectations and the test script put in front of
    the page's own script, so that its canvas hooks see the first drawing."""
    anchor = '<script type="application/json" id="p2-data">'
    if page.count(anchor) != 1:
        fail('the page has no single data element to put the test script before')
    inject = ('<script>window.P2_EXPECT = %s;</script>\n<script>\n%s\n</script>\n' %
              (script_json(expect), test_js.replace('</script', '<\\/script')))
    return page.replace(anchor, inject + anchor)


def chromium_binary():
    exe = os.environ.get('CHROMIUM') or shutil.which('chromium')
    if not exe or not os.access(exe, os.X_OK):
        fail('chromium not found (looked for %s): install the Debian package `chromium` '
             '(apt-get install chromium); the HTML flame graph is tested in headless Chromium' %
             (os.environ.get('CHROMIUM') or '`chromium` on PATH'))
    return exe


def run_chromium(exe, tmp, url, action, budget_ms=30000):
    """Headless Chromium on url with a private profile; action is
    ['--dump-dom'] or ['--screenshot=PNG']. Returns (stdout, stderr).
    The browser and its helpers are in a process group of their own, killed
    as a whole on timeout."""
    profile = tempfile.mkdtemp(prefix='chromium-profile-', dir=tmp)
    cmd = [exe, '--headless=new', '--no-sandbox', '--disable-gpu', '--user-data-dir=' + profile,
           '--no-first-run', '--no-default-browser-check', '--disable-extensions', '--disable-sync',
           '--disable-background-networking', '--disable-component-update', '--disable-default-apps',
           '--disable-dev-shm-usage', '--mute-audio', '--hide-scrollbars', '--force-device-scale-factor=1',
           '--window-size=1200,900', '--virtual-time-budget=%d' % budget_ms] + action + [url]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        fail('chromium did not finish within %d s; its stderr ends with:\n%s' %
             (TIMEOUT_S, err.decode(errors='replace')[-2000:]))
    finally:
        # Helpers (zygote, renderer, crashpad) may outlive the browser.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if proc.returncode != 0:
        fail('chromium exited with %d; its stderr ends with:\n%s' %
             (proc.returncode, err.decode(errors='replace')[-2000:]))
    return out.decode(errors='replace'), err.decode(errors='replace')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('fixture')
    ap.add_argument('test_js')
    ap.add_argument('--keep')
    ap.add_argument('--html')
    ap.add_argument('--screenshot')
    args = ap.parse_args()
    exe = chromium_binary()
    started = time.monotonic()

    with tempfile.TemporaryDirectory(prefix='p2-html-chromium-') as tmp:
        work = args.keep or tmp
        os.makedirs(work, exist_ok=True)
        page_path = os.path.join(work, 'page.html')
        if args.html:
            shutil.copyfile(args.html, page_path)
        else:
            coll = os.path.join(work, 'profile.collapsed')
            with open(coll, 'w') as f:
                f.write(PROFILE)
            r = subprocess.run([args.fixture, coll, page_path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if r.returncode != 0:
                fail('html_from_collapsed failed: %s' % r.stdout.decode(errors='replace'))
        with open(page_path, encoding='ascii') as f:
            page = f.read()
        with open(args.test_js) as f:
            test_js = f.read()
        test_path = os.path.join(work, 'test.html')
        with open(test_path, 'w') as f:
            f.write(test_page(page, test_js, expectations()))

        if args.screenshot:
            run_chromium(exe, tmp, 'file://' + os.path.abspath(page_path),
                         ['--screenshot=' + os.path.abspath(args.screenshot)])
            print('screenshot of the page: %s' % args.screenshot)
        dom, err = run_chromium(exe, tmp, 'file://' + os.path.abspath(test_path), ['--dump-dom'])
        if args.keep:
            with open(os.path.join(work, 'dom.html'), 'w') as f:
                f.write(dom)

    found = VERDICT.findall(dom)  # the last: the element at the end of the body
    if not found:
        fail('no verdict in the page: the test script did not run (script blocked, or the page failed '
             'to load). Chromium stderr ends with:\n%s' % err[-2000:])
    verdict = json.loads(html.unescape(found[-1]))
    failed = 0
    results = {c['name']: c for c in verdict.get('checks', [])}
    for name in CHECKS:
        c = results.get(name)
        if c is None:
            failed += 1
            print('FAIL %-7s not run (the script stopped at: %s)' % (name, verdict.get('stage')))
        elif c['ok']:
            print('ok   %-7s %s' % (name, '; '.join(c.get('notes', []))))
        else:
            failed += 1
            print('FAIL %-7s %s' % (name, c['errors'][0]))
            for e in c['errors'][1:12]:
                print('             ' + e)
            if len(c['errors']) > 12:
                print('             ... and %d more' % (len(c['errors']) - 12))
    if not verdict.get('done'):
        failed += 1
        print('FAIL the test script did not finish (stopped at: %s); raise the virtual time budget?' %
              verdict.get('stage'))
    print('%.1f s' % (time.monotonic() - started))
    if failed:
        fail('%d of %d checks of the flame graph page failed in Chromium' % (failed, len(CHECKS)))
    print('ok: the flame graph renders, searches, zooms and resets in Chromium')


if __name__ == '__main__':
    main()
