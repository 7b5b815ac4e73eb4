// The page `okt ui` serves: plain HTML, CSS and a script, no library and no external URL. The script
// draws each graph itself (columns of nodes as boxes, edges as SVG curves measured from the boxes),
// puts every CR on its node, and follows the server's event stream (/api/stream) without reloading.

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>okt ui</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/app.css">
</head>
<body>
<header>
  <span class="brand">okt</span>
  <h1 id="title">connecting…</h1>
  <span id="counts"></span>
  <span id="live" class="live off">connecting…</span>
</header>
<main>
  <div id="view">
    <div id="legend">
      <span class="pill ready">ready</span><span class="pill progressing">on its way</span><span class="pill stalled">stalled</span><span class="pill new">no status</span>
      <span class="key"><svg width="26" height="8" aria-hidden="true"><path class="edge default" d="M0,4 H26"/></svg> default child</span>
      <span class="key"><svg width="26" height="8" aria-hidden="true"><path class="edge" d="M0,4 H26"/></svg> other child</span>
      <span class="key"><svg width="26" height="8" aria-hidden="true"><path class="edge trigger" d="M0,4 H26"/></svg> trigger</span>
      <span class="key"><span class="desired-key"></span> desired node of the resource shown</span>
    </div>
    <div id="graphs"><p class="hint">Waiting for the first list of resources…</p></div>
  </div>
  <aside>
    <section id="detail" class="panel"><h2>Resource</h2><p class="hint">Click a resource on the graph to see its details.</p></section>
    <section class="panel events-panel"><h2>Last events</h2><ol id="events"></ol></section>
  </aside>
</main>
<script src="/app.js"></script>
</body>
</html>
`;

export const APP_CSS = `
:root { --ready: #2e7d32; --ready-bg: #e8f5e9; --progressing: #ef6c00; --progressing-bg: #fff3e0; --stalled: #c62828; --stalled-bg: #ffebee;
  --new: #757575; --new-bg: #f5f5f5; --line: #cfd8dc; --ink: #1f2933; --muted: #5f6b76; --accent: #1565c0; }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--ink); background: #f4f6f8; }
header { display: flex; align-items: center; gap: 16px; padding: 10px 20px; background: #fff; border-bottom: 1px solid var(--line); }
.brand { font-weight: 800; letter-spacing: .05em; color: #fff; background: var(--accent); padding: 2px 8px; border-radius: 4px; }
h1 { font-size: 17px; margin: 0; font-weight: 600; }
h2 { font-size: 14px; margin: 0 0 8px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
#counts { color: var(--muted); }
#legend { display: flex; flex-wrap: wrap; gap: 6px 10px; align-items: center; font-size: 12px; color: var(--muted); margin-bottom: 10px; }
#legend .key { display: inline-flex; align-items: center; gap: 4px; }
#legend .edge.trigger { opacity: .6; }
.desired-key { display: inline-block; width: 18px; height: 11px; border: 2px dashed var(--accent); border-radius: 3px; }
#live { margin-left: auto; }
h1 { min-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
#counts { white-space: nowrap; }
.pill { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; border: 1px solid; }
.pill.ready { color: var(--ready); background: var(--ready-bg); } .pill.progressing { color: var(--progressing); background: var(--progressing-bg); }
.pill.stalled, .pill.invalid { color: var(--stalled); background: var(--stalled-bg); } .pill.new { color: var(--new); background: var(--new-bg); }
.live { font-size: 12px; padding: 2px 10px; border-radius: 10px; }
.live.on { color: var(--ready); background: var(--ready-bg); } .live.on::before { content: "● "; }
.live.off { color: var(--stalled); background: var(--stalled-bg); }
main { display: flex; gap: 16px; padding: 16px 20px; align-items: flex-start; }
#view { flex: 1; min-width: 0; }
#graphs { display: flex; flex-direction: column; gap: 16px; }
aside { width: 380px; flex: none; display: flex; flex-direction: column; gap: 16px; position: sticky; top: 16px; height: calc(100vh - 84px); }
.panel { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.events-panel { overflow: auto; flex: 1 1 200px; min-height: 200px; }
#detail { overflow: auto; flex: 0 1 auto; min-height: 80px; }
.hint { color: var(--muted); margin: 0; }
.graph { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; overflow-x: auto; }
.graph h2 .rev { text-transform: none; font-weight: normal; font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
.tray { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin-bottom: 8px; color: var(--muted); }
.canvas { position: relative; padding: 56px 8px 16px; }
.canvas svg { position: absolute; left: 0; top: 0; pointer-events: none; overflow: visible; }
.columns { position: relative; display: flex; gap: 44px; align-items: flex-start; width: max-content; }
.side { display: flex; gap: 44px; align-items: flex-start; margin: 64px 0 0 calc(var(--node-width, 200px) + 44px); width: max-content; position: relative; }
.side-label { position: absolute; top: -22px; left: 0; font-size: 12px; color: var(--muted); }
.column { display: flex; flex-direction: column; gap: 22px; }
.node { width: var(--node-width, 200px); background: #fff; border: 1.5px solid #b0bec5; border-radius: 8px; box-shadow: 0 1px 2px rgba(0,0,0,.06); }
.node.occupied { border-color: #607d8b; box-shadow: 0 1px 4px rgba(0,0,0,.12); }
.node.desired { outline: 2px dashed var(--accent); outline-offset: 3px; }
.node-head { display: flex; align-items: center; gap: 6px; padding: 6px 8px; border-bottom: 1px solid #eceff1; background: #fafbfc; border-radius: 8px 8px 0 0; }
.node-head .name { font-weight: 700; flex: 1; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.node-head .count { font-size: 12px; color: #fff; background: #607d8b; border-radius: 9px; padding: 0 7px; }
.tag { font-size: 11px; color: var(--muted); border: 1px solid var(--line); border-radius: 4px; padding: 0 4px; }
.notes { font-size: 11px; color: var(--muted); padding: 2px 8px 0; }
.crs { display: flex; flex-direction: column; gap: 4px; padding: 6px; min-height: 10px; }
.crs .more { font-size: 12px; color: var(--muted); padding: 0 4px; }
.cr { display: flex; align-items: center; gap: 6px; width: 100%; text-align: left; font: inherit; font-size: 13px; padding: 3px 6px; border-radius: 5px; border: 1px solid; cursor: pointer; background: var(--new-bg); color: var(--ink); }
.tray .cr { width: auto; }
.cr .dot { width: 9px; height: 9px; border-radius: 50%; flex: none; background: var(--new); }
.cr .cr-text { display: flex; flex-direction: column; min-width: 0; flex: 1; }
.cr .cr-name { font-weight: 600; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.cr .cr-op { font-size: 11px; color: var(--muted); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; line-height: 1.2; }
.cr.stalled .cr-op { color: var(--stalled); }
.cr.ready { background: var(--ready-bg); border-color: #a5d6a7; } .cr.ready .dot { background: var(--ready); }
.cr.progressing { background: var(--progressing-bg); border-color: #ffcc80; } .cr.progressing .dot { background: var(--progressing); }
.cr.stalled, .cr.invalid { background: var(--stalled-bg); border-color: #ef9a9a; } .cr.stalled .dot, .cr.invalid .dot { background: var(--stalled); }
.cr.new { border-color: #e0e0e0; }
.cr.running .dot { animation: pulse 1.2s ease-in-out infinite; }
.cr.selected { outline: 2px solid var(--accent); outline-offset: 1px; }
.cr.moved { animation: moved 2s ease-out; }
@keyframes moved { 0% { box-shadow: 0 0 0 4px #64b5f6; } 100% { box-shadow: 0 0 0 0 transparent; } }
@keyframes pulse { 50% { opacity: .3; } }
.edge { fill: none; stroke: #90a4ae; stroke-width: 1.5; }
.edge.default { stroke: #455a64; stroke-width: 2; }
.edge.trigger { stroke: #e65100; stroke-dasharray: 5 4; opacity: .3; }
.edge.hot { opacity: 1; stroke-width: 2.5; }
.edge-label { font-size: 11px; fill: var(--muted); }
#events { list-style: none; margin: 0; padding: 0; font-size: 13px; }
#events li { padding: 4px 0; border-bottom: 1px solid #eceff1; cursor: pointer; }
#events li.bad { color: var(--stalled); } #events li.good .text { color: var(--ready); }
#events time { color: var(--muted); font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; margin-right: 6px; }
#events .who { font-weight: 600; margin-right: 6px; }
#events li.fresh { animation: fresh 2s ease-out; }
@keyframes fresh { 0% { background: #e3f2fd; } 100% { background: transparent; } }
.facts { border-collapse: collapse; width: 100%; margin: 8px 0; }
.facts th, .facts td { text-align: left; vertical-align: top; padding: 3px 6px 3px 0; border-bottom: 1px solid #eceff1; }
.facts th { color: var(--muted); font-weight: 500; white-space: nowrap; width: 1%; }
.facts td { word-break: break-word; }
.detail-head { display: flex; align-items: center; gap: 8px; }
.detail-head h3 { margin: 0; font-size: 16px; }
pre { margin: 0; font-size: 12px; white-space: pre-wrap; word-break: break-word; font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
.conditions td { font-size: 13px; }
.conditions .True, .objects .True { color: var(--ready); font-weight: 600; } .conditions .False, .conditions .Unknown, .objects .False { color: var(--muted); }
.conditions .when { color: var(--muted); font-size: 12px; }
h4 { margin: 10px 0 4px; font-size: 13px; }
`;

export const APP_JS = String.raw`'use strict';
(function () {
  var model = null;           // the snapshot, kept up to date by the stream
  var byKey = new Map();      // key -> CR view
  var chips = new Map();      // key -> its button
  var lastNode = new Map();   // key -> where it was last drawn (revision + node)
  var selected = null;
  var structure = '';         // what the drawn sections are made of: redrawn when it changes
  var pending = false;
  var MAX_CHIPS = 40;

  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs) for (var name in attrs) {
      var value = attrs[name];
      if (value === null || value === undefined || value === false) continue;
      if (name === 'text') el.textContent = value; else if (name === 'cls') el.className = value; else el.setAttribute(name, value === true ? '' : value);
    }
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) continue;
      el.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return el;
  }
  function svg(tag, attrs) {
    var el = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (var name in attrs) el.setAttribute(name, attrs[name]);
    return el;
  }
  function ago(time) {
    if (!time) return '-';
    var s = Math.max(0, Math.floor((Date.now() - Date.parse(time)) / 1000));
    if (!isFinite(s)) return '-';
    if (s < 120) return s + 's ago';
    if (s < 7200) return Math.floor(s / 60) + 'm ago';
    if (s < 172800) return Math.floor(s / 3600) + 'h ago';
    return Math.floor(s / 86400) + 'd ago';
  }
  function clock(time) {
    var d = new Date(time);
    return isNaN(d.getTime()) ? '' : d.toLocaleTimeString([], { hour12: false });
  }
  function label(cr) { return model && model.title.namespace === null ? cr.namespace + '/' + cr.name : cr.name; }

  /** The revision a CR is drawn on: its own when the page has that graph, else the default. */
  function revisionOf(cr) { return cr.revision && model.graphs[cr.revision] ? cr.revision : model.defaultRevision; }
  function placeOf(cr) {
    var graph = model.graphs[revisionOf(cr)];
    if (!graph || cr.state === null) return null;
    for (var i = 0; i < graph.nodes.length; i++) if (graph.nodes[i].name === cr.state) return { revision: graph.revision, node: cr.state };
    return null;
  }
  /** What the CR is doing, in a few characters. */
  function doing(cr) {
    var op = cr.operation;
    if (cr.deleting) return 'deleting';
    if (cr.paused) return 'paused';
    if (op && op.node === cr.state) {
      // Pending: committed, and maybe started already (okt writes Running at its first look at the sidecar after the start).
      if (op.phase === 'Running' || (op.phase === 'Pending' && op.startedAt)) return '⟳ ' + (op.message || 'action running');
      if (op.phase === 'Pending') return 'action pending';
      if (op.phase === 'Failed') return '✗ action failed';
      if (op.phase === 'Cancelled') return 'action cancelled';
    }
    if (cr.health === 'stalled') return cr.reason;
    if (cr.state === null) return cr.health === 'new' ? 'no status yet' : 'status unreadable';
    if (!placeOf(cr)) return 'at ' + cr.state + ', not a node of this graph';
    if (cr.desired && cr.state && cr.desired !== cr.state) return '→ ' + cr.desired;
    return '';
  }
  function stateWord(cr) {
    return { ready: 'Ready', progressing: 'on its way', stalled: 'Stalled', new: 'no status', invalid: 'unreadable status' }[cr.health] || cr.health;
  }

  function sectionsWanted() {
    var revisions = [model.defaultRevision];
    byKey.forEach(function (cr) {
      var r = revisionOf(cr);
      if (revisions.indexOf(r) < 0) revisions.push(r);
    });
    return revisions.filter(function (r) { return model.graphs[r]; });
  }

  function nodeBox(n, revision) {
    var tags = [];
    if (n.entry) tags.push(h('span', { cls: 'tag', text: 'entry' }));
    if (n.leaf) tags.push(h('span', { cls: 'tag', text: 'leaf' }));
    var head = h('div', { cls: 'node-head' }, h('span', { cls: 'name', text: n.name }));
    tags.forEach(function (t) { head.appendChild(t); });
    head.appendChild(h('span', { cls: 'count', hidden: true }));
    var notes = n.notes.slice();
    if (n.triggers.length) notes.push('⚡ ' + n.triggers.join(', '));
    var node = h('div', { cls: 'node', 'data-node': n.name, 'data-revision': revision, title: n.description || n.name }, head,
      notes.length ? h('div', { cls: 'notes', text: notes.join(' · ') }) : null,
      h('div', { cls: 'crs' }));
    node.addEventListener('mouseenter', function () { highlight(node, n.name, true); });
    node.addEventListener('mouseleave', function () { highlight(node, n.name, false); });
    return node;
  }
  function highlight(node, name, on) {
    node.closest('.graph').querySelectorAll('path.edge').forEach(function (p) {
      var edge = p.getAttribute('data-edge').split('>');
      if (edge[0] === name || edge[1] === name) p.classList.toggle('hot', on);
    });
  }

  function drawStructure(revisions) {
    var root = document.getElementById('graphs');
    root.textContent = '';
    chips.forEach(function (chip) { chip.remove(); });
    root.appendChild(h('div', { cls: 'tray', id: 'tray', hidden: true }, h('span', { text: 'Not on a node of the graph:' })));
    revisions.forEach(function (revision) {
      var graph = model.graphs[revision];
      var byName = {};
      graph.nodes.forEach(function (n) { byName[n.name] = n; });
      var columns = h('div', { cls: 'columns' });
      graph.columns.forEach(function (names) {
        var column = h('div', { cls: 'column' });
        names.forEach(function (name) { column.appendChild(nodeBox(byName[name], revision)); });
        columns.appendChild(column);
      });
      var side = null;
      if (graph.side.length) {
        side = h('div', { cls: 'side' }, h('span', { cls: 'side-label', text: 'reached by triggers' }));
        graph.side.forEach(function (name) { side.appendChild(nodeBox(byName[name], revision)); });
      }
      var isDefault = revision === model.defaultRevision;
      var heading = h('h2', null, 'graph ' + graph.name + ' ', h('span', { cls: 'rev', text: 'revision ' + revision }),
        isDefault ? '' : ' — resources not yet migrated');
      var canvas = h('div', { cls: 'canvas' }, svg('svg', { class: 'edges' }), columns, side);
      root.appendChild(h('section', { cls: 'graph', 'data-revision': revision, 'data-columns': String(graph.columns.length) }, heading, canvas));
    });
    fitWidths();
  }

  /** Nodes as wide as the page allows for the columns to fit (within bounds; narrower pages scroll). */
  function fitWidths() {
    document.querySelectorAll('.graph').forEach(function (section) {
      var n = Number(section.getAttribute('data-columns')) || 1;
      var room = section.clientWidth - 28 - 16 - (n - 1) * 44;
      var width = Math.max(150, Math.min(210, Math.floor(room / n)));
      section.style.setProperty('--node-width', width + 'px');
    });
  }

  function render() {
    pending = false;
    if (!model) return;
    var revisions = sectionsWanted();
    var key = revisions.join(',');
    if (key !== structure) { structure = key; drawStructure(revisions); }
    var placed = {};   // revision/node -> CRs
    var tray = [];
    var counts = { ready: 0, progressing: 0, stalled: 0, new: 0, invalid: 0 };
    var list = Array.from(byKey.values()).sort(function (a, b) { return a.key < b.key ? -1 : a.key > b.key ? 1 : 0; });
    list.forEach(function (cr) {
      counts[cr.health] = (counts[cr.health] || 0) + 1;
      var place = placeOf(cr);
      if (!place) { tray.push(cr); return; }
      var id = place.revision + '/' + place.node;
      (placed[id] = placed[id] || []).push(cr);
    });
    chips.forEach(function (chip, key) { if (!byKey.has(key)) { chip.remove(); chips.delete(key); lastNode.delete(key); } });
    var selectedCr = selected ? byKey.get(selected) : null;
    var selectedRevision = selectedCr ? revisionOf(selectedCr) : null;
    document.querySelectorAll('.node').forEach(function (node) {
      var id = node.getAttribute('data-revision') + '/' + node.getAttribute('data-node');
      var crs = placed[id] || [];
      var box = node.querySelector('.crs');
      var shown = crs.slice(0, MAX_CHIPS);
      box.textContent = '';
      shown.forEach(function (cr) { box.appendChild(chipFor(cr, id)); });
      if (crs.length > shown.length) box.appendChild(h('div', { cls: 'more', text: '+ ' + (crs.length - shown.length) + ' more' }));
      crs.slice(MAX_CHIPS).forEach(function (cr) { lastNode.set(cr.key, id); });
      var count = node.querySelector('.count');
      count.hidden = crs.length === 0;
      count.textContent = String(crs.length);
      node.classList.toggle('occupied', crs.length > 0);
      node.classList.toggle('desired', !!selectedCr && selectedCr.desired === node.getAttribute('data-node') && node.getAttribute('data-revision') === selectedRevision && selectedCr.desired !== selectedCr.state);
    });
    var trayEl = document.getElementById('tray');
    while (trayEl.children.length > 1) trayEl.removeChild(trayEl.lastChild);
    tray.forEach(function (cr) { trayEl.appendChild(chipFor(cr, 'tray')); });
    trayEl.hidden = tray.length === 0;
    var t = model.title;
    document.getElementById('title').textContent = t.kind + ' (' + t.crd + ') · ' + (t.namespace === null ? 'all namespaces' : 'namespace ' + t.namespace);
    document.title = 'okt ui · ' + t.kind + (t.namespace === null ? '' : ' · ' + t.namespace);
    var parts = [list.length + (list.length === 1 ? ' resource' : ' resources')];
    if (counts.ready) parts.push(counts.ready + ' ready');
    if (counts.progressing) parts.push(counts.progressing + ' on their way');
    if (counts.stalled + counts.invalid) parts.push((counts.stalled + counts.invalid) + ' stalled');
    if (counts.new) parts.push(counts.new + ' without status');
    document.getElementById('counts').textContent = parts.join(' · ');
    renderDetail();
    drawEdges();
  }

  function chipFor(cr, where) {
    var chip = chips.get(cr.key);
    if (!chip) {
      chip = h('button', { type: 'button', 'data-cr': cr.key });
      chip.addEventListener('click', function () { select(cr.key); });
      chips.set(cr.key, chip);
    }
    var was = lastNode.get(cr.key);
    lastNode.set(cr.key, where);
    var op = cr.operation;
    var running = op && op.node === cr.state && (op.phase === 'Running' || op.phase === 'Pending');
    chip.className = 'cr ' + cr.health + (running ? ' running' : '') + (selected === cr.key ? ' selected' : '');
    chip.setAttribute('data-state', cr.state || '');
    chip.setAttribute('data-health', cr.health);
    chip.title = label(cr) + ': ' + stateWord(cr) + (cr.message ? ' — ' + cr.message : '');
    chip.textContent = '';
    chip.appendChild(h('span', { cls: 'dot' }));
    var what = doing(cr);
    chip.appendChild(h('span', { cls: 'cr-text' }, h('span', { cls: 'cr-name', text: label(cr) }), what ? h('span', { cls: 'cr-op', text: what }) : null));
    if (was !== undefined && was !== where) {
      chip.classList.remove('moved');
      void chip.offsetWidth;   // restarts the animation
      chip.classList.add('moved');
    }
    return chip;
  }

  function anchor(el, canvas) {
    var c = canvas.getBoundingClientRect();
    var r = el.getBoundingClientRect();
    return { left: r.left - c.left, right: r.right - c.left, top: r.top - c.top, bottom: r.bottom - c.top, mid: r.left - c.left + r.width / 2 };
  }

  function drawEdges() {
    document.querySelectorAll('.graph').forEach(function (section) {
      var graph = model.graphs[section.getAttribute('data-revision')];
      var canvas = section.querySelector('.canvas');
      var layer = canvas.querySelector('svg');
      layer.textContent = '';
      layer.setAttribute('width', canvas.scrollWidth);
      layer.setAttribute('height', canvas.scrollHeight);
      var defs = svg('defs', {});
      [['arrow', '#90a4ae'], ['arrow-default', '#455a64'], ['arrow-trigger', '#e65100']].forEach(function (m) {
        var marker = svg('marker', { id: m[0] + '-' + graph.revision, viewBox: '0 0 10 10', refX: '9', refY: '5', markerWidth: '7', markerHeight: '7', orient: 'auto-start-reverse' });
        marker.appendChild(svg('path', { d: 'M0,0 L10,5 L0,10 z', fill: m[1] }));
        defs.appendChild(marker);
      });
      layer.appendChild(defs);
      var boxes = {};
      var ranks = {}, lanes = {};
      graph.nodes.forEach(function (n) { ranks[n.name] = n.rank; lanes[n.name] = n.lane; });
      section.querySelectorAll('.node').forEach(function (node) { boxes[node.getAttribute('data-node')] = anchor(node, canvas); });
      graph.edges.forEach(function (e) {
        var a = boxes[e.from], b = boxes[e.to];
        if (!a || !b) return;
        var d, lx, ly;
        var y1 = a.top + 16, y2 = b.top + 16;
        var span = ranks[e.to] - ranks[e.from];
        if (e.from === e.to) {
          d = 'M' + (a.right - 30) + ',' + a.top + ' C' + (a.right - 30) + ',' + (a.top - 34) + ' ' + (a.right + 24) + ',' + (a.top - 20) + ' ' + a.right + ',' + (a.top + 8);
          lx = a.right; ly = a.top - 22;
        } else if (lanes[e.from] === 'side' && lanes[e.to] === 'main' && b.bottom <= a.top) {
          // From the side row up into the main course: along the row, then up into the node's bottom.
          var sx = b.mid > a.mid ? a.right : a.left;
          d = 'M' + sx + ',' + y1 + ' C' + b.mid + ',' + y1 + ' ' + b.mid + ',' + y1 + ' ' + b.mid + ',' + b.bottom;
          lx = (sx + b.mid) / 2; ly = y1 - 4;
        } else if (!e.back && b.left >= a.right + 8 && (lanes[e.from] !== lanes[e.to] || b.top > a.bottom || b.bottom < a.top || span <= 1)) {
          // To the right: from the side of one to the side of the other.
          var dx = Math.max(28, (b.left - a.right) / 2);
          d = 'M' + a.right + ',' + y1 + ' C' + (a.right + dx) + ',' + y1 + ' ' + (b.left - dx) + ',' + y2 + ' ' + b.left + ',' + y2;
          lx = (a.right + b.left) / 2; ly = (y1 + y2) / 2 - 4;
        } else if (!e.back && b.left >= a.right + 8) {
          // Over the nodes between, on the same row: an arc above them.
          var lift = Math.min(a.top, b.top) - 24 - 6 * span;
          d = 'M' + (a.right - 24) + ',' + a.top + ' C' + (a.right - 24) + ',' + lift + ' ' + (b.left + 24) + ',' + lift + ' ' + (b.left + 24) + ',' + b.top;
          lx = (a.right + b.left) / 2; ly = lift + 10;
        } else if (b.top >= a.bottom + 8) {
          // Down (to the side row): from the bottom of one to the top of the other.
          d = 'M' + a.mid + ',' + a.bottom + ' C' + a.mid + ',' + (a.bottom + 40) + ' ' + b.mid + ',' + (b.top - 40) + ' ' + b.mid + ',' + b.top;
          lx = (a.mid + b.mid) / 2; ly = (a.bottom + b.top) / 2;
        } else if (!e.back && a.top >= b.bottom + 8) {
          d = 'M' + a.mid + ',' + a.top + ' C' + a.mid + ',' + (a.top - 40) + ' ' + b.mid + ',' + (b.bottom + 40) + ' ' + b.mid + ',' + b.bottom;
          lx = (a.mid + b.mid) / 2; ly = (a.top + b.bottom) / 2;
        } else {
          // Back up the graph: an arc above both boxes, from the top of one to the top of the other.
          var top = Math.min(a.top, b.top) - 26 - 4 * Math.abs(span || 1);
          var x1 = a.left + 40, x2 = b.right - 40;
          d = 'M' + x1 + ',' + a.top + ' C' + x1 + ',' + top + ' ' + x2 + ',' + top + ' ' + x2 + ',' + b.top;
          lx = (x1 + x2) / 2; ly = top + 8;
        }
        var kind = e.kind === 'default' ? 'arrow-default' : e.kind === 'trigger' ? 'arrow-trigger' : 'arrow';
        var path = svg('path', { d: d, class: 'edge ' + e.kind, 'marker-end': 'url(#' + kind + '-' + graph.revision + ')', 'data-edge': e.from + '>' + e.to });
        var title = svg('title', {});
        title.textContent = e.from + ' → ' + e.to + ' (' + (e.kind === 'child' ? 'child ' + e.priority : e.kind) + (e.label ? ', ' + e.label : '') + ')';
        path.appendChild(title);
        layer.appendChild(path);
        if (e.label) {
          var text = svg('text', { x: lx, y: ly, class: 'edge-label', 'text-anchor': 'middle' });
          text.textContent = e.label;
          layer.appendChild(text);
        }
      });
    });
  }

  function row(th, value) {
    return h('tr', null, h('th', { text: th }), h('td', null, value));
  }
  function renderDetail() {
    var panel = document.getElementById('detail');
    var cr = selected ? byKey.get(selected) : null;
    panel.textContent = '';
    panel.appendChild(h('h2', { text: 'Resource' }));
    if (!cr) {
      panel.removeAttribute('data-cr');
      panel.appendChild(h('p', { cls: 'hint', text: selected ? selected + ' is gone.' : 'Click a resource on the graph to see its details.' }));
      return;
    }
    panel.setAttribute('data-cr', cr.key);
    panel.appendChild(h('div', { cls: 'detail-head' }, h('h3', { text: cr.name }), h('span', { cls: 'pill ' + cr.health, text: stateWord(cr) })));
    var facts = h('table', { cls: 'facts' });
    facts.appendChild(row('namespace', cr.namespace || '-'));
    facts.appendChild(row('state', cr.state || '-'));
    facts.appendChild(row('desired', (cr.desired || '-') + (cr.desired && cr.desired !== cr.state ? ' (dashed on the graph)' : '')));
    if (cr.reason || cr.message) {
      var readyWord = cr.health === 'stalled' ? 'stalled' : cr.health === 'ready' ? 'ready' : cr.health === 'progressing' ? 'not ready' : 'status';
      facts.appendChild(row(readyWord, [cr.reason, cr.message].filter(Boolean).join(' — ')));
    }
    var op = cr.operation;
    if (op) {
      var when = op.finishedAt ? 'finished ' + ago(op.finishedAt) : op.startedAt ? 'started ' + ago(op.startedAt) : 'not started';
      var extra = [op.reason && op.phase !== 'Succeeded' ? op.reason : '', op.attempts > 1 ? 'attempt ' + op.attempts : '', op.retries ? 'retry ' + op.retries : '',
        op.events && op.events.length ? 'raised [' + op.events.join(', ') + ']' : ''].filter(Boolean);
      facts.appendChild(row('operation', op.phase + ', action of ' + op.node + ', ' + when + (extra.length ? ', ' + extra.join(', ') : '') + (op.message ? ' — ' + op.message : '')));
      facts.appendChild(row('operation id', op.id));
    }
    var t = cr.lastTransition;
    if (t) facts.appendChild(row('last transition', t.from + ' → ' + t.to + ' on [' + t.events.join(', ') + '] ' + ago(t.time)));
    facts.appendChild(row('path', cr.pathSummary || cr.path.map(function (p) { return '>' + p; }).join('') || '-'));
    if (cr.params) facts.appendChild(row('params', h('pre', { text: JSON.stringify(cr.params, null, 2) })));
    if (op && op.params) facts.appendChild(row('ran with', h('pre', { text: JSON.stringify(op.params, null, 2) })));
    var drawn = revisionOf(cr);
    facts.appendChild(row('revision', (cr.revision || '-') + (cr.revision && cr.revision !== drawn ? ' (drawn on ' + drawn + ': not published)' : '')));
    facts.appendChild(row('generation', (cr.generation === null ? '-' : cr.generation) + ' (observed ' + (cr.observedGeneration === null ? '-' : cr.observedGeneration) + '), transition ' + cr.transition));
    var notes = [cr.paused ? 'paused' : '', cr.deleting ? 'being deleted' : '', cr.outbox.length ? cr.outbox.length + ' event(s) not yet delivered' : ''].filter(Boolean);
    if (notes.length) facts.appendChild(row('note', notes.join('; ')));
    facts.appendChild(row('created', ago(cr.created)));
    panel.appendChild(facts);
    if (cr.conditions.length) {
      panel.appendChild(h('h4', { text: 'Conditions' }));
      var table = h('table', { cls: 'facts conditions' });
      cr.conditions.forEach(function (c) {
        table.appendChild(h('tr', null,
          h('th', null, h('div', { text: c.type }), h('div', { cls: c.status, text: c.status })),
          h('td', null, h('div', null, c.reason + ' ', h('span', { cls: 'when', text: ago(c.lastTransitionTime) })), c.message ? h('div', { text: c.message }) : null)));
      });
      panel.appendChild(table);
    }
    if (cr.objects.length) {
      panel.appendChild(h('h4', { text: 'Objects' }));
      var objects = h('table', { cls: 'facts objects' });
      cr.objects.forEach(function (o) {
        objects.appendChild(h('tr', { 'data-object': o.id },
          h('th', null, h('div', { text: o.kind + ' ' + o.name }), h('div', { cls: o.readiness === 'Ready' ? 'True' : 'False', text: o.readiness })),
          h('td', null, h('div', { text: 'object "' + o.id + '"' }), o.message ? h('div', { text: o.message }) : null)));
      });
      panel.appendChild(objects);
    }
    if (cr.outbox.length) {
      panel.appendChild(h('h4', { text: 'Events not yet delivered' }));
      var ol = h('ol', { cls: 'outbox' });
      cr.outbox.forEach(function (e) { ol.appendChild(h('li', { text: '#' + e.sequence + ' ' + e.type + ' ' + ago(e.time) })); });
      panel.appendChild(ol);
    }
  }

  function addEvent(e, fresh) {
    var list = document.getElementById('events');
    var name = model && model.title.namespace !== null ? e.key.slice(e.key.indexOf('/') + 1) : e.key;
    var li = h('li', { cls: e.tone + (fresh ? ' fresh' : ''), 'data-key': e.key, 'data-kind': e.kind },
      h('time', { datetime: e.time, title: e.time, text: clock(e.time) }), h('span', { cls: 'who', text: name }), h('span', { cls: 'text', text: e.text }));
    li.addEventListener('click', function () { select(e.key); });
    list.insertBefore(li, list.firstChild);
    while (list.children.length > 100) list.removeChild(list.lastChild);
  }

  function select(key) {
    selected = selected === key ? null : key;
    schedule();
  }
  function schedule() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(render);
  }

  function onSnapshot(snapshot) {
    model = snapshot;
    byKey = new Map();
    snapshot.resources.forEach(function (cr) { byKey.set(cr.key, cr); });
    structure = '';
    document.getElementById('events').textContent = '';
    snapshot.events.forEach(function (e) { addEvent(e, false); });
    render();
  }

  function connect() {
    var live = document.getElementById('live');
    var source = new EventSource('/api/stream');
    source.addEventListener('open', function () { live.className = 'live on'; live.textContent = 'live'; });
    source.addEventListener('error', function () { live.className = 'live off'; live.textContent = 'reconnecting…'; });
    source.addEventListener('snapshot', function (m) { onSnapshot(JSON.parse(m.data)); });
    source.addEventListener('resource', function (m) { if (!model) return; var cr = JSON.parse(m.data).resource; byKey.set(cr.key, cr); schedule(); });
    source.addEventListener('deleted', function (m) { if (!model) return; byKey.delete(JSON.parse(m.data).key); schedule(); });
    source.addEventListener('event', function (m) { if (!model) return; addEvent(JSON.parse(m.data).event, true); });
    source.addEventListener('graph', function (m) { if (!model) return; var g = JSON.parse(m.data).graph; model.graphs[g.revision] = g; structure = ''; schedule(); });
    window.oktUi = { source: source, get resources() { return byKey; } };
  }

  window.addEventListener('resize', function () { if (model) { fitWidths(); drawEdges(); } });
  setInterval(function () { if (model && selected) renderDetail(); }, 5000);
  connect();
})();
`;
