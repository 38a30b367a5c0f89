/* kflame serve, the latency heat map: time across, latency up, as latency heat maps are drawn
 * since Brendan Gregg's. One family (system calls, block IO, run queue, off-CPU blocks, lock
 * waits) and one of its labels (a call, a disk, a CPU, a task state, a lock kind; or the
 * family's total) from the histograms the watcher stores every second (/api/latency): a
 * column per few seconds, a row per bucket of the store (log-linear, four per power of
 * two, the lowest at the bottom), the colour the count of events (log scale; empty cells
 * blank). The range's total, slow count and percentiles sit beside it.
 *
 * Dragging over cells selects them: their time span, latency range and count are shown, and
 * the page's range becomes the selected columns' span (the flame graph below follows, and
 * so does this map, the selected latencies marked as a band). The outliers the watcher kept
 * in the selection (slow events with their stacks, /api/outliers) are listed under it, the
 * longest first, with a button drawing their flame graph, weighted by duration, in the
 * page's viewer; a selection without any shows nothing of them. */
import { api, el } from '/assets/common.js';
import { fmtSpan, fmtTime } from '/assets/charts.js';
import { CellGrid, ML, MT, clock, heatColor } from '/assets/heatmap.js';

const FAMILIES = { syscall: 'System calls', bio: 'Block IO', runq: 'Run queue', offcpu: 'Off-CPU blocks', lock: 'Lock waits' };
/** The profile kind whose flame graph shows where a family's waits came from. */
const PROFILE_OF = { offcpu: 'offcpu', lock: 'locks' };
/** The cells' height at most, and rows of 3 to 14 px. */
const PLOT_H = 240, MIN_RH = 3, MAX_RH = 14;
/** Columns at least this wide (px): more seconds per column on long ranges. */
const MIN_CW = 3;
/** Rows asked for at least (empty buckets around the used ones), so that a map of one
 * bucket is drawn with its neighbours, not as a single tall band. */
const MIN_ROWS = 16;
const MS = 1e6;

/** A latency in ns as text: `870 ns`, `12.5 µs`, `3.2 ms`, `1.5 s` (3 significant digits). */
function fmtLatency(ns) {
  const [div, unit] = ns < 1e3 ? [1, 'ns'] : ns < 1e6 ? [1e3, 'µs'] : ns < 1e9 ? [1e6, 'ms'] : [1e9, 's'];
  return +(ns / div).toPrecision(3) + ' ' + unit;
}

/** `n` events of a family (`3 system calls`, `1 run-queue wait`). */
const events = (n, event) => `${Number(n).toLocaleString('en-US')} ${event}${Number(n) === 1 ? '' : 's'}`;

/** At most this many outliers in a selection's table (the longest); its flame graph holds
 * them all. */
const TABLE_ROWS = 5;

/**
 * The outliers the watcher kept (slow events with their stacks) of family `kind`, label
 * `label` (empty: the family's total), with a latency in [minNs, maxNs), between `from` and
 * `to` (ns, as text), of the hosts `hosts` (the page's host query parameters): the
 * /api/outliers answer (viewer data of their stacks weighted by duration, and `info.listed`,
 * the longest of them), or null when there are none (a family that keeps no outliers).
 */
async function latencyEvents(kind, label, from, to, minNs, maxNs, hosts = '') {
  const a = await api(`/api/outliers?kind=${kind}&label=${encodeURIComponent(label)}&from=${from}&to=${to}` +
    `&min_ns=${minNs}&max_ns=${maxNs}${hosts}`);
  return a.info.count ? a : null;
}

/** An outlier's time (ns since the epoch) as `HH:MM:SS.mmm` (UTC). */
const clockMs = (timeNs) => new Date(Math.floor(timeNs / MS)).toISOString().slice(11, 23);

/** The map itself: cells bottom up, a tooltip, the selection handed to the panel. */
class LatencyMap extends CellGrid {
  constructor(container, onSelect) {
    super(container, true);
    // Beside the scrolling wrap, not in it: a tooltip near an edge adds no scroll bar.
    this.tip = el('div', { class: 'ks-lat-tip', hidden: '' });
    this.host = container;
    container.append(this.tip);
    this.onSelect = onSelect;
  }

  /** Draws `data` (the /api/latency answer of `range`, ms) `width` px wide. */
  set(data, range, width) {
    Object.assign(this, { data, fromMs: range.from, toMs: range.to, event: data.event, colMs: data.step_ns / MS });
    const rows = data.lower_ns.length, columns = data.counts.length;
    const rh = Math.max(MIN_RH, Math.min(MAX_RH, Math.floor(PLOT_H / Math.max(1, rows))));
    const g = this.layout(columns, rows, this.available(width) / columns, rh);
    let max = 0;
    for (const col of data.counts) for (const n of col) max = Math.max(max, n);
    this.max = max;
    // A log scale: one slow call in a column of thousands of fast ones is still seen.
    const scale = Math.log1p(max || 1);
    for (let c = 0; c < columns; c++) {
      for (let r = 0; r < rows; r++) {
        const n = data.counts[c][r];
        if (!n) continue;
        g.fillStyle = heatColor(Math.log1p(n) / scale);
        this.fill(g, c, r);
      }
    }
    this.frame(g);
    this.drawAxes(g);
    this.tip.hidden = true;
  }

  /** The upper bound (ns, exclusive) of row `r`'s bucket. */
  upper(r) {
    return r + 1 < this.data.lower_ns.length ? this.data.lower_ns[r + 1] : this.data.upper_ns;
  }

  /** The y (canvas px) of latency `ns`: linear within its bucket, as the buckets are. */
  yOf(ns) {
    const lower = this.data.lower_ns;
    let r = lower.length - 1;
    while (r > 0 && lower[r] > ns) r--;
    const f = Math.min(1, Math.max(0, (ns - lower[r]) / (this.upper(r) - lower[r])));
    return this.y(r) + this.rh * (1 - f);
  }

  /** Latency ticks (round values: 1, 2 and 5 times a power of ten, the powers of ten first,
   * 14 px apart at least; the range's own bounds when fewer than two fit), the time axis
   * and the colour key. Their values are kept in `axes` (tests). */
  drawAxes(g) {
    const d = this.data, lo = d.lower_ns[0], hi = d.upper_ns;
    const round = [];
    for (const m of [1, 5, 2]) for (let p = 1; p <= 1e12; p *= 10) if (m * p >= lo && m * p <= hi) round.push(m * p);
    const ticks = [];
    for (const v of round) {
      const y = this.yOf(v);
      if (ticks.every((t) => Math.abs(this.yOf(t) - y) >= 14)) ticks.push(v);
    }
    if (ticks.length < 2) for (const v of [lo, hi]) if (ticks.every((t) => Math.abs(this.yOf(t) - this.yOf(v)) >= 14)) ticks.push(v);
    ticks.sort((a, b) => a - b);
    g.fillStyle = '#444';
    g.font = '11px sans-serif';
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    for (const v of ticks) {
      const y = Math.round(this.yOf(v));
      g.fillRect(ML - 4, y, 4, 1);
      g.fillText(fmtLatency(v), ML - 6, Math.max(MT + 5, y));
    }
    this.rowTitle(g, 'latency');
    const date = new Date(this.fromMs).toISOString().slice(0, 10);
    const per = this.colMs === 1000 ? 'second' : fmtSpan(this.colMs);
    const timeTitle = `time (UTC, ${date}), one column per ${per}`;
    const times = this.timeAxis(g, this.fromMs, this.colMs, timeTitle);
    // The colour key, right-aligned on the title's line.
    const y = MT + this.ph + 21, right = ML + this.pw, w = 64;
    g.textAlign = 'right';
    g.textBaseline = 'top';
    // (Every cell holding one event: one swatch, no scale.)
    const max = Math.max(this.max, 1), top = max > 1 ? String(max) : '', topW = top ? g.measureText(top).width + 4 : 0;
    const sw = max > 1 ? w : 12;
    g.fillText(top, right, y);
    for (let k = 0; k < sw; k++) {
      g.fillStyle = heatColor(max > 1 ? Math.log1p(1 + (k / (sw - 1)) * (max - 1)) / Math.log1p(max) : 1);
      g.fillRect(right - topW - sw + k, y + 1, 1, 9);
    }
    g.fillStyle = '#444';
    g.fillText(max > 1 ? `${this.event}s per cell (log scale): 1` : `1 ${this.event} per cell`, right - topW - sw - 4, y);
    this.axes = { ticks, times, timeTitle, rowPx: this.rh, colPx: this.cw };
  }

  /** Column `c`'s span, ms: [from, to), the edges rounded up to whole ms (a stored second
   * at a whole ms falls in the same column as on the server). */
  span(c0, c1) {
    const ceilMs = (c) => {
      const ns = BigInt(Math.round(this.fromMs)) * 1000000n + BigInt(c) * BigInt(this.data.step_ns);
      return Number((ns + 999999n) / 1000000n);
    };
    return { from: ceilMs(c0), to: Math.min(ceilMs(c1 + 1), this.toMs) };
  }

  /** What cell `c` (or the rectangle of cells) holds, as the tooltip writes it. */
  describe({ c0, c1, r0, r1 }) {
    let n = 0;
    for (let c = c0; c <= c1; c++) for (let r = r0; r <= r1; r++) n += this.data.counts[c][r];
    const { from, to } = this.span(c0, c1);
    return { from, to, minNs: this.data.lower_ns[r0], maxNs: this.upper(r1), count: n };
  }

  hover(c, e) {
    if (!c) { this.tip.hidden = true; return; }
    const s = this.describe({ c0: c.c, c1: c.c, r0: c.r, r1: c.r });
    this.tip.textContent = `${clock(s.from)} – ${clock(s.to)} UTC (${fmtSpan(s.to - s.from)})\n` +
      `${fmtLatency(s.minNs)} – ${fmtLatency(s.maxNs)}\n${events(s.count, this.event)}`;
    this.tip.hidden = false;
    const b = this.host.getBoundingClientRect(), x = e.clientX - b.left, y = e.clientY - b.top;
    const w = this.tip.offsetWidth;
    this.tip.style.left = (x + 14 + w > this.host.clientWidth ? x - 14 - w : x + 14) + 'px';
    this.tip.style.top = Math.max(0, y - 10) + 'px';
  }

  select(sel) {
    this.tip.hidden = true;
    this.onSelect(sel);
  }
}

/**
 * The panel: family and label choice, the range's figures, the map, and what a selection
 * holds. `page` is how it reaches the page: `hosts()` (the host query parameters), `kinds`
 * (profile kinds offered), `kind()` and `setKind(k)` (the flame graph's), `setRange(from,
 * to)` (ms: the page's range), `changed()` (the choice changed: the URL).
 */
class LatencyPanel {
  constructor(container, page, choice) {
    this.container = container;
    this.page = page;
    this.choice = choice || { kind: '', label: '' };
    this.seq = 0;
    this.loaded = 0;
    this.family = el('select', { class: 'ks-lat-family', title: 'Which latencies: the family' });
    this.label = el('select', { class: 'ks-lat-label', title: 'Which latencies: the family’s total or one label of it' });
    this.family.addEventListener('change', () => { this.choose(this.family.value, ''); });
    this.label.addEventListener('change', () => { this.choose(this.family.value, this.label.value); });
    this.stats = el('span', { class: 'ks-lat-stats' });
    this.note = el('div', { class: 'ks-lat-note' });
    this.body = el('div', { class: 'ks-lat-body' });
    this.info = el('div', { class: 'ks-heat-info ks-lat-info' });
    // The selection's outliers: none, nothing shown.
    this.outliers = el('div', { class: 'ks-lat-outliers', hidden: '' });
    container.append(el('div', { class: 'ks-lat-head' }, el('b', { text: 'Latency heat map' }), this.family, this.label, this.stats),
      this.note, this.body, this.info, this.outliers);
    this.map = new LatencyMap(this.body, (sel) => this.selected(sel));
  }

  /** Shows family `kind`, label `label` (the range's). */
  choose(kind, label) {
    this.choice = { kind, label };
    this.selection = null;
    this.page.changed();
    this.load(this.range);
  }

  /** Fills the selects with the labels of the range; keeps the choice when it is there,
   * else the first family's total (or its first label). */
  fill(labels) {
    const families = [...new Set(labels.map((l) => l.kind))];
    let { kind, label } = this.choice;
    if (!families.includes(kind)) [kind, label] = [families[0], ''];
    const mine = labels.filter((l) => l.kind === kind);
    if (!mine.some((l) => l.label === label)) label = mine[0].label;
    this.choice = { kind, label };
    this.event = mine[0].event;
    this.family.replaceChildren(...families.map((f) => el('option', { value: f, text: FAMILIES[f] || f })));
    this.label.replaceChildren(...mine.map((l) => el('option', { value: l.label, text: l.label === '' ? 'all (total)' : l.label })));
    this.family.value = kind;
    this.label.value = label;
  }

  /** The map of `range` (ms): columns of whole seconds (the histograms are one a second:
   * columns of 2.99 s would hold two or three of them, a stripe), at least MIN_CW px wide,
   * from the range's start to the end of the column holding its end. `{ from, to,
   * columns }`. */
  grid(range) {
    const from = Math.round(range.from), span = Math.round(range.to) - from; // the API's ns are whole ms (app.js's ns())
    const fit = Math.max(1, Math.floor(this.map.available(this.container.clientWidth) / MIN_CW));
    const perCol = Math.max(1, Math.ceil(span / 1000 / fit), Math.ceil(span / 1000 / 4000)) * 1000;
    const columns = Math.max(1, Math.ceil(span / perCol));
    return { from, to: from + columns * perCol, columns };
  }

  /** Loads the map of `range` (ms) for the page's hosts. */
  async load(range) {
    this.range = range;
    const seq = ++this.seq, q = `from=${ns(range.from)}&to=${ns(range.to)}${this.page.hosts()}`;
    if (this.selection && (this.selection.from !== range.from || this.selection.to !== range.to)) this.selection = null;
    try {
      const { labels } = await api(`/api/latency/labels?${q}`);
      if (seq !== this.seq) return;
      if (!labels.length) {
        this.family.hidden = this.label.hidden = true;
        this.stats.textContent = '';
        this.note.textContent = 'No latency histograms in this range.';
        this.body.hidden = true;
        this.info.textContent = '';
        this.showOutliers(null);
        this.loaded++;
        return;
      }
      this.family.hidden = this.label.hidden = false;
      this.fill(labels);
      this.page.changed();
      const { kind, label } = this.choice;
      const grid = this.grid(range);
      const m = await api(`/api/latency?kind=${kind}&label=${encodeURIComponent(label)}&from=${ns(grid.from)}&to=${ns(grid.to)}` +
        `${this.page.hosts()}&columns=${grid.columns}&min_rows=${MIN_ROWS}`);
      if (seq !== this.seq) return;
      this.data = m;
      this.event = m.event;
      const ms = (v) => (v === null ? '–' : fmtLatency(v * MS));
      this.stats.textContent = `${events(m.total, m.event)}, ${Number(m.slow).toLocaleString('en-US')} slow · ` +
        `p50 ${ms(m.p50_ms)} · p99 ${ms(m.p99_ms)} · max ${m.total ? ms(m.max_ms) : '–'}`;
      this.stats.title = `${fmtTime(grid.from, true)} – ${fmtTime(grid.to)} UTC: the range to the end of its last column`;
      if (!m.total) {
        this.note.textContent = `No ${m.event}s of ${label || 'any label'} in this range.`;
        this.body.hidden = true;
        this.info.textContent = '';
        this.showOutliers(null);
      } else {
        this.note.textContent = '';
        this.body.hidden = false;
        this.map.set(m, grid, this.container.clientWidth);
        this.showSelection();
      }
      this.loaded++;
    } catch (e) {
      if (seq === this.seq) this.note.textContent = 'Cannot load the latency heat map: ' + e.message;
    }
  }

  /** Cells (c0..c1, r0..r1) selected: their figures, and their seconds become the page's
   * range (which draws this map again, of those seconds, the latencies marked). */
  selected(sel) {
    const s = this.map.describe(sel), { kind, label } = this.choice;
    this.selection = { ...s, kind, label, event: this.event };
    this.showSelection(false);
    this.page.setRange(s.from, s.to);
  }

  /** Asks for the outliers of selection `s` (of the page's hosts now), unless they were
   * asked for already; shows them when they come and `s` is still the selection. */
  fetchOutliers(s) {
    const hosts = this.page.hosts(), key = `${s.kind}|${s.label}|${s.from}|${s.to}|${s.minNs}|${s.maxNs}|${hosts}`;
    if (s.outliersKey === key) return;
    s.outliersKey = key;
    s.outliers = null;
    latencyEvents(s.kind, s.label, ns(s.from), ns(s.to), s.minNs, s.maxNs, hosts).then((found) => {
      if (this.selection !== s || s.outliersKey !== key) return;
      s.outliers = found;
      this.showOutliers(s);
      this.outliersLoaded = (this.outliersLoaded || 0) + 1;
    }, (e) => {
      if (this.selection !== s || s.outliersKey !== key) return;
      this.outliers.hidden = false;
      this.outliers.replaceChildren('Cannot load the outliers of the selection: ' + e.message);
      this.outliersLoaded = (this.outliersLoaded || 0) + 1;
    });
  }

  /** Under the selection's figures: how many outliers it holds, the longest few in a table,
   * and a button drawing their flame graph in the page's viewer. Nothing without outliers. */
  showOutliers(s) {
    const a = s && s.outliers;
    if (!a) {
      this.outliers.hidden = true;
      this.outliers.replaceChildren();
      return;
    }
    const n = a.info.count, what = s.label ? ` (${s.label})` : '';
    const longest = [...a.info.listed].sort((x, y) => y.duration_ns - x.duration_ns || x.time - y.time).slice(0, TABLE_ROWS);
    const title = `Outliers of the selection, weighted by duration: ${events(n, s.event)}${what} of ` +
      `${fmtLatency(s.minNs)} – ${fmtLatency(s.maxNs)}, ${fmtTime(s.from, true)} – ${fmtTime(s.to)} UTC`;
    const note = `Each outlier’s stack weighted by its duration: ${fmtLatency(a.total)} in all. ` +
      'The flame graph of the range is one click away: ';
    const b = el('button', { type: 'button', class: 'ks-lat-outlier-flame', text: `Flame graph of these ${Number(n).toLocaleString('en-US')} outlier${n === 1 ? '' : 's'}`,
      title: 'Their stacks, each weighted by its duration, in the flame graph below' });
    b.addEventListener('click', () => this.page.showProfile(a, title, note));
    const th = (t, cls) => el('th', { text: t, ...(cls ? { class: cls } : {}) });
    const td = (t, cls) => el('td', { text: t, ...(cls ? { class: cls } : {}) });
    const rows = longest.map((o) => el('tr', {},
      td(clockMs(o.time)), td(fmtLatency(o.duration_ns), 'ks-num'), td(o.event),
      td(`${o.comm ?? '?'}[${o.pid ?? '?'}/${o.tid ?? '?'}]`), td(String(o.cpu), 'ks-num')));
    const kept = `${Number(n).toLocaleString('en-US')} outlier${n === 1 ? '' : 's'} in the selection (${s.event}s kept with their stacks)` +
      (n > longest.length ? `, the ${longest.length} longest:` : ':');
    this.outliers.replaceChildren(
      el('div', { class: 'ks-lat-outliers-head' }, el('span', { class: 'ks-lat-outliers-count', text: kept }), b),
      el('table', { class: 'ks-fh-table ks-lat-outliers-table' },
        el('thead', {}, el('tr', {}, th('time (UTC)'), th('duration', 'ks-num'), th('event'), th('task [pid/tid]'), th('CPU', 'ks-num'))),
        el('tbody', {}, ...rows)));
    this.outliers.hidden = false;
  }

  /** The selection's figures under the map, and (with `band`, in the map of the selected
   * seconds) its latencies marked across it. */
  showSelection(band = true) {
    const s = this.selection;
    if (!s) {
      this.info.textContent = 'Drag over cells to select seconds and latencies: the page’s range becomes those seconds.';
      this.showOutliers(null);
      return;
    }
    this.showOutliers(s);
    this.fetchOutliers(s);
    const what = s.label ? ` (${s.label})` : '';
    this.info.replaceChildren(`Selected ${fmtTime(s.from, true)} – ${fmtTime(s.to)} UTC (${fmtSpan(s.to - s.from)}), ` +
      `${fmtLatency(s.minNs)} – ${fmtLatency(s.maxNs)}: ${events(s.count, s.event)}${what}. ` +
      'The range is now these seconds: the flame graph below is theirs (' + this.page.kindName() + ').');
    const k = PROFILE_OF[s.kind];
    if (k && this.page.kinds.includes(k) && this.page.kind() !== k) {
      const b = el('button', { type: 'button', class: 'ks-lat-kind', text: `Show the ${this.page.kindName(k)} flame graph`,
        title: `Where these seconds’ ${s.event}s were spent: the ${this.page.kindName(k)} profile of the range` });
      b.addEventListener('click', () => this.page.setKind(k));
      this.info.append(' ', b);
    }
    if (!band) return;
    const lower = this.map.data ? this.map.data.lower_ns : [];
    const r0 = lower.indexOf(s.minNs), r1 = lower.findIndex((l, r) => this.map.upper(r) === s.maxNs);
    if (r0 >= 0 && r1 >= r0) this.map.show({ c: 0, r: r0 }, { c: this.map.columns - 1, r: r1 });
  }
}

/** ms → the API's ns, exactly (ms are whole). */
const ns = (ms) => (BigInt(Math.round(ms)) * 1000000n).toString();

export { LatencyPanel, fmtLatency, latencyEvents };
