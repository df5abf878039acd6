/* report.js - the script of report.html (scope-profiler report), embedded
 * into the page at build time. No framework, no network. It reads the
 * report's data from the JSON blob <script id="sp-data"> and works on the
 * SVG the C side wrote, through the DOM contract of docs/report.md:
 *
 *  - wheel zooms and drag pans the time axis of the Gantt chart, the flame
 *    chart and the flame graph (by changing the viewBox of the plot's nested
 *    <svg class="plot zoom">; panels of one file move together; the axis
 *    ticks, frame labels and one-pixel minimum widths are redrawn for the
 *    view);
 *  - a click on any element with data-ri (mark, label, legend entry, table
 *    row) highlights that region everywhere; a second click clears it;
 *  - the rank selector hides other ranks' panels (data-rankmode 1), marks
 *    (2) or dims their bars (3);
 *  - table headers sort (table.sortable, cells carry data-v);
 *  - each view of data.views is drawn into its section by the renderer its
 *    "renderer" field names (renderers below).
 */
(function () {
  'use strict';
  const NS = 'http://www.w3.org/2000/svg';
  const all = (sel, root) => Array.prototype.slice.call((root || document).querySelectorAll(sel));
  const blob = document.getElementById('sp-data');
  const data = blob ? JSON.parse(blob.textContent) : { regions: [], views: {} };
  const charts = all('svg.chart');
  let current = null;
  let dragged = false;

  function el(name, attrs, text) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function html(name, attrs, text) {
    const e = document.createElement(name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function regionName(ri) {
    const r = data.regions[Number(ri)];
    return r ? r.name : ri;
  }

  /* ---- highlighting ---------------------------------------------------------- */

  function highlight(ri) {
    current = ri === null || current === ri ? null : ri;
    all('.hl').forEach((e) => e.classList.remove('hl'));
    charts.forEach((c) => c.classList.toggle('has-hl', current !== null));
    if (current !== null) all('[data-ri="' + current + '"]').forEach((e) => e.classList.add('hl'));
    document.getElementById('hl-name').textContent =
      current === null ? '' : 'highlighted: ' + regionName(current);
  }

  document.addEventListener('click', (ev) => {
    if (dragged) {
      dragged = false;
      return;
    }
    const t = ev.target;
    const e = t && t.closest ? t.closest('[data-ri]') : null;
    if (e) highlight(e.getAttribute('data-ri'));
  });
  document.getElementById('clear-hl').addEventListener('click', (ev) => {
    ev.stopPropagation();
    highlight(null);
  });

  /* ---- the rank selector ----------------------------------------------------- */

  /* Stack the visible blocks of a chart again and fit its height. */
  function relayout(c) {
    const g = c.querySelector('.blocks');
    if (!g) return;
    let y = 0;
    Array.prototype.forEach.call(g.children, (b) => {
      if (b.style.display === 'none') return;
      b.setAttribute('transform', 'translate(0,' + y + ')');
      y += parseFloat(b.getAttribute('data-h'));
    });
    const h = parseFloat(g.getAttribute('data-y0')) + y + 6;
    c.setAttribute('height', h);
    c.setAttribute('viewBox', '0 0 ' + c.getAttribute('width') + ' ' + h);
  }

  function selectRank(r) {
    charts.forEach((c) => {
      const mode = c.getAttribute('data-rankmode');
      if (mode === '1') {
        const g = c.querySelector('.blocks');
        const old = g.querySelector('.rank-missing');
        if (old) g.removeChild(old);
        const blks = all('.blocks > .blk', c);
        const has = blks.some((b) => b.getAttribute('data-rank') === r);
        blks.forEach((b) => {
          const br = b.getAttribute('data-rank');
          b.style.display = r === 'all' || br === null || br === r ? '' : 'none';
        });
        if (r !== 'all' && !has) {
          const m = el('g', { class: 'blk rank-missing', 'data-h': 24 });
          m.appendChild(el('text', { class: 'note', x: 10, y: 16 },
            'rank ' + r + ' is not drawn in this chart (see --ranks, --flame-ranks, --max-bars)'));
          g.insertBefore(m, g.firstChild);
        }
        relayout(c);
      } else if (mode === '2') {
        all('.bar[data-rank]', c).forEach((e) => {
          e.style.display = r === 'all' || e.getAttribute('data-rank') === r ? '' : 'none';
        });
      } else if (mode === '3') {
        all('.bar[data-rank]', c).forEach((e) => {
          e.classList.toggle('dim', r !== 'all' && e.getAttribute('data-rank') !== r);
        });
      }
    });
    all('.view-body tr[data-rank]').forEach((tr) => {
      tr.style.display = r === 'all' || tr.getAttribute('data-rank') === r ? '' : 'none';
    });
  }

  const sel = document.getElementById('rank-select');
  sel.addEventListener('change', () => selectRank(sel.value));

  /* ---- zoom and pan ------------------------------------------------------------ */

  function nice(range) {
    const raw = range / 7;
    const mag = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10));
    const f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  }

  function unitFor(s) {
    if (s >= 1) return ['s', 1];
    if (s >= 1e-3) return ['ms', 1e-3];
    if (s >= 1e-6) return ['µs', 1e-6];
    return ['ns', 1e-9];
  }

  /* Redraw what depends on the view of plot p: ticks, minimum widths, labels. */
  function redraw(p) {
    const vb = p.viewBox.baseVal;
    const W = p.width.baseVal.value;
    const k = W / vb.width;
    const px = p.x.baseVal.value;
    const py = p.y.baseVal.value;
    const panel = p.parentNode;
    const t0 = parseFloat(p.getAttribute('data-t0'));
    const t1 = parseFloat(p.getAttribute('data-t1'));
    const a = t0 + (vb.x / W) * (t1 - t0);
    const b = t0 + ((vb.x + vb.width) / W) * (t1 - t0);
    const time = p.getAttribute('data-axis') === 'time';
    const u = time ? unitFor(b - a) : ['%', 1];
    const ax = panel.querySelector('.xaxis');
    if (ax) {
      const tg = ax.querySelector('.ticks');
      while (tg.firstChild) tg.removeChild(tg.firstChild);
      const st = nice(b - a);
      const y = parseFloat(ax.querySelector('.axis').getAttribute('y1'));
      for (let v = Math.ceil(a / st - 1e-9) * st; v <= b + st * 1e-9; v += st) {
        const x = px + ((v - a) / (b - a)) * W;
        tg.appendChild(el('line', { class: 'tick', x1: x, x2: x, y1: y, y2: y + 4 }));
        const label = String(parseFloat((Math.abs(v) < st * 1e-9 ? 0 : v / u[1]).toPrecision(6)));
        tg.appendChild(el('text', { class: 'tl', x: x, y: y + 15, 'text-anchor': 'middle' }, label));
      }
      const at = ax.querySelector('.at');
      if (at && time) at.textContent = at.textContent.replace(/\[[^\]]*\]$/, '[' + u[0] + ']');
    }
    all('.bar[data-w]', p).forEach((r) => {
      r.setAttribute('width', Math.max(parseFloat(r.getAttribute('data-w')), 1 / k));
    });
    const lg = panel.querySelector('.flabels');
    if (!lg) return;
    while (lg.firstChild) lg.removeChild(lg.firstChild);
    all('.bar', p).forEach((r) => {
      const x = r.x.baseVal.value;
      const w = r.hasAttribute('data-w') ? parseFloat(r.getAttribute('data-w')) : r.width.baseVal.value;
      const x0 = Math.max((x - vb.x) * k, 0);
      const x1 = Math.min((x + w - vb.x) * k, W);
      if (x1 - x0 < 20) return;
      const n = Math.floor((x1 - x0 - 6) / 6.2);
      let s = r.getAttribute('data-region');
      if (n < 3) return;
      if (s.length > n) s = s.slice(0, n - 1) + '…';
      const ri = r.getAttribute('data-ri');
      lg.appendChild(el('text', { class: 'fl t' + ri, x: px + x0 + 3, y: py + r.y.baseVal.value + 10 }, s));
    });
  }

  /* Show [x, x + w) of plot p (plot pixels) in every zoomable plot of its file. */
  function setView(p, x, w) {
    const W = p.width.baseVal.value;
    w = Math.min(W, Math.max(W / 20000, w));
    x = Math.max(0, Math.min(W - w, x));
    let c = p.ownerSVGElement;
    while (c && !c.classList.contains('chart')) c = c.parentNode;
    const f = p.getAttribute('data-file');
    all('svg.plot.zoom[data-file="' + f + '"]', c).forEach((q) => {
      const H = q.height.baseVal.value;
      q.setAttribute('viewBox', x + ' 0 ' + w + ' ' + H);
      redraw(q);
    });
  }

  all('svg.plot.zoom').forEach((p) => {
    const W = p.width.baseVal.value;
    let drag = null;
    p.addEventListener('wheel', (ev) => {
      ev.preventDefault();
      const vb = p.viewBox.baseVal;
      const r = p.getBoundingClientRect();
      const fx = (ev.clientX - r.left) / r.width;
      const cx = vb.x + fx * vb.width;
      let nw = vb.width * Math.exp((ev.deltaY || 0) * 0.0015);
      nw = Math.min(W, Math.max(W / 20000, nw));
      setView(p, cx - fx * nw, nw);
    }, { passive: false });
    p.addEventListener('mousedown', (ev) => {
      if (ev.button !== 0) return;
      const vb = p.viewBox.baseVal;
      drag = { x: ev.clientX, vx: vb.x, vw: vb.width, moved: false };
      ev.preventDefault();
    });
    window.addEventListener('mousemove', (ev) => {
      if (!drag) return;
      const dx = ev.clientX - drag.x;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (!drag.moved) return;
      const r = p.getBoundingClientRect();
      setView(p, drag.vx - (dx * drag.vw) / r.width, drag.vw);
    });
    window.addEventListener('mouseup', () => {
      if (drag && drag.moved) dragged = true;
      drag = null;
      setTimeout(() => {
        dragged = false;
      }, 0);
    });
    p.addEventListener('dblclick', () => setView(p, 0, W));
  });

  /* ---- views: sections drawn from data.views ---------------------------------- */

  /* "bytes" cells and axes: KiB, MiB, ... with three significant digits. */
  function fmtBytes(v) {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let x = Math.abs(v);
    let u = 0;
    while (x >= 1024 && u < units.length - 1) {
      x /= 1024;
      u++;
    }
    return (v < 0 ? '-' : '') + (u ? String(parseFloat(x.toPrecision(3))) : String(x)) + ' ' + units[u];
  }

  /* A view {x_unit: "s", y_unit: "bytes", series: [{label, rank, points: [[x, y]...]}]}:
   * one line per series on shared axes; the rank selector hides other ranks' lines. */
  function renderSeries(view, body) {
    const W = 1000;
    const H = 260;
    const L = 80;
    const B = 30;
    let x0 = Infinity;
    let x1 = -Infinity;
    let y0 = 0;
    let y1 = 0;
    view.series.forEach((s) => s.points.forEach((p) => {
      x0 = Math.min(x0, p[0]);
      x1 = Math.max(x1, p[0]);
      y0 = Math.min(y0, p[1]);
      y1 = Math.max(y1, p[1]);
    }));
    if (!(x1 > x0)) x1 = x0 + 1;
    if (!(y1 > y0)) y1 = y0 + 1;
    const px = (x) => L + (x - x0) / (x1 - x0) * (W - L - 10);
    const py = (y) => 10 + (1 - (y - y0) / (y1 - y0)) * (H - B - 10);
    const svg = el('svg', { class: 'view-plot series', viewBox: '0 0 ' + W + ' ' + H, width: W, height: H });
    for (let k = 0; k <= 4; k++) {
      const y = y0 + (y1 - y0) * k / 4;
      svg.appendChild(el('line', { x1: L, x2: W - 10, y1: py(y), y2: py(y), stroke: '#e3e7ea' }));
      svg.appendChild(el('text', { x: L - 6, y: py(y) + 4, 'text-anchor': 'end', 'font-size': 11 },
        view.y_unit === 'bytes' ? fmtBytes(y) : String(parseFloat(y.toPrecision(3)))));
      const x = x0 + (x1 - x0) * k / 4;
      svg.appendChild(el('text', { x: px(x), y: H - 10, 'text-anchor': 'middle', 'font-size': 11 },
        String(parseFloat(x.toPrecision(4))) + ' ' + view.x_unit));
    }
    const colours = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];
    view.series.forEach((s, i) => {
      const pts = s.points.map((p) => px(p[0]).toFixed(1) + ',' + py(p[1]).toFixed(1)).join(' ');
      const line = el('polyline', { points: pts, fill: 'none', stroke: colours[i % colours.length],
        'stroke-width': 1.5, 'data-rank': String(s.rank) });
      line.appendChild(el('title', {}, s.label));
      svg.appendChild(line);
    });
    const wrap = html('div', { class: 'chart-wrap' });
    wrap.appendChild(svg);
    body.appendChild(wrap);
  }

  /* A view {unit: "bytes", nodes: [[parent, label, value, ri]...]} with parents
   * first: a flame graph, outermost at the top, widths = value, boxes of
   * region ri coloured like the report's regions (class r<ri>, data-ri).
   * Not an svg.chart: the page's chart checks count marks of the C side. */
  function renderFlamegraph(view, body) {
    const W = 1000;
    const ROW = 18;
    const nodes = view.nodes.map((n) => ({ parent: n[0], label: n[1], value: n[2], ri: n[3], kids: [] }));
    nodes.forEach((n, i) => {
      if (n.parent >= 0) nodes[n.parent].kids.push(i);
    });
    const total = nodes.length ? nodes[0].value : 0;
    let depth = 0;
    const place = (i, x, d) => {
      const n = nodes[i];
      n.x = x;
      n.w = total > 0 ? n.value / total * W : 0;
      n.d = d;
      depth = Math.max(depth, d + 1);
      n.kids.sort((a, b) => nodes[b].value - nodes[a].value);
      let at = x;
      n.kids.forEach((k) => {
        place(k, at, d + 1);
        at += nodes[k].w;
      });
    };
    if (nodes.length) place(0, 0, 0);
    const svg = el('svg', { class: 'view-plot flamegraph', viewBox: '0 0 ' + W + ' ' + depth * ROW,
      width: W, height: depth * ROW });
    const path = (i) => (nodes[i].parent >= 0 ? path(nodes[i].parent) + ' › ' : '') + nodes[i].label;
    nodes.forEach((n, i) => {
      if (n.w < 0.2) return;
      const g = el('g', n.ri >= 0 ? { 'data-ri': String(n.ri) } : {});
      const attrs = { class: n.ri >= 0 ? 'fbox r' + n.ri : 'fbox', x: n.x.toFixed(2),
        y: n.d * ROW + 1, width: Math.max(n.w - 0.5, 0.5).toFixed(2), height: ROW - 2 };
      if (n.ri < 0) attrs.fill = '#c8ccd0';
      const r = el('rect', attrs);
      r.appendChild(el('title', {}, path(i) + ' — ' + fmtBytes(n.value) + ' (' +
        (total > 0 ? (100 * n.value / total).toPrecision(3) : 0) + '%)'));
      g.appendChild(r);
      if (n.w > 40) {
        const chars = Math.floor((n.w - 6) / 6.5);
        const t = n.label.length > chars ? n.label.slice(0, Math.max(chars - 1, 1)) + '…' : n.label;
        const ta = { x: (n.x + 3).toFixed(2), y: n.d * ROW + 13, 'font-size': 11, 'pointer-events': 'none' };
        if (n.ri >= 0) ta.class = 't' + n.ri;
        g.appendChild(el('text', ta, t));
      }
      svg.appendChild(g);
    });
    const p = html('p', { class: 'notes' }, 'Live at the peak: ' + fmtBytes(view.peak_bytes) +
      ', ' + String(parseFloat(view.peak_s.toPrecision(6))) + ' s from the first region entry (capture ' +
      view.capture + ').');
    body.appendChild(p);
    const wrap = html('div', { class: 'chart-wrap' });
    wrap.appendChild(svg);
    body.appendChild(wrap);
  }

  function fmtCell(v, unit) {
    if (v === null || v === undefined) return '-';
    if (unit === 'ns') return String(parseFloat((v / 1e9).toPrecision(6)));
    if (unit === 'bytes') return fmtBytes(v);
    if (typeof v === 'number' && !Number.isInteger(v)) return String(parseFloat(v.toPrecision(6)));
    return String(v);
  }

  /* A view {columns: [{key, label, unit?, text?}], rows: [[...]], rank_column?,
   * region_column?}: a sortable table. unit "ns" shows seconds. */
  function renderTable(view, body) {
    const t = html('table', { class: 'sortable' });
    const head = t.createTHead().insertRow();
    view.columns.forEach((c) => {
      const th = html('th', c.text ? { class: 'name' } : {}, c.label + (c.unit === 'ns' ? ' [s]' : ''));
      head.appendChild(th);
    });
    const tb = t.createTBody();
    view.rows.forEach((row) => {
      const tr = tb.insertRow();
      if (view.rank_column !== undefined) tr.setAttribute('data-rank', String(row[view.rank_column]));
      if (view.region_column !== undefined && row[view.region_column] !== null) {
        tr.setAttribute('data-ri', String(row[view.region_column]));
      }
      view.columns.forEach((c, i) => {
        const v = row[i];
        const td = tr.insertCell();
        if (c.text) td.className = 'txt';
        const shown = c.region ? regionName(v) : fmtCell(v, c.unit);
        /* a region cell sorts by its name, not its index */
        td.setAttribute('data-v', v === null ? 'nan' : c.region ? shown : String(v));
        td.textContent = shown;
      });
    });
    body.appendChild(t);
  }

  /* A view {records: [{file?, rank, ri, region, function, filename, total, inlined_into,
   * rows: [[line, hits, seconds, text], ...]}]}: line_profiler's table per record, each
   * line shaded by its share of the record's time. */
  function renderSource(view, body) {
    view.records.forEach((r) => {
      const title = r.function + ' in region ' + (r.ri >= 0 ? regionName(r.ri) : r.region) +
        ' (rank ' + r.rank + (r.file ? ', ' + r.file : '') + ')';
      const h = html('h3', { class: 'src-title' }, title);
      if (r.ri >= 0) h.setAttribute('data-ri', String(r.ri));
      body.appendChild(h);
      let about = r.filename + ' — ' + fmtCell(r.total) + ' s of CPU time';
      if (r.inlined_into.length) about += '; inlined into ' + r.inlined_into.join(', ');
      body.appendChild(html('p', { class: 'notes' }, about));
      const t = html('table', { class: 'src' });
      const head = t.createTHead().insertRow();
      ['Line #', 'Hits', 'Time [s]', '% Time', 'Line Contents'].forEach((c) => {
        head.appendChild(html('th', c === 'Line Contents' ? { class: 'name' } : {}, c));
      });
      const tb = t.createTBody();
      r.rows.forEach((row) => {
        const tr = tb.insertRow();
        tr.setAttribute('data-rank', String(r.rank));
        const share = r.total > 0 && row[2] !== null ? row[2] / r.total : 0;
        tr.setAttribute('data-share', share.toFixed(4));
        if (share > 0) tr.style.background = 'rgba(214, 60, 30, ' + (0.06 + 0.64 * share).toFixed(3) + ')';
        [row[0] === null ? '??' : String(row[0]), row[1] === null ? '' : String(row[1]),
          row[2] === null ? '' : fmtCell(row[2]), row[2] === null ? '' : (100 * share).toFixed(1)]
          .forEach((v) => { tr.insertCell().textContent = v; });
        const code = tr.insertCell();
        code.className = 'code';
        code.textContent = row[3];
      });
      body.appendChild(t);
    });
  }

  const renderers = { table: renderTable, series: renderSeries, flamegraph: renderFlamegraph, source: renderSource };

  all('section.view[data-view]').forEach((sec) => {
    const id = sec.getAttribute('data-view');
    const view = data.views[id];
    const body = sec.querySelector('.view-body');
    const draw = view && renderers[view.renderer];
    if (!draw) {
      body.appendChild(html('p', { class: 'why' }, 'This report has no renderer for view ' + id + '.'));
      return;
    }
    draw(view, body);
    sec.setAttribute('data-drawn', '1');
  });

  /* ---- sortable tables ----------------------------------------------------------- */

  all('table.sortable').forEach((t) => {
    Array.prototype.forEach.call(t.tHead.rows[0].cells, (th, i) => {
      th.addEventListener('click', () => {
        const text = th.classList.contains('name');
        let desc = th.getAttribute('aria-sort') !== 'descending';
        if (text) desc = th.getAttribute('aria-sort') === 'ascending';
        Array.prototype.forEach.call(t.tHead.rows[0].cells, (o) => o.removeAttribute('aria-sort'));
        th.setAttribute('aria-sort', desc ? 'descending' : 'ascending');
        const tb = t.tBodies[0];
        const rows = Array.prototype.slice.call(tb.rows);
        rows.sort((r1, r2) => {
          const a = r1.cells[i].getAttribute('data-v');
          const b = r2.cells[i].getAttribute('data-v');
          const x = parseFloat(a);
          const y = parseFloat(b);
          let c;
          /* a text column (names, files) sorts as text, digits by value: a
           * region "2d_step" is a name, not the number 2 */
          if (text && a !== 'nan' && b !== 'nan') c = a.localeCompare(b, undefined, { numeric: true });
          else if (isNaN(x) && isNaN(y) && a !== 'nan' && b !== 'nan') c = a < b ? -1 : a > b ? 1 : 0;
          else if (isNaN(x) || isNaN(y)) return isNaN(x) - isNaN(y);
          else c = x < y ? -1 : x > y ? 1 : 0;
          return desc ? -c : c;
        });
        rows.forEach((r) => tb.appendChild(r));
      });
    });
  });

  window.spReport = { ready: true, data: data, highlight: highlight, selectRank: selectRank, setView: setView,
    renderers: renderers };
})();
