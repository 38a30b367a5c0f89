/* kflame serve, charts: metric charts on one time axis (canvas), a shared cursor and the
 * range brush. Times are milliseconds since the epoch (UTC) here; the API's nanoseconds are
 * converted at its door (app.js). No data is ever put into the DOM as markup. */

const PAD_LEFT = 64, PAD_RIGHT = 12, HEIGHT = 104, AXIS = 22;
/** Stacking order of the CPU shares, as mpstat prints them; other cpu.* names follow. */
const CPU_ORDER = ['usr', 'nice', 'sys', 'iowait', 'irq', 'soft', 'softirq', 'steal', 'guest', 'gnice'];
const COLORS = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

/** A DOM element with attributes and text (never markup). */
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'text') e.textContent = v;
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

/** `12:34:56` (UTC) of ms; with the date when `date` is set. */
function fmtTime(ms, date) {
  const iso = new Date(ms).toISOString();
  return date ? iso.slice(0, 10) + ' ' + iso.slice(11, 19) : iso.slice(11, 19);
}

/** A short duration: `90 s`, `15 min`, `2.5 h`. */
function fmtSpan(ms) {
  const s = ms / 1000;
  if (s < 120) return +s.toFixed(s < 10 ? 2 : 0) + ' s';
  if (s < 7200) return +(s / 60).toFixed(1) + ' min';
  return +(s / 3600).toFixed(1) + ' h';
}

/** A value in a chart's unit. */
function fmtValue(v, unit) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  if (unit === '%') return v.toFixed(1) + ' %';
  const abs = Math.abs(v);
  const units = unit === 'B' || unit === 'B/s' ? ['', 'Ki', 'Mi', 'Gi', 'Ti'] : ['', 'k', 'M', 'G', 'T'];
  const base = unit === 'B' || unit === 'B/s' ? 1024 : 1000;
  let k = 0, x = abs;
  while (x >= base && k < units.length - 1) { x /= base; k++; }
  const suffix = unit === 'B' || unit === 'B/s' ? ' ' + units[k] + unit : (units[k] ? units[k] : '') + (unit ? ' ' + unit : '');
  return (v < 0 ? '-' : '') + (x >= 100 ? x.toFixed(0) : x.toFixed(x >= 10 ? 1 : 2)) + suffix;
}

/** Shares of a whole among `kflame watch`'s metrics whose names do not say so (their
 * byte counts are `_bytes`). */
const PERCENT = new Set(['mem.available', 'swap.used']);

/** The unit of a series, from its name. */
function unitOf(name) {
  const prefix = name.split('.')[0];
  if (prefix === 'cpu' || prefix === 'psi' || PERCENT.has(name) || /util|pct|percent/.test(name)) return '%';
  if (/await|latency|_ms$/.test(name)) return 'ms';
  if (/bytes/.test(name)) return prefix === 'mem' ? 'B' : 'B/s';
  if (prefix === 'mem') return 'B';
  return '';
}

/** The charts a list of [name, label] metrics makes: CPU (stacked shares), memory, IO,
 * PSI, then every other prefix; one chart per prefix and unit, so that one scale fits. */
function groupMetrics(metrics) {
  const groups = new Map();
  for (const [name, label] of metrics) {
    // Idle is what the stacked shares leave: mpstat shows it, a stack of it would only fill
    // every chart to 100 %.
    // `cpu` is the busy total (100 - idle - iowait): the sum of the shares stacked already.
    if (name === 'cpu.idle' || name === 'cpu') continue;
    const prefix = name.split('.')[0].replace(/\d+$/, ''), unit = unitOf(name);
    // IO rates in bytes and in operations (reads/s, IOPS, queue) get charts of their own.
    const key = prefix + (prefix === 'cpu' || prefix === 'psi' ? '' : unit === '%' ? '-util' : unit === 'ms' ? '-ms' :
      prefix === 'io' && unit === '' ? '-ops' : '');
    if (!groups.has(key)) groups.set(key, { key, prefix, unit, names: new Set(), labels: new Set() });
    groups.get(key).names.add(name);
    groups.get(key).labels.add(label);
  }
  const order = ['cpu', 'mem', 'mem-util', 'io', 'io-ops', 'io-util', 'io-ms', 'psi'];
  const titles = { cpu: 'CPU', mem: 'Memory', 'mem-util': 'Memory available', swap: 'Swap', 'swap-util': 'Swap used', io: 'IO', 'io-ops': 'IO operations', 'io-util': 'IO util', 'io-ms': 'IO wait', psi: 'Pressure (PSI)' };
  return [...groups.values()]
    .sort((a, b) => (order.indexOf(a.key) + 1 || 99) - (order.indexOf(b.key) + 1 || 99) || a.key.localeCompare(b.key))
    .map((g) => {
      const names = [...g.names].sort();
      if (g.prefix === 'cpu') {
        const rank = (n) => { const i = CPU_ORDER.indexOf(n.slice(4)); return i < 0 ? 99 : i; };
        names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
      }
      return { key: g.key, title: titles[g.key] || g.key, names, labels: [...g.labels].sort(), stacked: g.prefix === 'cpu', unit: g.unit };
    });
}

/** One chart: a canvas drawing series over [view.from, view.to]. */
class Chart {
  constructor(group) {
    this.group = group;
    this.series = [];
    this.canvas = el('canvas', { class: 'ks-chart-canvas' });
    this.legend = el('div', { class: 'ks-legend' });
    this.element = el('div', { class: 'ks-chart', 'data-chart': group.key },
      el('div', { class: 'ks-chart-title', text: group.title }), this.legend, this.canvas);
  }

  /** Sets the series ({name, label, points: [[tNs, min, max, avg, count]]}) and redraws. */
  setData(series, view) {
    this.series = series.map((s, k) => ({
      name: s.name, label: s.label, color: COLORS[k % COLORS.length],
      unit: unitOf(s.name),
      t: s.points.map((p) => p[0] / 1e6), min: s.points.map((p) => p[1]), max: s.points.map((p) => p[2]),
      avg: s.points.map((p) => p[3]),
    }));
    this.legend.replaceChildren(...this.series.map((s) => el('span', { class: 'ks-key' },
      el('i', { style: 'background:' + s.color }), this.seriesName(s))));
    this.draw(view);
  }

  seriesName(s) {
    const short = this.group.stacked ? s.name.slice(4) : s.name;
    return s.label ? short + ' ' + s.label : short;
  }

  /** x pixel of time ms. */
  x(ms, view) {
    return PAD_LEFT + ((ms - view.from) / (view.to - view.from)) * (this.width - PAD_LEFT - PAD_RIGHT);
  }

  draw(view) {
    const c = this.canvas, dpr = window.devicePixelRatio || 1;
    this.width = c.clientWidth || 800;
    c.width = this.width * dpr;
    c.height = HEIGHT * dpr;
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, this.width, HEIGHT);
    const top = 18, bottom = HEIGHT - 4, h = bottom - top;
    // The scale: stacked shares sum, lines their largest max.
    let ymax = 0;
    if (this.group.stacked) {
      const n = this.series[0] ? this.series[0].avg.length : 0;
      for (let i = 0; i < n; i++) ymax = Math.max(ymax, this.series.reduce((a, s) => a + (s.avg[i] || 0), 0));
      ymax = Math.max(100, ymax);
    } else {
      for (const s of this.series) for (const v of s.max) if (v > ymax) ymax = v;
      if (this.group.unit === '%') ymax = Math.max(ymax, 10);
    }
    ymax = ymax || 1;
    this.ymax = ymax;
    const y = (v) => bottom - (v / ymax) * h;
    g.strokeStyle = '#ddd';
    g.fillStyle = '#666';
    g.font = '10px sans-serif';
    g.textAlign = 'right';
    for (const f of [0, 0.5, 1]) {
      g.beginPath();
      g.moveTo(PAD_LEFT, y(ymax * f) + 0.5);
      g.lineTo(this.width - PAD_RIGHT, y(ymax * f) + 0.5);
      g.stroke();
      g.fillText(fmtValue(ymax * f, this.series[0] ? this.series[0].unit : this.group.unit), PAD_LEFT - 4, y(ymax * f) + 3);
    }
    if (this.group.stacked) {
      const n = this.series[0] ? this.series[0].avg.length : 0;
      const base = new Float64Array(n);
      for (const s of this.series) {
        g.beginPath();
        for (let i = 0; i < n; i++) g.lineTo(this.x(s.t[i], view), y(base[i] + (s.avg[i] || 0)));
        for (let i = n - 1; i >= 0; i--) g.lineTo(this.x(s.t[i], view), y(base[i]));
        g.closePath();
        g.fillStyle = s.color;
        g.fill();
        for (let i = 0; i < n; i++) base[i] += s.avg[i] || 0;
      }
    } else {
      for (const s of this.series) {
        // The min-max band keeps spikes visible; the line is the average.
        g.beginPath();
        for (let i = 0; i < s.t.length; i++) g.lineTo(this.x(s.t[i], view), y(s.max[i]));
        for (let i = s.t.length - 1; i >= 0; i--) g.lineTo(this.x(s.t[i], view), y(s.min[i]));
        g.closePath();
        g.globalAlpha = 0.2;
        g.fillStyle = s.color;
        g.fill();
        g.globalAlpha = 1;
        g.beginPath();
        for (let i = 0; i < s.t.length; i++) g.lineTo(this.x(s.t[i], view), y(s.avg[i]));
        g.strokeStyle = s.color;
        g.lineWidth = 1.5;
        g.stroke();
        g.lineWidth = 1;
      }
    }
  }

  /** The values at time ms (the nearest point before it): [[name, text]]. */
  valuesAt(ms) {
    const out = [];
    for (const s of this.series) {
      let lo = 0, hi = s.t.length - 1;
      if (hi < 0 || ms < s.t[0]) continue;
      while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (s.t[mid] <= ms) lo = mid; else hi = mid - 1; }
      const range = s.min[lo] !== s.max[lo] ? ' (' + fmtValue(s.min[lo], s.unit) + '…' + fmtValue(s.max[lo], s.unit) + ')' : '';
      out.push([this.seriesName(s), fmtValue(s.avg[lo], s.unit) + range, s.color]);
    }
    return out;
  }
}

/** The time axis under the charts. */
function drawAxis(canvas, view) {
  const dpr = window.devicePixelRatio || 1, w = canvas.clientWidth || 800;
  canvas.width = w * dpr;
  canvas.height = AXIS * dpr;
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, AXIS);
  const span = view.to - view.from, px = w - PAD_LEFT - PAD_RIGHT;
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400].map((s) => s * 1000);
  const step = steps.find((s) => (s / span) * px >= 90) || steps[steps.length - 1];
  g.fillStyle = '#444';
  g.strokeStyle = '#999';
  g.font = '11px sans-serif';
  g.textAlign = 'center';
  for (let t = Math.ceil(view.from / step) * step; t <= view.to; t += step) {
    const x = PAD_LEFT + ((t - view.from) / span) * px;
    g.beginPath();
    g.moveTo(x + 0.5, 0);
    g.lineTo(x + 0.5, 5);
    g.stroke();
    g.fillText(fmtTime(t, step >= 86400000), x, 16);
  }
  g.textAlign = 'left';
  g.fillText('UTC', 4, 16);
}

/** The brush over the charts: drag on empty ground to select, drag the selection to move it,
 * drag an edge to resize. `onChange(sel, final)` is called while dragging (final=false) and
 * when the mouse is released (final=true). Times in ms. */
class Brush {
  constructor(overlay, onChange, onCursor) {
    this.overlay = overlay;
    this.onChange = onChange;
    this.onCursor = onCursor;
    this.sel = el('div', { class: 'ks-sel' }, el('div', { class: 'ks-handle ks-left' }), el('div', { class: 'ks-handle ks-right' }));
    this.base = el('div', { class: 'ks-base', hidden: '' });
    this.cursor = el('div', { class: 'ks-cursor', hidden: '' });
    overlay.append(this.base, this.sel, this.cursor);
    this.view = { from: 0, to: 1 };
    this.range = { from: 0, to: 1 };
    overlay.addEventListener('mousedown', (e) => this.down(e));
    window.addEventListener('mousemove', (e) => this.move(e));
    window.addEventListener('mouseup', (e) => this.up(e));
    overlay.addEventListener('mouseleave', () => { this.cursor.hidden = true; this.onCursor(null); });
  }

  width() {
    return this.overlay.clientWidth - PAD_LEFT - PAD_RIGHT;
  }

  toMs(clientX) {
    const r = this.overlay.getBoundingClientRect();
    const f = (clientX - r.left - PAD_LEFT) / this.width();
    return this.view.from + Math.min(1, Math.max(0, f)) * (this.view.to - this.view.from);
  }

  toX(ms) {
    return PAD_LEFT + ((ms - this.view.from) / (this.view.to - this.view.from)) * this.width();
  }

  set(view, range, base) {
    this.view = view;
    this.range = range;
    this.baseRange = base;
    this.place();
  }

  place() {
    const place = (node, r) => {
      const a = Math.max(PAD_LEFT, this.toX(r.from)), b = Math.min(PAD_LEFT + this.width(), this.toX(r.to));
      node.style.left = a + 'px';
      node.style.width = Math.max(0, b - a) + 'px';
      node.hidden = b < PAD_LEFT || a > PAD_LEFT + this.width();
    };
    place(this.sel, this.range);
    if (this.baseRange) place(this.base, this.baseRange);
    else this.base.hidden = true;
  }

  down(e) {
    if (e.button !== 0) return;
    e.preventDefault();
    const t = this.toMs(e.clientX), x = e.clientX - this.overlay.getBoundingClientRect().left;
    const a = this.toX(this.range.from), b = this.toX(this.range.to);
    let mode = 'new';
    if (Math.abs(x - a) <= 6) mode = 'left';
    else if (Math.abs(x - b) <= 6) mode = 'right';
    else if (x > a && x < b) mode = 'move';
    this.drag = { mode, t0: t, start: { ...this.range } };
  }

  move(e) {
    const r = this.overlay.getBoundingClientRect();
    const inside = e.clientX >= r.left + PAD_LEFT && e.clientX <= r.right - PAD_RIGHT && e.clientY >= r.top && e.clientY <= r.bottom;
    if (inside || this.drag) {
      const t = this.toMs(e.clientX);
      this.cursor.hidden = false;
      this.cursor.style.left = this.toX(t) + 'px';
      this.onCursor(t, e);
    }
    if (!this.drag) {
      if (inside) {
        const x = e.clientX - r.left, a = this.toX(this.range.from), b = this.toX(this.range.to);
        this.overlay.style.cursor = Math.abs(x - a) <= 6 || Math.abs(x - b) <= 6 ? 'ew-resize' : x > a && x < b ? 'grab' : 'crosshair';
      }
      return;
    }
    this.range = this.dragged(this.toMs(e.clientX));
    this.place();
    this.onChange(this.range, false);
  }

  dragged(t, d = this.drag) {
    const s = d.start, v = this.view, min = 1000;
    switch (d.mode) {
      case 'left': return { from: Math.min(t, s.to - min), to: s.to };
      case 'right': return { from: s.from, to: Math.max(t, s.from + min) };
      case 'move': {
        const len = s.to - s.from;
        const from = Math.min(Math.max(s.from + (t - d.t0), v.from), v.to - len);
        return { from, to: from + len };
      }
      default: return { from: Math.min(d.t0, t), to: Math.max(d.t0, t, Math.min(d.t0, t) + min) };
    }
  }

  up(e) {
    if (!this.drag) return;
    const d = this.drag;
    this.drag = null;
    // A click without a drag on empty ground selects nothing new.
    if (d.mode === 'new' && Math.abs(this.toMs(e.clientX) - d.t0) < (this.view.to - this.view.from) / this.width() * 3) {
      this.range = d.start;
      this.place();
      return;
    }
    this.range = this.dragged(this.toMs(e.clientX), d);
    this.place();
    this.onChange(this.range, true);
  }
}

export { Brush, Chart, PAD_LEFT, PAD_RIGHT, drawAxis, el, fmtSpan, fmtTime, fmtValue, groupMetrics };
