/* kflame serve, charts: metric charts on one time axis (canvas), a shared cursor and the
 * range brush. Times are milliseconds since the epoch (UTC) here; the API's nanoseconds are
 * converted at its door (app.js). No data is ever put into the DOM as markup. */
import { el } from '/assets/common.js';

const PAD_LEFT = 64, PAD_RIGHT = 12, HEIGHT = 64, AXIS = 22;
/** Free pixels above a chart's top value and below its zero: room for their tick labels. */
const TOP = 6, BOTTOM = 5;
/** Stacking order of the CPU shares, as mpstat prints them; other cpu.* names follow. */
const CPU_ORDER = ['usr', 'nice', 'sys', 'iowait', 'irq', 'soft', 'softirq', 'steal', 'guest', 'gnice'];
const COLORS = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

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

/** A value in a chart's unit. Times (`ms`, and `ms/s`, time spent waiting per second) are
 * written in µs below a millisecond and in s from a second up. */
function fmtValue(v, unit) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  if (unit === '%') return v.toFixed(1) + ' %';
  const abs = Math.abs(v);
  const digits = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(x >= 10 ? 1 : 2));
  if (unit === 'ms' || unit === 'ms/s') {
    const per = unit === 'ms/s' ? '/s' : '', sign = v < 0 ? '-' : '';
    if (abs >= 1000) return sign + digits(abs / 1000) + ' s' + per;
    if (abs > 0 && abs < 1) return sign + digits(abs * 1000) + ' µs' + per;
    return sign + digits(abs) + ' ms' + per;
  }
  const units = unit === 'B' || unit === 'B/s' ? ['', 'Ki', 'Mi', 'Gi', 'Ti'] : ['', 'k', 'M', 'G', 'T'];
  const base = unit === 'B' || unit === 'B/s' ? 1024 : 1000;
  let k = 0, x = abs;
  while (x >= base && k < units.length - 1) { x /= base; k++; }
  const suffix = unit === 'B' || unit === 'B/s' ? ' ' + units[k] + unit : (units[k] ? units[k] : '') + (unit ? ' ' + unit : '');
  return (v < 0 ? '-' : '') + (x >= 100 ? x.toFixed(0) : x.toFixed(x >= 10 ? 1 : 2)) + suffix;
}

const BINARY = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi'], DECIMAL = ['', 'k', 'M', 'G', 'T', 'P'];

/** The scale of a chart whose values reach `max` (≥ 0) in `unit`, with about `n` intervals:
 * a round top and ticks in steps of 1, 2 or 5 times a power of ten of the unit they are
 * written in (bytes in KiB, MiB, GiB...; counts in k, M...; ms, or s from a second up;
 * percentages as they are), and each tick's label, as precise as the step needs.
 * `{ top, ticks: [value], labels: [text] }`. */
function niceScale(max, unit, n = 3) {
  const bytes = unit === 'B' || unit === 'B/s';
  let div = 1, suffix = unit ? ' ' + unit : '';
  if (bytes || unit === '') {
    const base = bytes ? 1024 : 1000, names = bytes ? BINARY : DECIMAL;
    let k = 0;
    // The unit of the step: ticks 1, 2, 3 GiB, not 0.5, 1.0, 1.5 GiB.
    while (max / n / div >= base && k < names.length - 1) { div *= base; k++; }
    suffix = bytes ? ' ' + names[k] + unit : names[k];
  } else if (unit === 'ms' || unit === 'ms/s') {
    const per = unit === 'ms/s' ? '/s' : '';
    if (max >= 1000) [div, suffix] = [1000, ' s' + per];
    else if (max > 0 && max / n < 1) [div, suffix] = [0.001, ' µs' + per];
  }
  const m = max / div;
  let step = 1, top = 1;
  if (m > 0 && Number.isFinite(m)) {
    const raw = m / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    step = [1, 2, 5, 10].map((f) => f * mag).find((s) => s >= raw * (1 - 1e-9));
    top = Math.ceil(m / step - 1e-9) * step;
  } else if (unit === '%') {
    step = 5;
    top = 10;
  }
  const digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  const ticks = [], labels = [];
  for (let k = 0; k * step <= top * (1 + 1e-9); k++) {
    const v = k * step;
    ticks.push(v * div);
    labels.push((v === 0 ? '0' : v.toFixed(digits)) + suffix);
  }
  return { top: top * div, ticks, labels };
}

/** The metric catalog the server sends with `/api/info` (`catalog`: each metric's name,
 * unit, labels, group and meaning; `groups`: the chart groups in order, with their titles),
 * set by `useCatalog`. A metric the catalog does not know is charted by its prefix, as a
 * plain number. */
let CATALOG = new Map();
let GROUPS = [];

/** Takes the catalog of an `/api/info` answer. */
function useCatalog(info) {
  CATALOG = new Map((info.catalog || []).map((m) => [m.name, m]));
  GROUPS = info.groups || [];
}

/** How the page writes a catalog unit: bytes in binary multiples (`B`, `B/s`), shares as
 * they are, times (`ms`, `ms/s`) in µs, ms or s as their size asks; counts and rates (tasks, requests, /s) as plain numbers. */
const PAGE_UNITS = { '%': '%', bytes: 'B', 'bytes/s': 'B/s', ms: 'ms', 'ms/s': 'ms/s' };

/** The unit of a series, from the catalog. */
function unitOf(name) {
  const m = CATALOG.get(name);
  return (m && PAGE_UNITS[m.unit]) || '';
}

/** The chart group of a series, from the catalog (else its name's prefix). */
function groupOf(name) {
  const m = CATALOG.get(name);
  return m ? m.group : name.split('.')[0].replace(/\d+$/, '');
}

/** The charts a list of [name, label] metrics makes: one per group of the catalog (CPU
 * shares stacked), in the catalog's order, then groups it does not know. */
function groupMetrics(metrics) {
  const groups = new Map();
  for (const [name, label] of metrics) {
    // Idle is what the stacked shares leave: mpstat shows it, a stack of it would only fill
    // every chart to 100 %.
    // `cpu` is the busy total (100 - idle - iowait): the sum of the shares stacked already.
    if (name === 'cpu.idle' || name === 'cpu') continue;
    const key = groupOf(name);
    if (!groups.has(key)) groups.set(key, { key, unit: unitOf(name), names: new Set(), labels: new Set() });
    groups.get(key).names.add(name);
    groups.get(key).labels.add(label);
  }
  const order = GROUPS.map((g) => g[0]);
  const titles = Object.fromEntries(GROUPS);
  return [...groups.values()]
    .sort((a, b) => (order.indexOf(a.key) + 1 || 99) - (order.indexOf(b.key) + 1 || 99) || a.key.localeCompare(b.key))
    .map((g) => {
      const names = [...g.names].sort();
      if (g.key === 'cpu') {
        const rank = (n) => { const i = CPU_ORDER.indexOf(n.slice(4)); return i < 0 ? 99 : i; };
        names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
      }
      return { key: g.key, title: titles[g.key] || g.key, names, labels: [...g.labels].sort(), stacked: g.key === 'cpu', unit: g.unit };
    });
}

const GRID_CSS = '#dddddd';
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** A colour for `Pixels`: `#rrggbb` with its channels and its opaque pixel. */
function colorOf(css) {
  const v = parseInt(css.slice(1), 16), r = (v >> 16) & 255, g = (v >> 8) & 255, b = v & 255;
  return { r, g, b, word: LITTLE_ENDIAN ? ((255 << 24) | (b << 16) | (g << 8) | r) | 0 : ((r << 24) | (g << 16) | (b << 8) | 255) | 0 };
}
const GRID = colorOf(GRID_CSS);

/** A canvas's pixels, drawn in JS and put at once: spans of columns within [lo, hi),
 * opaque or blended over what is there (source over, as the canvas blends). */
class Pixels {
  constructor(w, h, lo, hi) {
    this.w = w;
    this.h = h;
    this.lo = Math.max(0, lo);
    this.hi = Math.min(w, hi);
    this.image = new ImageData(w, h);
    this.bytes = this.image.data;
    this.words = new Int32Array(this.bytes.buffer);
  }

  /** Fills [x0, x1) x [y0, y1) with the colour c, opaque. */
  fill(x0, x1, y0, y1, c) {
    if (x0 < this.lo) x0 = this.lo;
    if (x1 > this.hi) x1 = this.hi;
    if (y0 < 0) y0 = 0;
    if (y1 > this.h) y1 = this.h;
    const w = this.w, word = c.word, words = this.words;
    if (x1 - x0 > 8) {
      for (let y = y0; y < y1; y++) words.fill(word, y * w + x0, y * w + x1);
      return;
    }
    for (let x = x0; x < x1; x++) for (let i = y0 * w + x, end = y1 * w + x; i < end; i += w) words[i] = word;
  }

  /** Blends the colour c at `alpha` over [x0, x1) x [y0, y1). */
  blend(x0, x1, y0, y1, c, alpha) {
    if (x0 < this.lo) x0 = this.lo;
    if (x1 > this.hi) x1 = this.hi;
    if (y0 < 0) y0 = 0;
    if (y1 > this.h) y1 = this.h;
    const d = this.bytes, words = this.words, w = this.w, r = c.r * alpha, g = c.g * alpha, b = c.b * alpha;
    // Over a transparent pixel: the colour at alpha, one word.
    const A = Math.round(alpha * 255);
    const bare = LITTLE_ENDIAN ? ((A << 24) | (c.b << 16) | (c.g << 8) | c.r) | 0 : ((c.r << 24) | (c.g << 16) | (c.b << 8) | A) | 0;
    for (let x = x0; x < x1; x++) {
      for (let j = y0 * w + x, end = y1 * w + x; j < end; j += w) {
        if (words[j] === 0) {
          words[j] = bare;
          continue;
        }
        const i = j * 4, k = (d[i + 3] / 255) * (1 - alpha), oa = alpha + k;
        d[i] = (r + d[i] * k) / oa;
        d[i + 1] = (g + d[i + 1] * k) / oa;
        d[i + 2] = (b + d[i + 2] * k) / oa;
        d[i + 3] = oa * 255;
      }
    }
  }

  /** A line `thick` pixels wide from (xa, ya) to (xb, yb), xa <= xb: in each column, the
   * pixels between its heights at the column's two edges. */
  line(xa, ya, xb, yb, thick, c) {
    if (xb <= xa) {
      this.fill(xa, xa + thick, Math.min(ya, yb), Math.max(ya, yb) + thick, c);
      return;
    }
    const slope = (yb - ya) / (xb - xa);
    for (let x = xa; x < xb; x++) {
      const y0 = ya + slope * (x - xa), y1 = y0 + slope;
      this.fill(x, x + thick, Math.round(Math.min(y0, y1)), Math.round(Math.max(y0, y1)) + thick, c);
    }
  }
}

/** One chart: a canvas drawing series over [view.from, view.to]. */
class Chart {
  constructor(group) {
    this.group = group;
    this.series = [];
    this.canvas = el('canvas', { class: 'ks-chart-canvas' });
    this.legend = el('div', { class: 'ks-legend' });
    this.title = el('button', { type: 'button', class: 'ks-chart-title', text: group.title, title: 'Hide this chart (it goes to “More charts” below)' });
    this.element = el('div', { class: 'ks-chart', 'data-chart': group.key },
      el('div', { class: 'ks-chart-head' }, this.title, this.legend), this.canvas);
  }

  /** Sets the series (the API's `layout=columns`: {name, label, t0 (ns), t (ms after t0),
   * min, max, avg}); `draw` shows them. */
  setData(series) {
    // Series of several hosts (a fleet) are named with their host.
    const many = new Set(series.map((s) => s.host)).size > 1;
    // The shares of one host's CPUs stack to its busy total; several hosts' shares do not
    // add up to anything (two busy hosts are not 200 % of one): they are drawn as lines.
    this.stacked = this.group.stacked && !many;
    this.series = series.map((s, k) => {
      const t0 = s.t0 / 1e6, t = new Float64Array(s.t.length);
      for (let i = 0; i < t.length; i++) t[i] = t0 + s.t[i];
      return { name: s.name, label: s.label, host: many ? s.host : '', color: COLORS[k % COLORS.length], unit: unitOf(s.name), t, min: s.min, max: s.max, avg: s.avg };
    });
    this.legend.replaceChildren(...this.series.map((s) => el('span', { class: 'ks-key' },
      el('i', { style: 'background:' + s.color }), this.seriesName(s))));
  }

  seriesName(s) {
    const short = this.group.stacked ? s.name.slice(4) : s.name;
    const name = s.label ? short + ' ' + s.label : short;
    return s.host ? name + ' (' + s.host + ')' : name;
  }

  /** x pixel of time ms. */
  x(ms, view) {
    return PAD_LEFT + ((ms - view.from) / (view.to - view.from)) * (this.width - PAD_LEFT - PAD_RIGHT);
  }

  /** Draws the series over the view, `width` CSS pixels wide (the canvas's own width when
   * not given: charts drawn together read it once, not after each other's changes). */
  draw(view, width) {
    const c = this.canvas, dpr = window.devicePixelRatio || 1;
    this.width = width || c.clientWidth || 800;
    c.width = this.width * dpr;
    c.height = HEIGHT * dpr;
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, this.width, HEIGHT);
    const top = TOP, bottom = HEIGHT - BOTTOM, h = bottom - top;
    // The scale: stacked shares sum, lines their largest max; then rounded up to a tick.
    let ymax = 0;
    if (this.stacked) {
      const n = this.series[0] ? this.series[0].avg.length : 0;
      for (let i = 0; i < n; i++) ymax = Math.max(ymax, this.series.reduce((a, s) => a + (s.avg[i] || 0), 0));
      // One host's shares stack to 100 % (idle is the rest): a sum a little over it is the
      // rounding of /proc/stat's ticks, clipped rather than scaled to 150 %.
      ymax = ymax < 110 ? 100 : ymax;
    } else {
      for (const s of this.series) for (const v of s.max) if (v > ymax) ymax = v;
      if (this.group.unit === '%') ymax = Math.max(ymax, 10);
    }
    const scale = niceScale(ymax, this.series[0] ? this.series[0].unit : this.group.unit, Math.max(2, Math.round(h / 18)));
    ymax = scale.top;
    this.ymax = ymax;
    this.ticks = scale.ticks;
    this.tickLabels = scale.labels;
    const y = (v) => bottom - (v / ymax) * h;
    const left = PAD_LEFT, right = this.width - PAD_RIGHT, grid = scale.ticks;
    // Dense series (a point for two pixels or more, what a chart asks for) are drawn pixel by
    // pixel; sparser ones as paths through their points.
    if (this.series.length > 0 && this.series.every((s) => s.t.length * 2 >= right - left)) {
      this.drawPixels(g, view, y, dpr, grid);
    } else {
      this.drawPaths(g, view, y, grid);
    }
    g.fillStyle = '#666';
    g.font = '10px sans-serif';
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    grid.forEach((v, k) => g.fillText(scale.labels[k], PAD_LEFT - 4, Math.min(HEIGHT - 5, Math.max(5, y(v)))));
  }

  /** A dense chart in whole pixels: a point fills the columns of its time, to the next
   * point's start or, for the last one and before a gap (over 1.5 times the narrowest
   * spacing of the series: its cells), a cell. Written into the canvas's pixels at once: a
   * call into the canvas per column (some 40,000 for a page of charts of a day) and the
   * rasterizer's smoothing of a polygon of a thousand points each cost several times more,
   * for the same picture. */
  drawPixels(g, view, y, dpr, grid) {
    const L = Math.round(PAD_LEFT * dpr), R = Math.round((this.width - PAD_RIGHT) * dpr);
    const px = new Pixels(g.canvas.width, g.canvas.height, L, R);
    const x0 = PAD_LEFT, span = view.to - view.from, scale = (this.width - PAD_LEFT - PAD_RIGHT) / span;
    const X = (ms) => Math.round((x0 + (ms - view.from) * scale) * dpr), Y = (v) => Math.round(y(v) * dpr);
    const thick = Math.max(1, Math.round(dpr));
    for (const v of grid) px.fill(L, R, Y(v), Y(v) + thick, GRID);
    const cellOf = (t) => {
      let cell = Infinity;
      for (let i = 1; i < t.length; i++) if (t[i] - t[i - 1] < cell) cell = t[i] - t[i - 1];
      return Number.isFinite(cell) ? cell : 1000;
    };
    /** The column after the last of point i (of times t). */
    const end = (t, i, cell, a) => Math.max(a + 1, X(i + 1 < t.length && t[i + 1] - t[i] <= cell * 1.5 ? t[i + 1] : t[i] + cell));
    if (this.stacked) {
      const t = this.series[0].t, n = t.length, base = new Float64Array(n), cell = cellOf(t);
      for (const s of this.series) {
        const c = colorOf(s.color), avg = s.avg;
        for (let i = 0; i < n; i++) {
          const v = avg[i] || 0;
          if (v > 0) {
            const a = X(t[i]);
            px.fill(a, end(t, i, cell, a), Y(base[i] + v), Y(base[i]), c);
          }
          base[i] += v;
        }
      }
    } else {
      for (const s of this.series) {
        // The min-max band (at least a pixel high) keeps spikes visible; the line is the
        // average.
        const c = colorOf(s.color), t = s.t, cell = cellOf(t), min = s.min, max = s.max, avg = s.avg;
        for (let i = 0; i < t.length; i++) {
          if (max[i] === null || min[i] === null) continue;
          const a = X(t[i]), top = Y(max[i]);
          px.blend(a, end(t, i, cell, a), top, Math.max(top + 1, Y(min[i])), c, 0.2);
        }
        let px0 = 0, py0 = 0, on = false;
        for (let i = 0; i < t.length; i++) {
          if (avg[i] === null) { on = false; continue; }
          const px1 = X(t[i]), py1 = Y(avg[i]);
          if (on && t[i] - t[i - 1] <= cell * 1.5) px.line(px0, py0, px1, py1, thick, c);
          else px.fill(px1, px1 + thick, py1, py1 + thick, c);
          px0 = px1;
          py0 = py1;
          on = true;
        }
      }
    }
    g.putImageData(px.image, 0, 0);
  }

  /** A sparse chart: polygons and lines through the points. */
  drawPaths(g, view, y, grid) {
    const left = PAD_LEFT, right = this.width - PAD_RIGHT;
    g.strokeStyle = GRID_CSS;
    for (const v of grid) {
      g.beginPath();
      g.moveTo(left, Math.round(y(v)) + 0.5);
      g.lineTo(right, Math.round(y(v)) + 0.5);
      g.stroke();
    }
    g.save();
    g.beginPath();
    g.rect(left, 0, right - left, HEIGHT);
    g.clip();
    const area = (s, lower, upper) => {
      g.beginPath();
      for (let i = 0; i < s.t.length; i++) g.lineTo(this.x(s.t[i], view), y(upper(i) || 0));
      for (let i = s.t.length - 1; i >= 0; i--) g.lineTo(this.x(s.t[i], view), y(lower(i) || 0));
      g.closePath();
      g.fill();
    };
    if (this.stacked) {
      const n = this.series[0] ? this.series[0].avg.length : 0;
      const base = new Float64Array(n);
      for (const s of this.series) {
        g.fillStyle = s.color;
        area(s, (i) => base[i], (i) => base[i] + (s.avg[i] || 0));
        for (let i = 0; i < n; i++) base[i] += s.avg[i] || 0;
      }
    } else {
      for (const s of this.series) {
        g.globalAlpha = 0.2;
        g.fillStyle = s.color;
        area(s, (i) => s.min[i], (i) => s.max[i]);
        g.globalAlpha = 1;
        g.beginPath();
        for (let i = 0; i < s.t.length; i++) {
          if (s.avg[i] === null) continue;
          g.lineTo(this.x(s.t[i], view), y(s.avg[i]));
        }
        g.strokeStyle = s.color;
        g.lineWidth = 1.5;
        g.stroke();
        g.lineWidth = 1;
      }
    }
    g.restore();
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
    // The labels stay within the canvas.
    const text = fmtTime(t, step >= 86400000), half = g.measureText(text).width / 2;
    g.fillText(text, Math.min(w - half - 1, Math.max(PAD_LEFT, x)), 16);
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

export { Brush, Chart, PAD_LEFT, PAD_RIGHT, drawAxis, fmtSpan, fmtTime, fmtValue, groupMetrics, niceScale, useCatalog };
