/* kflame latency scatter: every event a point (x = time, y = latency), linked to flame
 * graphs drawn by the viewer (viewer.js), not a copy of it.
 *
 * Usage: startScatter(root, meta, columns) with meta and columns as
 * kflame::render::html::scatter writes them (columns: name -> base64 little-endian typed
 * array). Points and the density map are drawn on a canvas (pixels written directly); the
 * legend, the function list, the outliers and the details are DOM elements built with
 * textContent only. State (filters, color, scale, view) is kept in the URL's hash.
 */
import { TreeBuilder, nameRank, formatWeight } from './model.js';
import { FlameViewer } from './viewer.js';
import { el } from './ui.js';

const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#17becf',
  '#bcbd22', '#393b79', '#e6550d', '#31a354', '#756bb1', '#843c39', '#3182bd', '#636363', '#7b4173',
  '#b5cf6b', '#ce6dbd'];
const OTHER = '#9a9a9a';
const LEGEND_MAX = COLORS.length;
const OUTLIERS = 25;
const LIST_MAX = 200;
const MARGIN = { left: 74, right: 12, top: 10, bottom: 38 };
const QUANTILES = [[0.5, 'p50'], [0.9, 'p90'], [0.99, 'p99'], [0.999, 'p99.9']];
const COLOR_BY = { comm: 'process', pid: 'pid', cpu: 'CPU', func: 'function', event: 'event kind' };
const HELP = 'drag: pan · wheel: zoom time (Shift: latency) · Shift+drag or Box: select · ' +
  'Lasso: free selection · drag on an axis: filter that range · click a point: its stack';

/** Bytes of a base64 string (Uint8Array.fromBase64 where the browser has it). */
function unbase64(b64) {
  if (Uint8Array.fromBase64) return Uint8Array.fromBase64(b64.trim());
  const bin = atob(b64.trim()), out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

const TYPES = { f64: Float64Array, i32: Int32Array, u32: Uint32Array, u16: Uint16Array, u8: Uint8Array };

/** The typed array of column `name` (little-endian, as written). */
function column(meta, columns, name) {
  const type = meta.types[name];
  if (!type) return null;
  const bytes = unbase64(columns[name]);
  return new TYPES[type](bytes.buffer, bytes.byteOffset, bytes.byteLength / TYPES[type].BYTES_PER_ELEMENT);
}

const fmtNs = (v) => formatWeight(Math.round(v), 'ns', 'ns').replace(/ \(.*\)$/, '');

/** A time offset in seconds for the axis and details. */
function fmtTime(ns, timed) {
  if (!timed) return '#' + Math.round(ns);
  return +(ns / 1e9).toFixed(6) + ' s';
}

/** The exact start time t0 + dt (ns) as seconds with 9 decimals. */
function absTime(t0, dt) {
  const [w, f = '0'] = t0.split('.');
  const ns = BigInt(w) * 1000000000n + BigInt((f + '000000000').slice(0, 9)) + BigInt(Math.round(dt));
  const neg = ns < 0n, a = neg ? -ns : ns;
  return (neg ? '-' : '') + (a / 1000000000n) + '.' + String(a % 1000000000n).padStart(9, '0');
}

/** Nice tick values between lo and hi (about n of them). */
function ticks(lo, hi, n) {
  const span = hi - lo;
  if (!(span > 0)) return [lo];
  const step0 = span / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) out.push(v);
  return out;
}

function hexColor(c) {
  const v = parseInt(c.slice(1), 16);
  // ABGR for a little-endian Uint32 view of RGBA pixels.
  return (0xff << 24 | (v & 0xff) << 16 | (v & 0xff00) | (v >> 16 & 0xff)) >>> 0;
}

/** Is (x, y) inside the polygon pts ([[x, y], ...])? */
function inside(pts, x, y) {
  let r = false;
  for (let i = 0, j = pts.length - 1; i < pts.length; j = i++) {
    const [xi, yi] = pts[i], [xj, yj] = pts[j];
    if ((yi > y) !== (yj > y) && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) r = !r;
  }
  return r;
}

class ScatterView {
  constructor(root, meta, columns) {
    const t0 = performance.now();
    this.meta = meta;
    this.n = meta.count;
    this.timings = {};
    this.load(columns);
    this.timings.decode = performance.now() - t0;
    this.state = this.defaults();
    this.buildDom(root);
    if (this.n === 0) {
      this.dom.plotBox.hidden = true;
      this.dom.empty.hidden = false;
      return;
    }
    this.restoreHash();
    this.bind();
    this.useColor();
    this.applyFilters();
  }

  defaults() {
    return { color: 'comm', log: true, density: false, q: '', regex: false, cs: false, checked: [],
      hidden: [], x: null, y: null, view: null, mode: 'pan', diff: false };
  }

  // ---- data -------------------------------------------------------------------------

  load(columns) {
    const m = this.meta, c = (name) => column(m, columns, name);
    this.t = c('t'); this.d = c('d'); this.pid = c('pid'); this.tid = c('tid');
    this.cpu = c('cpu'); this.comm = c('comm'); this.event = c('event'); this.stack = c('stack'); this.func = c('func');
    const flat = c('stacks') || new Uint32Array(0), frames = [];
    for (let at = 0; at < flat.length; at += 1 + flat[at]) frames.push(flat.subarray(at + 1, at + 1 + flat[at]));
    this.frames = frames;
    const n = this.n;
    this.ly = new Float32Array(n);
    let tMin = Infinity, tMax = -Infinity, dMin = Infinity, dMax = -Infinity;
    for (let i = 0; i < n; i++) {
      const t = this.t[i], d = this.d[i];
      this.ly[i] = Math.log10(d > 1 ? d : 1);
      if (t < tMin) tMin = t;
      if (t > tMax) tMax = t;
      if (d < dMin) dMin = d;
      if (d > dMax) dMax = d;
    }
    this.bounds = { tMin, tMax: tMax > tMin ? tMax : tMin + 1, dMin: Math.max(dMin, 1), dMax: Math.max(dMax, 2) };
    // Events per stack, and per frame name the events whose stack holds it.
    const perStack = new Float64Array(frames.length);
    for (let i = 0; i < n; i++) perStack[this.stack[i]]++;
    const perName = new Float64Array(m.names.length);
    frames.forEach((f, s) => { for (const nm of new Set(f)) perName[nm] += perStack[s]; });
    this.perName = perName;
    this.visible = new Uint8Array(n);
    this.stackOk = new Uint8Array(frames.length);
  }

  /** Category of each event for color mode `mode`: {cat, labels, colors}. */
  categories(mode) {
    const n = this.n, m = this.meta;
    let src, label;
    if (mode === 'comm') { src = this.comm; label = (v) => m.comms[v] || '(unknown)'; }
    else if (mode === 'event') { src = this.event; label = (v) => m.events[v] || '(none)'; }
    else if (mode === 'func') { src = this.func; label = (v) => m.names[v]; }
    else if (mode === 'cpu') { src = this.cpu; label = (v) => (v === (1 << (8 * this.cpu.BYTES_PER_ELEMENT)) - 1 ? 'CPU ?' : 'CPU ' + v); }
    else {
      src = this.pid;
      const commOf = new Map();
      for (let i = 0; i < n; i++) if (!commOf.has(this.pid[i])) commOf.set(this.pid[i], m.comms[this.comm[i]]);
      label = (v) => (v < 0 ? 'pid ?' : 'pid ' + v + ' (' + commOf.get(v) + ')');
    }
    const ids = new Map(), cat = new Uint32Array(n), keys = [];
    for (let i = 0; i < n; i++) {
      let c = ids.get(src[i]);
      if (c === undefined) { c = keys.length; ids.set(src[i], c); keys.push(src[i]); }
      cat[i] = c;
    }
    const counts = new Float64Array(keys.length);
    for (let i = 0; i < n; i++) counts[cat[i]]++;
    const order = Array.from(keys.keys()).sort((a, b) => counts[b] - counts[a] || (label(keys[a]) < label(keys[b]) ? -1 : 1));
    // The largest categories get a color and a legend entry of their own; the rest share one.
    const rank = new Int32Array(keys.length).fill(LEGEND_MAX);
    order.slice(0, LEGEND_MAX).forEach((c, r) => { rank[c] = r; });
    const labels = order.slice(0, LEGEND_MAX).map((c) => label(keys[c]));
    const legendCounts = order.slice(0, LEGEND_MAX).map((c) => counts[c]);
    if (keys.length > LEGEND_MAX) {
      labels.push((keys.length - LEGEND_MAX) + ' others');
      legendCounts.push(order.slice(LEGEND_MAX).reduce((s, c) => s + counts[c], 0));
    }
    for (let i = 0; i < n; i++) cat[i] = rank[cat[i]];
    const colors = labels.map((_, r) => (r < LEGEND_MAX ? COLORS[r] : OTHER));
    return { cat, labels, counts: legendCounts, colors, pixel: Uint32Array.from(colors, hexColor) };
  }

  // ---- DOM --------------------------------------------------------------------------

  buildDom(root) {
    const d = (this.dom = {}), m = this.meta;
    const btn = (act, text, title) => el('button', { type: 'button', 'data-act': act, text, title: title || text });
    d.title = el('h1', { class: 'kf-title', text: m.title });
    d.subtitle = el('div', { class: 'kf-subtitle', text: m.subtitle || '' });
    d.notes = el('div', { class: 'kf-notes sc-notes', text: m.notes || '' });
    d.color = el('select', { class: 'sc-color', 'aria-label': 'Color by' },
      ...Object.entries(COLOR_BY).map(([v, text]) => el('option', { value: v, text })));
    d.modes = el('span', { class: 'sc-modes' }, btn('pan', 'Pan', 'Drag pans the view'),
      btn('box', 'Box', 'Drag selects a box (or Shift+drag)'), btn('lasso', 'Lasso', 'Drag draws a free selection'));
    d.toolbar = el('div', { class: 'kf-toolbar' }, el('label', {}, 'Color by: ', d.color),
      btn('log', 'Log y', 'Logarithmic / linear latency axis'), btn('density', 'Density', 'Heat map of point density'),
      el('span', { class: 'kf-sep' }), d.modes, el('span', { class: 'kf-sep' }),
      btn('reset-view', 'Reset view'), btn('reset', 'Reset filters'));
    d.chips = el('div', { class: 'sc-chips' });
    d.count = el('div', { class: 'sc-count' });
    d.canvas = el('canvas', { class: 'sc-canvas', tabindex: '0', 'aria-label': 'Latency scatter plot' });
    d.plotBox = el('div', { class: 'sc-plot' }, d.canvas);
    d.empty = el('div', { class: 'kf-empty sc-empty', text: 'No events: the input holds no event with a latency.', hidden: '' });
    d.legend = el('div', { class: 'sc-legend', role: 'group', 'aria-label': 'Legend' });
    d.search = el('input', { type: 'search', class: 'sc-search', placeholder: 'Search functions', spellcheck: 'false' });
    d.regex = el('input', { type: 'checkbox', class: 'sc-regex' });
    d.cs = el('input', { type: 'checkbox', class: 'sc-case' });
    d.fnInfo = el('div', { class: 'sc-fn-info' });
    d.fnList = el('div', { class: 'sc-fn-list', role: 'group', 'aria-label': 'Functions' });
    d.fnBox = el('div', { class: 'sc-side-box' }, el('h2', { text: 'Search functions' }), d.search,
      el('div', {}, el('label', {}, d.regex, ' regex'), ' ', el('label', {}, d.cs, ' match case')), d.fnInfo, d.fnList);
    d.outliers = el('ol', { class: 'sc-outliers' });
    d.outBox = el('div', { class: 'sc-side-box' }, el('h2', { text: 'Slowest events' }), d.outliers);
    d.side = el('div', { class: 'sc-side' }, d.fnBox, d.outBox);
    d.details = el('div', { class: 'sc-details' });
    d.diff = el('label', { class: 'sc-diff-label' }, el('input', { type: 'checkbox', class: 'sc-diff' }),
      ' differential (selection against all visible events, scaled to the same total)');
    d.selInfo = el('div', { class: 'sc-sel-info' });
    d.graphs = el('div', { class: 'sc-graphs' });
    d.selBox = el('div', { class: 'sc-selection', hidden: '' }, d.selInfo, d.diff, d.graphs);
    d.root = el('div', { class: 'sc-scatter' }, d.title, d.subtitle, d.notes, d.toolbar, d.chips, d.count,
      el('div', { class: 'sc-main' }, el('div', { class: 'sc-left' }, d.plotBox, d.empty, d.legend), d.side),
      d.details, d.selBox, el('div', { class: 'kf-help', text: HELP }));
    root.replaceChildren(d.root);
  }

  /** Re-derives the colors of the current mode and rebuilds the legend. */
  useColor() {
    this.cats = this.categories(this.state.color);
    this.dom.color.value = this.state.color;
    const hidden = new Set(this.state.hidden);
    this.hiddenCat = new Uint8Array(this.cats.labels.length);
    this.cats.labels.forEach((l, c) => { if (hidden.has(l)) this.hiddenCat[c] = 1; });
    const items = this.cats.labels.map((label, c) => {
      const b = el('button', { type: 'button', class: 'sc-legend-item', 'data-cat': String(c),
        'aria-pressed': String(!this.hiddenCat[c]), title: 'Show or hide ' + label },
      el('span', { class: 'kf-swatch', style: 'background:' + this.cats.colors[c] }), el('span', { class: 'sc-legend-label', text: label }),
      el('span', { class: 'sc-legend-count', text: String(this.cats.counts[c]) }));
      return b;
    });
    this.dom.legend.replaceChildren(el('span', { class: 'sc-legend-title', text: COLOR_BY[this.state.color] + ':' }), ...items);
  }

  // ---- filters ----------------------------------------------------------------------

  /** The search as a predicate on names, or null for an invalid regex. */
  matcher() {
    const s = this.state;
    if (!s.q) return null;
    if (s.regex) {
      try {
        const re = new RegExp(s.q, s.cs ? '' : 'i');
        return (nm) => re.test(nm);
      } catch (e) {
        return false;
      }
    }
    const q = s.cs ? s.q : s.q.toLowerCase();
    return s.cs ? (nm) => nm.includes(q) : (nm) => nm.toLowerCase().includes(q);
  }

  renderFunctions() {
    const d = this.dom, s = this.state, names = this.meta.names, match = this.matcher();
    d.search.value = s.q;
    d.regex.checked = s.regex;
    d.cs.checked = s.cs;
    d.search.classList.toggle('kf-error', match === false);
    const checked = new Set(s.checked);
    const shown = [];
    for (let nm = 0; nm < names.length; nm++) {
      if (this.perName[nm] === 0) continue;
      if (checked.has(names[nm]) || (match && match(names[nm]))) shown.push(nm);
    }
    shown.sort((a, b) => (checked.has(names[b]) - checked.has(names[a])) || this.perName[b] - this.perName[a]);
    const total = shown.filter((nm) => !checked.has(names[nm])).length;
    d.fnInfo.textContent = match === false ? 'invalid regex' : match ? total + ' functions match' +
      (shown.length > LIST_MAX ? ' (the ' + LIST_MAX + ' with most events shown)' : '') : checked.size ? '' : 'type to list the functions of the stacks';
    d.fnList.replaceChildren(...shown.slice(0, LIST_MAX).map((nm) => {
      const box = el('input', { type: 'checkbox', 'data-fn': names[nm] });
      box.checked = checked.has(names[nm]);
      return el('label', { class: 'sc-fn' }, box, el('span', { class: 'sc-fn-name', text: names[nm] }),
        el('span', { class: 'sc-fn-count', text: String(this.perName[nm]) }));
    }));
  }

  /** Recomputes which events are visible, then everything that depends on it. */
  applyFilters() {
    const s = this.state, n = this.n, vis = this.visible, frames = this.frames;
    const checked = new Set(s.checked.map((nm) => this.meta.names.indexOf(nm)).filter((i) => i >= 0));
    const anyChecked = s.checked.length > 0;
    for (let k = 0; k < frames.length; k++) this.stackOk[k] = !anyChecked || frames[k].some((f) => checked.has(f)) ? 1 : 0;
    const [x0, x1] = s.x || [-Infinity, Infinity], [y0, y1] = s.y || [-Infinity, Infinity];
    const cat = this.cats.cat, hid = this.hiddenCat, ok = this.stackOk;
    let count = 0;
    for (let i = 0; i < n; i++) {
      const v = !hid[cat[i]] && ok[this.stack[i]] && this.t[i] >= x0 && this.t[i] <= x1 && this.d[i] >= y0 && this.d[i] <= y1;
      vis[i] = v ? 1 : 0;
      count += vis[i];
    }
    this.visibleCount = count;
    this.quantiles();
    this.renderFunctions();
    this.renderChips();
    this.renderLegendState();
    this.renderOutliers();
    this.dom.count.textContent = count + ' of ' + n + ' events shown';
    if (this.selection) this.select(this.selection.shape, true);
    this.draw();
    this.saveHash();
  }

  quantiles() {
    const v = new Float64Array(this.visibleCount);
    let k = 0;
    for (let i = 0; i < this.n; i++) if (this.visible[i]) v[k++] = this.d[i];
    v.sort();
    this.q = v.length ? QUANTILES.map(([q, name]) => [name, v[Math.min(v.length - 1, Math.floor(q * v.length))]]) : [];
  }

  renderChips() {
    const s = this.state, chips = [];
    const chip = (text, act) => el('button', { type: 'button', class: 'sc-chip', 'data-act': act, title: 'Remove this filter', text: text + ' ✕' });
    if (s.x) chips.push(chip('time ' + fmtTime(s.x[0], this.meta.timed) + ' – ' + fmtTime(s.x[1], this.meta.timed), 'clear-x'));
    if (s.y) chips.push(chip('latency ' + fmtNs(s.y[0]) + ' – ' + fmtNs(s.y[1]), 'clear-y'));
    for (const f of s.checked) chips.push(el('button', { type: 'button', class: 'sc-chip', 'data-uncheck': f, text: 'function ' + f + ' ✕' }));
    if (s.hidden.length) chips.push(chip(s.hidden.length + ' hidden in legend', 'clear-hidden'));
    this.dom.chips.replaceChildren(...chips);
  }

  renderLegendState() {
    for (const b of this.dom.legend.querySelectorAll('button')) b.setAttribute('aria-pressed', String(!this.hiddenCat[+b.dataset.cat]));
    const d = this.dom.root;
    d.querySelector('[data-act=log]').setAttribute('aria-pressed', String(this.state.log));
    d.querySelector('[data-act=density]').setAttribute('aria-pressed', String(this.state.density));
    for (const b of this.dom.modes.children) b.setAttribute('aria-pressed', String(b.dataset.act === this.state.mode));
  }

  /** The slowest visible events, each a link to its point. */
  renderOutliers() {
    const top = [];
    for (let i = 0; i < this.n; i++) {
      if (!this.visible[i]) continue;
      if (top.length < OUTLIERS) { top.push(i); if (top.length === OUTLIERS) top.sort((a, b) => this.d[b] - this.d[a]); continue; }
      if (this.d[i] > this.d[top[OUTLIERS - 1]]) {
        let k = OUTLIERS - 1;
        while (k > 0 && this.d[top[k - 1]] < this.d[i]) { top[k] = top[k - 1]; k--; }
        top[k] = i;
      }
    }
    if (top.length < OUTLIERS) top.sort((a, b) => this.d[b] - this.d[a]);
    this.outliers = top;
    this.dom.outliers.replaceChildren(...top.map((i) => el('li', {},
      el('button', { type: 'button', class: 'sc-outlier', 'data-point': String(i) },
        fmtNs(this.d[i]) + '  ' + this.meta.comms[this.comm[i]] + ' ' + this.meta.names[this.func[i]]))));
  }

  // ---- view and drawing -------------------------------------------------------------

  /** y value of a latency in the current scale. */
  yOf(d) {
    return this.state.log ? Math.log10(d > 1 ? d : 1) : d;
  }

  /** The full view: every event, with a little room. */
  fullView() {
    const b = this.bounds, pad = (b.tMax - b.tMin) * 0.01;
    if (this.state.log) {
      const y0 = Math.log10(b.dMin), y1 = Math.log10(b.dMax);
      return { x0: b.tMin - pad, x1: b.tMax + pad, y0: y0 - 0.05 * (y1 - y0 || 1), y1: y1 + 0.05 * (y1 - y0 || 1) };
    }
    return { x0: b.tMin - pad, x1: b.tMax + pad, y0: 0, y1: b.dMax * 1.05 };
  }

  get view() {
    return this.state.view || this.fullView();
  }

  /** Sizes the canvas to its box and returns the plot rectangle in CSS pixels. */
  layout() {
    const c = this.dom.canvas, ratio = window.devicePixelRatio || 1;
    const w = Math.max(300, this.dom.plotBox.clientWidth), h = Math.max(240, Math.min(520, Math.round(window.innerHeight * 0.55)));
    if (c.width !== Math.round(w * ratio) || c.height !== Math.round(h * ratio)) {
      c.width = Math.round(w * ratio);
      c.height = Math.round(h * ratio);
      c.style.width = w + 'px';
      c.style.height = h + 'px';
    }
    this.ratio = ratio;
    this.plot = { x: MARGIN.left, y: MARGIN.top, w: w - MARGIN.left - MARGIN.right, h: h - MARGIN.top - MARGIN.bottom, cw: w, ch: h };
    return this.plot;
  }

  /** Plot pixel (CSS) of data coordinates and back. */
  px(t) { const v = this.view, p = this.plot; return p.x + ((t - v.x0) / (v.x1 - v.x0)) * p.w; }
  py(y) { const v = this.view, p = this.plot; return p.y + p.h - ((y - v.y0) / (v.y1 - v.y0)) * p.h; }
  tAt(x) { const v = this.view, p = this.plot; return v.x0 + ((x - p.x) / p.w) * (v.x1 - v.x0); }
  yAt(y) { const v = this.view, p = this.plot; return v.y0 + ((p.y + p.h - y) / p.h) * (v.y1 - v.y0); }
  dAt(y) { const v = this.yAt(y); return this.state.log ? Math.pow(10, v) : v; }

  draw() {
    const t0 = performance.now();
    const p = this.layout(), c = this.dom.canvas, ctx = c.getContext('2d'), r = this.ratio;
    const W = c.width, H = c.height;
    const img = ctx.createImageData(W, H), pix = new Uint32Array(img.data.buffer);
    pix.fill(0xffffffff);
    const v = this.view, sx = (p.w * r) / (v.x1 - v.x0), sy = (p.h * r) / (v.y1 - v.y0);
    const left = p.x * r, bottom = (p.y + p.h) * r, right = (p.x + p.w) * r, top = p.y * r;
    const t = this.t, ys = this.state.log ? this.ly : this.d, vis = this.visible, cat = this.cats.cat, colors = this.cats.pixel;
    const n = this.n;
    if (this.state.density) {
      const cell = Math.max(2, Math.round(3 * r)), gw = Math.ceil((right - left) / cell), gh = Math.ceil((bottom - top) / cell);
      const grid = new Float32Array(gw * gh);
      let max = 0;
      for (let i = 0; i < n; i++) {
        if (!vis[i]) continue;
        const x = left + (t[i] - v.x0) * sx, y = bottom - (ys[i] - v.y0) * sy;
        if (x < left || x >= right || y < top || y >= bottom) continue;
        const k = ((y - top) / cell | 0) * gw + ((x - left) / cell | 0);
        if (++grid[k] > max) max = grid[k];
      }
      const lmax = Math.log(max + 1);
      for (let gy = 0; gy < gh; gy++) {
        for (let gx = 0; gx < gw; gx++) {
          const g = grid[gy * gw + gx];
          if (!g) continue;
          const f = Math.log(g + 1) / lmax, rr = 255, gg = Math.round(235 * (1 - f)), bb = Math.round(120 * (1 - f));
          const col = (0xff << 24 | bb << 16 | gg << 8 | rr) >>> 0;
          for (let yy = 0; yy < cell; yy++) {
            const row = Math.round(top) + gy * cell + yy;
            if (row >= H) break;
            for (let xx = 0; xx < cell; xx++) {
              const colx = Math.round(left) + gx * cell + xx;
              if (colx < W) pix[row * W + colx] = col;
            }
          }
        }
      }
    } else {
      const size = Math.max(2, Math.round(2 * r));
      for (let i = 0; i < n; i++) {
        if (!vis[i]) continue;
        const x = (left + (t[i] - v.x0) * sx) | 0, y = (bottom - (ys[i] - v.y0) * sy) | 0;
        if (x < left || x >= right - size || y < top || y >= bottom - size) continue;
        const col = colors[cat[i]];
        for (let yy = 0; yy < size; yy++) {
          const o = (y + yy) * W + x;
          for (let xx = 0; xx < size; xx++) pix[o + xx] = col;
        }
      }
    }
    ctx.putImageData(img, 0, 0);
    ctx.setTransform(r, 0, 0, r, 0, 0);
    this.drawAxes(ctx, p);
    this.drawOverlay(ctx, p);
    this.timings.lastDraw = performance.now() - t0;
  }

  drawAxes(ctx, p) {
    const v = this.view;
    ctx.strokeStyle = '#888';
    ctx.lineWidth = 1;
    ctx.strokeRect(p.x + 0.5, p.y + 0.5, p.w, p.h);
    ctx.fillStyle = '#333';
    ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    for (const tv of ticks(v.x0, v.x1, 8)) {
      const x = this.px(tv);
      ctx.fillRect(x, p.y + p.h, 1, 4);
      ctx.fillText(fmtTime(tv, this.meta.timed), x, p.y + p.h + 6);
    }
    ctx.fillText(this.meta.timed ? 'time after first event (drag here: filter a time range)' : 'event number', p.x + p.w / 2, p.y + p.h + 22);
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    const yt = this.state.log ? ticks(Math.ceil(v.y0), Math.floor(v.y1), Math.max(1, Math.min(8, Math.floor(v.y1) - Math.ceil(v.y0)))) : ticks(v.y0, v.y1, 6);
    for (const yv of yt) {
      const y = this.py(yv);
      if (y < p.y || y > p.y + p.h) continue;
      ctx.fillRect(p.x - 4, y, 4, 1);
      ctx.fillText(fmtNs(this.state.log ? Math.pow(10, yv) : yv), p.x - 6, y);
    }
    ctx.save();
    ctx.translate(12, p.y + p.h / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = 'center';
    ctx.fillText('latency (' + (this.state.log ? 'log' : 'linear') + ')', 0, 0);
    ctx.restore();
    // Percentile lines.
    ctx.textAlign = 'left';
    ctx.textBaseline = 'bottom';
    ctx.setLineDash([4, 3]);
    for (const [name, d] of this.q) {
      const y = this.py(this.yOf(d));
      if (y < p.y || y > p.y + p.h) continue;
      ctx.strokeStyle = '#a33';
      ctx.beginPath();
      ctx.moveTo(p.x, y + 0.5);
      ctx.lineTo(p.x + p.w, y + 0.5);
      ctx.stroke();
      ctx.fillStyle = '#a33';
      ctx.fillText(name + ' ' + fmtNs(d), p.x + 4, y - 1);
    }
    ctx.setLineDash([]);
  }

  drawOverlay(ctx, p) {
    const drag = this.drag;
    ctx.strokeStyle = '#000';
    ctx.fillStyle = 'rgba(60, 90, 200, 0.12)';
    if (drag && drag.kind === 'box' && drag.moved) {
      ctx.fillRect(Math.min(drag.x0, drag.x), Math.min(drag.y0, drag.y), Math.abs(drag.x - drag.x0), Math.abs(drag.y - drag.y0));
      ctx.strokeRect(Math.min(drag.x0, drag.x) + 0.5, Math.min(drag.y0, drag.y) + 0.5, Math.abs(drag.x - drag.x0), Math.abs(drag.y - drag.y0));
    }
    if (drag && drag.kind === 'lasso' && drag.pts.length > 1) this.path(ctx, drag.pts);
    if (drag && drag.kind === 'xrange') ctx.fillRect(Math.min(drag.x0, drag.x), p.y, Math.abs(drag.x - drag.x0), p.h);
    if (drag && drag.kind === 'yrange') ctx.fillRect(p.x, Math.min(drag.y0, drag.y), p.w, Math.abs(drag.y - drag.y0));
    const sel = this.selection;
    if (sel && !drag) {
      if (sel.shape.box) {
        const [t0, t1, y0, y1] = sel.shape.box;
        const x = this.px(t0), x1 = this.px(t1), y = this.py(y1), yb = this.py(y0);
        ctx.strokeRect(x + 0.5, y + 0.5, x1 - x, yb - y);
      } else if (sel.shape.lasso) {
        this.path(ctx, sel.shape.lasso.map(([t, y]) => [this.px(t), this.py(y)]));
      }
    }
    if (this.point >= 0 && this.visible[this.point]) {
      const x = this.px(this.t[this.point]), y = this.py(this.yOf(this.d[this.point]));
      ctx.strokeStyle = '#000';
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.arc(x + 1, y + 1, 6, 0, 2 * Math.PI);
      ctx.stroke();
      ctx.lineWidth = 1;
    }
  }

  path(ctx, pts) {
    ctx.beginPath();
    ctx.moveTo(pts[0][0], pts[0][1]);
    for (const q of pts.slice(1)) ctx.lineTo(q[0], q[1]);
    ctx.closePath();
    ctx.fill();
    ctx.stroke();
  }

  // ---- points, selections, flame graphs ---------------------------------------------

  /** The visible event nearest to (x, y) in CSS pixels of the canvas, within 8 px, or -1. */
  nearest(x, y) {
    const v = this.view, p = this.plot, sx = p.w / (v.x1 - v.x0), sy = p.h / (v.y1 - v.y0);
    const ys = this.state.log ? this.ly : this.d;
    let best = -1, bd = 64;
    for (let i = 0; i < this.n; i++) {
      if (!this.visible[i]) continue;
      const dx = p.x + (this.t[i] - v.x0) * sx + 1 - x, dy = p.y + p.h - (ys[i] - v.y0) * sy + 1 - y;
      const dd = dx * dx + dy * dy;
      if (dd < bd) { bd = dd; best = i; }
    }
    return best;
  }

  /** Shows event i: its details and the flame graph of its stack. */
  showPoint(i) {
    this.point = i;
    const m = this.meta, d = this.dom;
    const rows = [['comm', m.comms[this.comm[i]] || '?'], ['pid', this.pid[i] < 0 ? '?' : String(this.pid[i])],
      ['tid', this.tid && this.tid[i] >= 0 ? String(this.tid[i]) : '?'],
      ['CPU', this.cpu[i] === (1 << (8 * this.cpu.BYTES_PER_ELEMENT)) - 1 ? '?' : String(this.cpu[i])],
      ['start', m.timed ? absTime(m.t0, this.t[i]) + ' s (' + fmtTime(this.t[i], true) + ' after the first event)' : '#' + this.t[i]],
      ['duration', formatWeight(this.d[i], 'ns', 'ns')], ['event', m.events[this.event[i]] || ''],
      ['function', m.names[this.func[i]]]];
    d.details.replaceChildren(el('h2', { text: 'Event' }),
      el('dl', { class: 'sc-detail-list' }, ...rows.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { class: 'sc-' + k.toLowerCase(), text: v })])),
      el('div', { class: 'sc-point-graph' }));
    const w = new Float64Array(this.frames.length);
    w[this.stack[i]] = this.d[i];
    this.pointViewer = this.flame(d.details.lastChild, w, null, 'Stack of the event', this.pointViewer);
    this.draw();
  }

  /** A FlameViewer in box of stacks weighted by w (and before, differential). */
  flame(box, w, before, title, old) {
    if (old) old.destroy();
    const names = this.meta.names, b = new TreeBuilder(names, false, !!before);
    for (let s = 0; s < this.frames.length; s++) {
      if (!w[s] && !(before && before[s])) continue;
      let node = 0;
      for (const f of this.frames[s]) node = b.child(node, f);
      b.add(node, w[s], before ? before[s] : 0);
    }
    const tree = b.build(nameRank(names));
    const meta = { title, unit: 'ns', countname: 'ns', palette: 'kernel', inverted: false, flamechart: false,
      embedded: true, differential: !!before };
    const viewer = new FlameViewer(box, tree, meta);
    return viewer;
  }

  /** Selects the visible events in shape ({box: [t0, t1, y0, y1]} or {lasso: [[t, y]...]})
   * and draws their flame graph, weighted by latency, beside that of every visible event. */
  select(shape, quiet) {
    const t0 = performance.now(), n = this.n, ys = this.state.log ? this.ly : this.d;
    const sel = new Float64Array(this.frames.length), all = new Float64Array(this.frames.length);
    let count = 0, total = 0;
    let test;
    if (shape.box) {
      const [a, b, c, d] = shape.box;
      test = (i) => this.t[i] >= a && this.t[i] <= b && ys[i] >= c && ys[i] <= d;
    } else {
      const pts = shape.lasso;
      const xs = pts.map((q) => q[0]), yv = pts.map((q) => q[1]);
      const [a, b, c, d] = [Math.min(...xs), Math.max(...xs), Math.min(...yv), Math.max(...yv)];
      test = (i) => this.t[i] >= a && this.t[i] <= b && ys[i] >= c && ys[i] <= d && inside(pts, this.t[i], ys[i]);
    }
    const ids = [];
    for (let i = 0; i < n; i++) {
      if (!this.visible[i]) continue;
      all[this.stack[i]] += this.d[i];
      if (test(i)) { sel[this.stack[i]] += this.d[i]; count++; total += this.d[i]; ids.push(i); }
    }
    this.selection = { shape, count, total, ids, log: this.state.log };
    const d = this.dom;
    d.selBox.hidden = false;
    d.selInfo.replaceChildren(el('h2', { text: 'Selection' }),
      el('span', { class: 'sc-sel-count', text: String(count) }), ' events, total latency ',
      el('span', { class: 'sc-sel-total', 'data-ns': String(total), text: formatWeight(total, 'ns', 'ns') }),
      ' ', el('button', { type: 'button', 'data-act': 'clear-selection', text: 'Clear selection' }));
    if (this.selViewers) for (const v of this.selViewers) v.destroy();
    d.graphs.replaceChildren();
    const diff = this.state.diff;
    d.diff.querySelector('input').checked = diff;
    if (diff) {
      const scale = total / (all.reduce((s, x) => s + x, 0) || 1);
      const before = all.map((x) => x * scale);
      const box = el('div', { class: 'sc-graph sc-graph-diff' });
      d.graphs.append(box);
      this.selViewers = [this.flame(box, sel, before, 'Selection against all visible (red: more in the selection)')];
    } else {
      const a = el('div', { class: 'sc-graph sc-graph-sel' }), b = el('div', { class: 'sc-graph sc-graph-all' });
      d.graphs.append(a, b);
      this.selViewers = [this.flame(a, sel, null, 'Selected events, by latency'), this.flame(b, all, null, 'All visible events, by latency')];
    }
    this.timings.selection = performance.now() - t0;
    if (!quiet) this.draw();
  }

  clearSelection() {
    if (this.selViewers) for (const v of this.selViewers) v.destroy();
    this.selViewers = null;
    this.selection = null;
    this.dom.selBox.hidden = true;
    this.draw();
  }

  // ---- events -----------------------------------------------------------------------

  bind() {
    const d = this.dom, c = d.canvas;
    this.point = -1;
    d.root.addEventListener('click', (e) => this.click(e));
    d.color.addEventListener('change', () => { this.state.color = d.color.value; this.state.hidden = []; this.useColor(); this.applyFilters(); });
    let timer = 0;
    const search = () => { this.state.q = d.search.value; this.renderFunctions(); this.saveHash(); };
    d.search.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(search, 120); });
    d.search.addEventListener('keydown', (e) => { if (e.key === 'Enter') { clearTimeout(timer); search(); } });
    d.regex.addEventListener('change', () => { this.state.regex = d.regex.checked; search(); });
    d.cs.addEventListener('change', () => { this.state.cs = d.cs.checked; search(); });
    d.fnList.addEventListener('change', (e) => {
      const f = e.target.dataset.fn;
      if (f === undefined) return;
      const s = this.state;
      s.checked = e.target.checked ? [...s.checked, f] : s.checked.filter((x) => x !== f);
      this.applyFilters();
    });
    d.diff.querySelector('input').addEventListener('change', (e) => {
      this.state.diff = e.target.checked;
      if (this.selection) this.select(this.selection.shape);
      this.saveHash();
    });
    c.addEventListener('pointerdown', (e) => this.down(e));
    c.addEventListener('pointermove', (e) => this.move(e));
    c.addEventListener('pointerup', (e) => this.up(e));
    c.addEventListener('wheel', (e) => this.wheel(e), { passive: false });
    c.addEventListener('keydown', (e) => this.key(e));
    this.global = new AbortController();
    window.addEventListener('resize', () => this.draw(), { signal: this.global.signal });
    window.addEventListener('hashchange', () => {
      if (location.hash === this.lastHash) return;
      this.restoreHash();
      this.useColor();
      this.applyFilters();
    }, { signal: this.global.signal });
  }

  destroy() {
    if (this.global) this.global.abort();
    if (this.pointViewer) this.pointViewer.destroy();
    if (this.selViewers) for (const v of this.selViewers) v.destroy();
    this.dom.root.remove();
  }

  click(e) {
    const b = e.target.closest('button');
    if (!b || !this.dom.root.contains(b) || b.closest('.kf-viewer')) return;
    const s = this.state;
    if (b.dataset.cat !== undefined) {
      const label = this.cats.labels[+b.dataset.cat];
      s.hidden = s.hidden.includes(label) ? s.hidden.filter((x) => x !== label) : [...s.hidden, label];
      this.hiddenCat[+b.dataset.cat] ^= 1;
      return this.applyFilters();
    }
    if (b.dataset.point !== undefined) return this.showPoint(+b.dataset.point);
    if (b.dataset.uncheck !== undefined) { s.checked = s.checked.filter((x) => x !== b.dataset.uncheck); return this.applyFilters(); }
    this.act(b.dataset.act);
  }

  act(name) {
    const s = this.state;
    switch (name) {
      case 'log': s.log = !s.log; s.view = null; if (this.selection) this.clearSelection(); return this.applyFilters();
      case 'density': s.density = !s.density; this.renderLegendState(); this.draw(); return this.saveHash();
      case 'pan': case 'box': case 'lasso': s.mode = name; this.renderLegendState(); return this.saveHash();
      case 'reset-view': s.view = null; this.draw(); return this.saveHash();
      case 'reset': return this.resetFilters();
      case 'clear-x': s.x = null; return this.applyFilters();
      case 'clear-y': s.y = null; return this.applyFilters();
      case 'clear-hidden': s.hidden = []; this.hiddenCat.fill(0); return this.applyFilters();
      case 'clear-selection': return this.clearSelection();
    }
  }

  /** Reset filters: every function unchecked, legend entries shown, no ranges, no search. */
  resetFilters() {
    const s = this.state;
    Object.assign(s, { q: '', checked: [], hidden: [], x: null, y: null });
    this.hiddenCat.fill(0);
    this.applyFilters();
  }

  /** Canvas CSS pixel of a pointer event. */
  at(e) {
    const r = this.dom.canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  down(e) {
    const { x, y } = this.at(e), p = this.plot;
    let kind;
    if (x < p.x && y >= p.y && y <= p.y + p.h) kind = 'yrange';
    else if (y > p.y + p.h && x >= p.x && x <= p.x + p.w) kind = 'xrange';
    else if (x >= p.x && x <= p.x + p.w && y >= p.y && y <= p.y + p.h) kind = e.shiftKey ? 'box' : this.state.mode;
    else return;
    this.dom.canvas.setPointerCapture(e.pointerId);
    this.drag = { kind, x0: x, y0: y, x, y, moved: false, view: { ...this.view }, pts: [[x, y]] };
  }

  move(e) {
    const g = this.drag;
    if (!g) return;
    const { x, y } = this.at(e);
    if (Math.abs(x - g.x0) + Math.abs(y - g.y0) > 3) g.moved = true;
    g.x = x; g.y = y;
    if (g.kind === 'pan') {
      const v = g.view, p = this.plot;
      const dx = ((x - g.x0) / p.w) * (v.x1 - v.x0), dy = ((y - g.y0) / p.h) * (v.y1 - v.y0);
      this.state.view = { x0: v.x0 - dx, x1: v.x1 - dx, y0: v.y0 + dy, y1: v.y1 + dy };
    }
    if (g.kind === 'lasso') g.pts.push([x, y]);
    this.draw();
  }

  up(e) {
    const g = this.drag;
    if (!g) return;
    this.drag = null;
    const { x, y } = this.at(e), s = this.state;
    if (!g.moved) {
      if (g.kind === 'pan' || g.kind === 'box' || g.kind === 'lasso') {
        const i = this.nearest(x, y);
        if (i >= 0) return this.showPoint(i);
      }
      return this.draw();
    }
    if (g.kind === 'pan') { this.draw(); return this.saveHash(); }
    if (g.kind === 'xrange') { s.x = [this.tAt(Math.min(g.x0, x)), this.tAt(Math.max(g.x0, x))]; return this.applyFilters(); }
    if (g.kind === 'yrange') { s.y = [this.dAt(Math.max(g.y0, y)), this.dAt(Math.min(g.y0, y))]; return this.applyFilters(); }
    if (g.kind === 'box') {
      return this.select({ box: [this.tAt(Math.min(g.x0, x)), this.tAt(Math.max(g.x0, x)), this.yAt(Math.max(g.y0, y)), this.yAt(Math.min(g.y0, y))] });
    }
    if (g.kind === 'lasso' && g.pts.length > 2) return this.select({ lasso: g.pts.map(([px, py]) => [this.tAt(px), this.yAt(py)]) });
    this.draw();
  }

  /** Wheel: zoom time around the pointer (Shift: latency). */
  wheel(e) {
    e.preventDefault();
    const { x, y } = this.at(e), v = { ...this.view }, f = Math.pow(1.0015, e.deltaY);
    if (e.shiftKey) {
      const c = this.yAt(y);
      v.y0 = c - (c - v.y0) * f; v.y1 = c + (v.y1 - c) * f;
    } else {
      const c = this.tAt(x);
      v.x0 = c - (c - v.x0) * f; v.x1 = c + (v.x1 - c) * f;
    }
    this.state.view = v;
    this.draw();
    clearTimeout(this.wheelTimer);
    this.wheelTimer = setTimeout(() => this.saveHash(), 200);
  }

  /** Keys on the focused plot: arrows pan, +/- zoom, Esc clears the selection, 0 resets. */
  key(e) {
    const v = { ...this.view }, wx = (v.x1 - v.x0) * 0.1, wy = (v.y1 - v.y0) * 0.1;
    const moves = { ArrowLeft: [-wx, 0], ArrowRight: [wx, 0], ArrowUp: [0, wy], ArrowDown: [0, -wy] };
    if (moves[e.key]) {
      const [dx, dy] = moves[e.key];
      this.state.view = { x0: v.x0 + dx, x1: v.x1 + dx, y0: v.y0 + dy, y1: v.y1 + dy };
    } else if (e.key === '+' || e.key === '-') {
      const f = e.key === '+' ? 0.8 : 1.25, c = (v.x0 + v.x1) / 2;
      this.state.view = { ...v, x0: c - (c - v.x0) * f, x1: c + (v.x1 - c) * f };
    } else if (e.key === '0') this.state.view = null;
    else if (e.key === 'Escape') return this.clearSelection();
    else return;
    e.preventDefault();
    this.draw();
    this.saveHash();
  }

  // ---- URL state --------------------------------------------------------------------

  saveHash() {
    const s = this.state, def = this.defaults(), p = new URLSearchParams();
    if (s.color !== def.color) p.set('color', s.color);
    if (!s.log) p.set('linear', '1');
    if (s.density) p.set('density', '1');
    if (s.q) p.set('q', s.q);
    if (s.regex) p.set('regex', '1');
    if (s.cs) p.set('case', '1');
    if (s.checked.length) p.set('fn', JSON.stringify(s.checked));
    if (s.hidden.length) p.set('hide', JSON.stringify(s.hidden));
    if (s.x) p.set('x', s.x.join(','));
    if (s.y) p.set('y', s.y.join(','));
    if (s.view) p.set('view', [s.view.x0, s.view.x1, s.view.y0, s.view.y1].map((x) => +x.toPrecision(8)).join(','));
    if (s.mode !== 'pan') p.set('mode', s.mode);
    if (s.diff) p.set('diff', '1');
    const hash = p.toString() ? '#' + p.toString() : '';
    if (hash !== (location.hash || '')) history.replaceState(null, '', hash || location.pathname + location.search);
    this.lastHash = location.hash;
  }

  restoreHash() {
    const p = new URLSearchParams(location.hash.slice(1)), s = this.defaults();
    const list = (k) => { try { const v = JSON.parse(p.get(k) || '[]'); return Array.isArray(v) ? v.map(String) : []; } catch (e) { return []; } };
    const nums = (k, len) => { const v = (p.get(k) || '').split(',').map(Number); return v.length === len && v.every(Number.isFinite) ? v : null; };
    if (COLOR_BY[p.get('color')]) s.color = p.get('color');
    s.log = p.get('linear') !== '1';
    s.density = p.get('density') === '1';
    s.q = p.get('q') || '';
    s.regex = p.get('regex') === '1';
    s.cs = p.get('case') === '1';
    s.checked = list('fn');
    s.hidden = list('hide');
    s.x = nums('x', 2);
    s.y = nums('y', 2);
    const v = nums('view', 4);
    s.view = v && v[1] > v[0] && v[3] > v[2] ? { x0: v[0], x1: v[1], y0: v[2], y1: v[3] } : null;
    if (['box', 'lasso'].includes(p.get('mode'))) s.mode = p.get('mode');
    s.diff = p.get('diff') === '1';
    this.state = s;
    this.lastHash = location.hash;
  }
}

/** Shows the scatter of meta + columns in root; the view is also globalThis.kflameScatter
 * (tests, the console). */
function startScatter(root, meta, columns, t0 = performance.now()) {
  const view = new ScatterView(root, meta, columns);
  view.timings.firstDraw = performance.now() - t0;
  // Since navigation: the first frame that shows the points.
  requestAnimationFrame(() => { view.timings.painted = performance.now(); });
  globalThis.kflameScatter = view;
  return view;
}

export { ScatterView, startScatter };
