// The flame graph page's test, run inside the page in headless Chromium by
// check_html_chromium.py, which puts this script and window.P2_EXPECT (the
// profile's expected layout) in front of the page's own script.
//
// It watches the page from outside: the canvas calls are recorded by hooks
// installed here, before the page's script draws anything, and the page is
// used through DOM events only (mouse moves and clicks at client
// coordinates, Ctrl+F, typing into the search box, the buttons, Esc). The
// expected geometry comes from the profile (P2_EXPECT), not from the page's
// code. The verdict is JSON in a pre element (id p2-test-verdict) appended
// to the body, rewritten after every stage so that a stuck run still tells
// where it stopped.
(function () {
  'use strict';
  var E = window.P2_EXPECT;

  // --- hooks: what is on the canvas ---------------------------------------------
  // A canvas shows the calls made since it was last cleared (resizing it clears
  // it), so the drawing on screen is the last segment of the recorded calls.
  var segments = [[]], clears = 0, pageErrors = [];
  window.addEventListener('error', function (e) {
    pageErrors.push(e.message + ' (' + e.filename + ':' + e.lineno + ')');
  });
  function newSegment() { segments.push([]); clears++; }
  ['width', 'height'].forEach(function (prop) {
    var d = Object.getOwnPropertyDescriptor(HTMLCanvasElement.prototype, prop);
    Object.defineProperty(HTMLCanvasElement.prototype, prop, {
      configurable: true, enumerable: d.enumerable, get: d.get,
      set: function (v) { newSegment(); d.set.call(this, v); }
    });
  });
  var C2D = CanvasRenderingContext2D.prototype;
  var fillRect = C2D.fillRect, fillText = C2D.fillText, clearRect = C2D.clearRect;
  C2D.fillRect = function (x, y, w, h) {
    segments[segments.length - 1].push({op: 'rect', x: x, y: y, w: w, h: h, fill: this.fillStyle, alpha: this.globalAlpha});
    return fillRect.apply(this, arguments);
  };
  C2D.fillText = function (text, x, y) {
    segments[segments.length - 1].push({op: 'text', text: String(text), x: x, y: y});
    return fillText.apply(this, arguments);
  };
  C2D.clearRect = function (x, y, w, h) {
    var c = this.canvas, t = this.getTransform();
    if (x * t.a + t.e <= 0 && y * t.d + t.f <= 0 && (x + w) * t.a + t.e >= c.width && (y + h) * t.d + t.f >= c.height)
      newSegment();
    else
      segments[segments.length - 1].push({op: 'clear', x: x, y: y, w: w, h: h});
    return clearRect.apply(this, arguments);
  };
  function drawing() { return segments[segments.length - 1]; }

  // --- the verdict --------------------------------------------------------------
  var verdict = {done: false, stage: 'waiting for load', checks: []}, checks = {};
  E.checks.forEach(function (name) { checks[name] = {name: name, ok: true, errors: [], notes: []}; });
  function err(check, msg) { checks[check].ok = false; checks[check].errors.push(msg); }
  function note(check, msg) { checks[check].notes.push(msg); }
  function publish() {
    var pre = document.getElementById('p2-test-verdict');
    if (!pre) {
      pre = document.createElement('pre');
      pre.id = 'p2-test-verdict';
      pre.style.display = 'none';
      document.body.appendChild(pre);
    }
    verdict.checks = E.checks.map(function (n) { return checks[n]; }).filter(function (c) { return c.ran; });
    pre.textContent = JSON.stringify(verdict);
  }
  function stage(s, check) { verdict.stage = s; if (check) checks[check].ran = true; publish(); }

  // --- waiting without timing luck: poll for a state, fail after a long while
  // (virtual time: Chromium runs the timers as soon as the page is idle).
  function sleep(ms) { return new Promise(function (r) { setTimeout(r, ms); }); }
  async function waitFor(cond, what, ms) {
    var t0 = performance.now();
    while (!cond()) {
      if (performance.now() - t0 > (ms || 3000)) throw new Error('timed out after ' + (ms || 3000) + ' ms waiting for ' + what);
      await sleep(10);
    }
  }

  // --- the expected layout --------------------------------------------------------
  var byPath = {};
  E.nodes.forEach(function (n) { byPath[n.path] = n; });
  function isBelow(p, z) { return z === '' ? p !== '' : p.indexOf(z + ';') === 0; }
  // What a view zoomed to z shows: its callers at the full width, dimmed; z at
  // the full width; its subtree relative to it.
  function layout(z) {
    var zn = byPath[z], items = [], rows = 0;
    E.nodes.forEach(function (n) {
      if (isBelow(z, n.path)) items.push({n: n, x0: 0, w: 1, dim: true});
      else if (n.path === z || isBelow(n.path, z)) {
        items.push({n: n, x0: (n.x0 - zn.x0) / zn.w, w: n.w / zn.w, dim: false});
        rows = Math.max(rows, n.depth + 1);
      }
    });
    return {items: items, rows: rows};
  }

  var canvas = document.getElementById('canvas'), pitch = 0, base = null, firstDrawing = null;
  function geometry() { return canvas.getBoundingClientRect(); }
  function rowY(d, rows, flame) { return (flame ? rows - 1 - d : d) * pitch; }
  function fmt(v) { return Math.round(v * 100) / 100; }
  // Where each frame of the view should be, in canvas (CSS) pixels.
  function place(view, flame) {
    var width = geometry().width;
    return view.items.map(function (it) {
      return {it: it, x: it.x0 * width, w: it.w * width, y: rowY(it.n.depth, view.rows, flame)};
    });
  }
  function center(p) {
    var g = geometry();
    return {x: g.left + p.x + p.w / 2, y: g.top + p.y + pitch / 2};
  }

  // Compare what is on the canvas with the view: every frame exactly once at
  // its place and width, nothing else, labels inside their frames. Returns
  // path -> the rectangle drawn for it.
  function checkDrawing(check, what, view, flame) {
    var ops = drawing(), g = geometry(), got = {}, used = [];
    var rects = ops.filter(function (o) { return o.op === 'rect'; });
    if (rects.length === 0) { err(check, what + ': nothing drawn on the canvas'); return got; }
    if (Math.abs(g.height - view.rows * pitch) > 0.5)
      err(check, what + ': the canvas is ' + fmt(g.height) + ' px high, expected ' + view.rows + ' rows of ' + pitch + ' px');
    ops.forEach(function (o) { if (o.op === 'clear') err(check, what + ': a partial clearRect at ' + fmt(o.x) + ',' + fmt(o.y)); });
    place(view, flame).forEach(function (p) {
      var name = p.it.n.path || 'all';
      var hits = rects.filter(function (r) { return Math.abs(r.x - p.x) < 0.05 && Math.abs(r.y - p.y) < 0.5; });
      if (hits.length !== 1) {
        err(check, what + ': frame ' + name + ' (depth ' + p.it.n.depth + ') drawn ' + hits.length +
            ' times at x=' + fmt(p.x) + ' y=' + fmt(p.y) + ' (expected once)');
        return;
      }
      var r = hits[0];
      used.push(r);
      got[p.it.n.path] = r;
      if (r.w > p.w + 0.05 || r.w < p.w - 1.05)
        err(check, what + ': frame ' + name + ' is ' + fmt(r.w) + ' px wide, expected ' + fmt(p.w) + ' (less a 1 px gap at most)');
      if (r.h > pitch + 0.05 || r.h < pitch - 1.05)
        err(check, what + ': frame ' + name + ' is ' + fmt(r.h) + ' px high, expected a row of ' + pitch + ' px');
      if (p.it.dim ? !(r.alpha > 0 && r.alpha < 1) : r.alpha !== 1)
        err(check, what + ': frame ' + name + ' drawn with opacity ' + r.alpha + (p.it.dim ? ', expected dimmed' : ', expected opaque'));
      // The pixels: the frame's colour in its top row (labels sit lower).
      var want = rgba(r.fill), px = pixel(p.x + r.w / 2, p.y + 1);
      if (want) want[3] = Math.round(want[3] * r.alpha);
      if (!want || px.some(function (v, k) { return Math.abs(v - want[k]) > 3; }))
        err(check, what + ': the pixels of frame ' + name + ' are rgba(' + px + '), it was drawn as ' + r.fill + ' at opacity ' + r.alpha);
    });
    rects.forEach(function (r) {
      if (used.indexOf(r) < 0)
        err(check, what + ': a rectangle that is no frame of this view at x=' + fmt(r.x) + ' y=' + fmt(r.y) + ' w=' + fmt(r.w));
    });
    // Labels: each inside one frame, its name or a shortening of it; a frame
    // of 400 px or more shows its whole name.
    var placed = place(view, flame), full = {};
    ops.forEach(function (o) {
      if (o.op !== 'text') return;
      var owner = placed.filter(function (p) { return o.x >= p.x && o.x < p.x + p.w && o.y >= p.y && o.y < p.y + pitch; })[0];
      if (!owner) { err(check, what + ': label "' + o.text + '" outside every frame'); return; }
      var name = owner.it.n.name;
      if (o.text === name) full[owner.it.n.path] = true;
      else if (!(o.text.length > 2 && o.text.slice(-2) === '..' && name.indexOf(o.text.slice(0, -2)) === 0))
        err(check, what + ': label "' + o.text + '" on frame ' + name);
    });
    placed.forEach(function (p) {
      if (p.w >= 400 && !full[p.it.n.path]) err(check, what + ': frame ' + p.it.n.name + ' (' + fmt(p.w) + ' px) without its full name as label');
    });
    return got;
  }

  function rgba(css) {
    var m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(css);
    if (m) return [parseInt(m[1], 16), parseInt(m[2], 16), parseInt(m[3], 16), 255];
    m = /^rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)$/.exec(css);
    if (m) return [+m[1], +m[2], +m[3], m[4] === undefined ? 255 : Math.round(255 * m[4])];
    return null;
  }
  function pixel(x, y) {
    var dpr = canvas.width / geometry().width;
    return Array.from(canvas.getContext('2d').getImageData(Math.floor(x * dpr), Math.floor(y * dpr), 1, 1).data);
  }

  // --- user actions -------------------------------------------------------------
  function mouse(type, at, target) {
    (target || canvas).dispatchEvent(new MouseEvent(type, {clientX: at.x, clientY: at.y, bubbles: true, cancelable: true, view: window, button: 0}));
  }
  function click(at) { ['mousemove', 'mousedown', 'mouseup', 'click'].forEach(function (t) { mouse(t, at); }); }
  function key(target, k, opts) {
    var o = {key: k, bubbles: true, cancelable: true};
    for (var p in opts || {}) o[p] = opts[p];
    var e = new KeyboardEvent('keydown', o);
    target.dispatchEvent(e);
    target.dispatchEvent(new KeyboardEvent('keyup', o));
    return e;
  }
  var search = document.getElementById('search'), matchText = document.getElementById('match');
  var typedNatively = true;
  // Typing: a key event and the text inserted through the editing command,
  // which fires input as a keystroke does.
  function typeChar(ch) {
    var before = search.value;
    search.dispatchEvent(new KeyboardEvent('keydown', {key: ch, bubbles: true, cancelable: true}));
    if (!document.execCommand('insertText', false, ch) || search.value !== before + ch) {
      typedNatively = false;
      search.value = before + ch;
      search.dispatchEvent(new InputEvent('input', {bubbles: true, inputType: 'insertText', data: ch}));
    }
    search.dispatchEvent(new KeyboardEvent('keyup', {key: ch, bubbles: true, cancelable: true}));
  }
  function clearBox() {
    search.focus();
    search.select();
    if (!document.execCommand('delete') || search.value !== '') {
      typedNatively = false;
      search.value = '';
      search.dispatchEvent(new InputEvent('input', {bubbles: true, inputType: 'deleteContentBackward'}));
    }
  }
  async function redrawn(mark, what) {
    await waitFor(function () { return clears > mark && drawing().length > 0; }, 'the canvas to be redrawn after ' + what);
  }

  function sameDrawing(check, what, a, b) {
    var s = function (ops) { return ops.map(function (o) { return JSON.stringify(o); }); };
    var x = s(a), y = s(b);
    if (x.length !== y.length) { err(check, what + ': ' + y.length + ' calls drawn, the first drawing had ' + x.length); return; }
    for (var i = 0; i < x.length; i++)
      if (x[i] !== y[i]) { err(check, what + ': differs from the first drawing at call ' + i + ': ' + y[i] + ' instead of ' + x[i]); return; }
  }

  // --- the checks ---------------------------------------------------------------
  var fullView = null;

  function checkRender() {
    stage('render', 'render');
    if (!canvas) throw new Error('no canvas#canvas in the page');
    var g = geometry();
    fullView = layout('');
    pitch = Math.round(g.height / fullView.rows * 100) / 100;
    if (!(g.width > 100 && pitch >= 8 && pitch <= 40))
      err('render', 'canvas of ' + fmt(g.width) + ' x ' + fmt(g.height) + ' px for ' + fullView.rows + ' rows');
    firstDrawing = drawing().slice();
    base = checkDrawing('render', 'first drawing', fullView, true);
    var nframes = Object.keys(base).length;
    note('render', nframes + ' of ' + fullView.items.length + ' frames in ' + firstDrawing.length + ' canvas calls, ' +
         fmt(g.width) + ' x ' + fmt(g.height) + ' px, ' + pitch + ' px rows');
    // Nothing above the self time of a frame.
    E.nodes.forEach(function (n) {
      if (n.self > 0 && n.depth + 1 < fullView.rows) {
        var ex = ((n.kidsEnd + n.x0 + n.w) / 2) * g.width, ey = rowY(n.depth + 1, fullView.rows, true) + pitch / 2;
        var e = pixel(ex, ey);
        if (e[3] !== 0) err('render', 'above the self time of ' + (n.path || 'all') + ' the canvas is rgba(' + e + '), expected empty');
      }
    });
    // On screen, not covered by the header or the status bar.
    var c = center({x: 0, y: rowY(0, fullView.rows, true), w: g.width});
    var top = document.elementFromPoint(c.x, c.y);
    if (top !== canvas) err('render', 'the root frame is covered by ' + (top ? top.tagName + '#' + top.id : 'nothing (off screen)'));
    var labels = firstDrawing.filter(function (o) { return o.op === 'text'; }).length;
    note('render', labels + ' labels, pixels checked');
  }

  // The pointer on frame h (of the view): the status bar and the tooltip name
  // it and give its weight and its share of the total (weight and samples),
  // and when zoomed its share of the zoomed frame.
  var tip = document.getElementById('tip'), status = document.getElementById('status');
  function percents(s) { return s.match(/\d+(\.\d+)?%/g) || []; }
  function allAre(list, v) { return list.length > 0 && list.every(function (x) { return x === v; }); }
  function checkPointer(check, what, h, view) {
    var p = place(view, true).filter(function (q) { return q.it.n.path === h.path; })[0];
    mouse('mousemove', center(p));
    var st = status.textContent, lines = tip.textContent.split('\n');
    var total = lines.filter(function (l) { return /^total:/.test(l); })[0] || '';
    var zoomed = lines.filter(function (l) { return /zoomed/.test(l); });
    if (st.indexOf(h.name) !== 0 || !allAre(percents(st), h.pct) || st.indexOf(h.weight) < 0)
      err(check, what + ': the status bar over ' + h.name + ' reads ' + JSON.stringify(st) + ', expected its name, ' + h.weight + ' and ' + h.pct);
    if (getComputedStyle(tip).display === 'none')
      err(check, what + ': no tooltip over ' + h.name);
    else if (lines[0] !== h.name || !allAre(percents(total), h.pct) || total.indexOf(h.weight) < 0 ||
             (h.zoomPct ? zoomed.length !== 1 || !allAre(percents(zoomed[0]), h.zoomPct) : zoomed.length !== 0))
      err(check, what + ': the tooltip over ' + h.name + ' reads ' + JSON.stringify(tip.textContent) + ', expected its name, ' + h.weight +
          ' and ' + h.pct + ' of the total' + (h.zoomPct ? ', ' + h.zoomPct + ' of the zoomed frame' : ''));
    return st;
  }

  function checkHover() {
    stage('hover', 'hover');
    var st = checkPointer('hover', 'whole tree', E.hover, fullView);
    // Above a frame's self time: no frame there.
    var n = E.nodes.filter(function (q) { return q.depth > 0 && q.self > 0 && q.depth + 1 < fullView.rows; })[0];
    var g = geometry();
    if (n) {
      mouse('mousemove', {x: g.left + ((n.kidsEnd + n.x0 + n.w) / 2) * g.width, y: g.top + rowY(n.depth + 1, fullView.rows, true) + pitch / 2});
      if (getComputedStyle(tip).display !== 'none') err('hover', 'tooltip shown over an empty place: ' + JSON.stringify(tip.textContent));
    }
    mouse('mouseleave', {x: 0, y: 0});
    if (getComputedStyle(tip).display !== 'none') err('hover', 'tooltip still shown after the pointer left the canvas');
    note('hover', JSON.stringify(st));
  }

  async function checkSearch() {
    stage('search', 'search');
    var e = key(document.body, 'f', {code: 'KeyF', ctrlKey: true});
    if (document.activeElement !== search) err('search', 'Ctrl+F did not focus the search box');
    if (!e.defaultPrevented) err('search', "Ctrl+F did not stop the browser's own find");
    search.focus();
    for (var s of E.searches) {
      stage('search "' + s.query + '"', 'search');
      if (search.value !== '') {
        var m0 = clears;
        clearBox();
        await redrawn(m0, 'clearing the search box');
      }
      // A user's pace, a pause every few keys (the page may debounce); any
      // drawing from the last key on is of the whole query.
      var mark = clears;
      for (var k = 0; k < s.query.length; k++) {
        mark = clears;
        typeChar(s.query[k]);
        if (k % 3 === 2 && k + 1 < s.query.length) await sleep(15);
      }
      await redrawn(mark, 'typing "' + s.query + '"');
      var what = 'search "' + s.query + '"', got = checkDrawing('search', what, fullView, true);
      var txt = matchText.textContent;
      if (s.matches.length === 0) {
        if (!/no match/i.test(txt)) err('search', what + ': shows "' + txt + '", expected "No match"');
        E.nodes.forEach(function (n) {
          if (got[n.path] && got[n.path].fill !== base[n.path].fill)
            err('search', what + ': frame ' + n.name + ' changed colour with nothing matching');
        });
        note('search', '"' + s.query + '": ' + txt);
        continue;
      }
      var hl = got[s.matches[0]] && got[s.matches[0]].fill, nhl = 0;
      E.nodes.forEach(function (n) {
        var r = got[n.path], matching = s.matches.indexOf(n.path) >= 0;
        if (!r || !base[n.path]) return;
        if (matching && r.fill !== hl) err('search', what + ': matching frame ' + n.path + ' is ' + r.fill + ', other matches ' + hl);
        if (matching && r.fill === base[n.path].fill) err('search', what + ': matching frame ' + n.path + ' not highlighted (still ' + r.fill + ')');
        if (!matching && r.fill !== base[n.path].fill)
          err('search', what + ': frame ' + (n.path || 'all') + ' does not match but changed from ' + base[n.path].fill + ' to ' + r.fill);
        if (r.fill === hl) nhl++;
      });
      var pcts = txt.match(/\d+(\.\d+)?%/g) || [];
      if (pcts.length !== 1 || pcts[0] !== s.pct || txt.indexOf(s.weight) < 0)
        err('search', what + ': shows "' + txt + '", expected ' + s.pct + ' and ' + s.weight);
      note('search', '"' + s.query + '": ' + nhl + ' highlighted, ' + txt);
    }
    var mark2 = clears;
    clearBox();
    await redrawn(mark2, 'clearing the search box');
    if (matchText.textContent !== '') err('search', 'after clearing the box the match text is "' + matchText.textContent + '"');
    sameDrawing('search', 'after clearing the box', firstDrawing, drawing());
    if (!typedNatively) note('search', 'typed through synthetic input events (insertText refused)');
    search.blur();
  }

  function clickFrame(path, view) {
    var p = place(view, true).filter(function (q) { return q.it.n.path === path; })[0];
    click(center(p));
  }

  function checkZoom(z, i) {
    stage('zoom ' + z.path, 'zoom');
    var mark = clears;
    clickFrame(z.path, fullView);
    if (clears === mark) { err('zoom', 'a click on ' + z.path + ' did not redraw the canvas'); return false; }
    var view = layout(z.path);
    checkDrawing('zoom', 'zoomed to ' + z.path, view, true);
    // The pointer on a frame of the subtree: its share of the zoomed frame.
    var h = z.hover;
    checkPointer('zoom', 'zoomed to ' + z.path, h, view);
    note('zoom', z.path + ': ' + view.items.length + ' frames, ' + view.rows + ' rows, ' + h.name + ' ' + h.zoomPct + ' of it');
    mouse('mouseleave', {x: 0, y: 0});
    // A click on a dimmed caller zooms out to it.
    if (i === 0) {
      var up = z.path.split(';').slice(0, -1).join(';');
      clickFrame(up, view);
      checkDrawing('zoom', 'zoomed out to the caller ' + up, layout(up), true);
    }
    return true;
  }

  // Back to the first drawing, whatever an earlier failure left behind, so
  // that one bug fails one check: search box emptied, zoom reset.
  function blur() { if (document.activeElement && document.activeElement.blur) document.activeElement.blur(); }
  function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }
  async function restore() {
    blur();
    if (search.value !== '') {
      var mark = clears;
      clearBox();
      blur();
      try { await redrawn(mark, 'clearing the search box'); } catch (ex) { /* reported by the search check */ }
    }
    if (!same(firstDrawing, drawing())) document.getElementById('reset').click();
    if (!same(firstDrawing, drawing())) key(document.body, 'Escape', {code: 'Escape'});
  }

  async function checkZoomAndReset() {
    for (var i = 0; i < E.zooms.length; i++) {
      await restore();
      if (!checkZoom(E.zooms[i], i)) continue;
      checks.reset.ran = true;
      var mark = clears;
      if (i === 0) {
        stage('reset button', 'reset');
        document.getElementById('reset').click();
      } else {
        stage('reset by Esc', 'reset');
        blur();  // Esc in the search box only leaves it
        key(document.body, 'Escape', {code: 'Escape'});
      }
      var how = i === 0 ? 'Reset button' : 'Esc';
      if (clears === mark) { err('reset', 'the ' + how + ' did not redraw'); continue; }
      sameDrawing('reset', 'after the ' + how, firstDrawing, drawing());
      if (Math.abs(geometry().height - fullView.rows * pitch) > 0.5) err('reset', 'after the ' + how + ' the canvas is ' + geometry().height + ' px high');
      note('reset', how + ': the first drawing again');
    }
  }

  async function checkFlip() {
    await restore();
    stage('flip', 'flip');
    var btn = document.getElementById('flip'), label = btn.textContent;
    btn.click();
    checkDrawing('flip', 'icicle', fullView, false);
    if (btn.textContent === label) err('flip', 'the button still reads "' + label + '" in the icicle view');
    btn.click();
    sameDrawing('flip', 'flipped back', firstDrawing, drawing());
    note('flip', 'root at the top, then back');
  }

  async function run() {
    var steps = [['render', checkRender], ['hover', checkHover], ['search', checkSearch],
                 ['zoom', checkZoomAndReset], ['flip', checkFlip]];
    for (var st of steps) {
      try {
        await st[1]();
      } catch (ex) {
        checks[st[0]].ran = true;
        err(st[0], 'exception: ' + ex.message + (ex.stack ? ' ' + ex.stack.split('\n')[1] : ''));
      }
      if (st[0] === 'render' && !(base && Object.keys(base).length > 0)) {
        E.checks.forEach(function (n) {
          if (n !== 'render' && n !== 'errors') { checks[n].ran = true; err(n, 'not run: the first drawing failed'); }
        });
        break;
      }
    }
    stage('errors', 'errors');
    pageErrors.forEach(function (m) { err('errors', m); });
    verdict.done = true;
    stage('done');
  }
  window.addEventListener('load', function () {
    publish();
    run().catch(function (ex) { verdict.stage += ' (' + ex.message + ')'; publish(); });
  });
})();
