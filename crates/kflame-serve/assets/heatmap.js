/* kflame serve, heat maps: cells on a canvas, time across. `CellGrid` is what both heat maps
 * of the page share (canvas sized to its cells, hit testing, the rectangle dragged over
 * cells, the UTC time axis, the colour scale); `HeatMap` is the CPU sample heat map:
 * samples per second (columns) and offset within the second (rows, offset 0 at the top), as
 * FlameScope draws them, with both axes labelled: UTC time across (the date in the axis
 * title), the offset in milliseconds down. The server picks rows of at least two sampling
 * periods (`row_ms=auto`): finer rows than the rate would draw the sampling instants as
 * stripes. Drag over cells to select a rectangle; `onSelect({c0, c1, r0, r1})` gets the
 * inclusive cell range. The latency heat map (latency.js) is the other `CellGrid`. */
/** Margins around the cells: the row axis on the left, the time axis below. */
const ML = 74, MR = 10, MT = 6, MB = 36;
/** The cells' height, whatever the number of rows (rows of 3 px at least). */
const PLOT_H = 200;
/** Steps of the time axis, in seconds. */
const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

/** `12:34:56` (UTC) of ms since the epoch. */
const clock = (ms) => new Date(ms).toISOString().slice(11, 19);

/** The colour of a cell holding `f` (0 < f <= 1) of the largest count: pale orange to red, a
 * sequential scale; empty cells are not drawn. */
const heatColor = (f) => `rgb(255,${Math.round(235 - 200 * f)},${Math.round(200 - 200 * f)})`;

/** Cells on a canvas, `columns` across and `rows` up or down (`bottomUp`: row 0 at the
 * bottom), with the rectangle dragged over them. Subclasses draw and say what a cell is:
 * `hover(cell | null, event)` and `select({c0, c1, r0, r1})` (inclusive). */
class CellGrid {
  constructor(container, bottomUp = false) {
    this.bottomUp = bottomUp;
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'ks-heat-canvas';
    this.mark = document.createElement('div');
    this.mark.className = 'ks-heat-sel';
    this.mark.hidden = true;
    this.wrap = document.createElement('div');
    this.wrap.className = 'ks-heat-wrap';
    this.wrap.append(this.canvas, this.mark);
    container.append(this.wrap);
    this.canvas.addEventListener('mousedown', (e) => {
      const c = this.cell(e);
      if (!c) return;
      e.preventDefault();
      this.drag = c;
      this.show(c, c);
    });
    this.canvas.addEventListener('mousemove', (e) => {
      const c = this.cell(e);
      if (c && this.drag) this.show(this.drag, c);
      this.hover(c, e);
    });
    this.canvas.addEventListener('mouseleave', (e) => this.hover(null, e));
    window.addEventListener('mouseup', (e) => {
      if (!this.drag) return;
      const a = this.drag, b = this.cell(e) || this.last || a;
      this.drag = null;
      this.select({ c0: Math.min(a.c, b.c), c1: Math.max(a.c, b.c), r0: Math.min(a.r, b.r), r1: Math.max(a.r, b.r) });
    });
  }

  hover() {}
  select() {}

  /** Sizes the canvas for `columns` × `rows` cells of `cw` × `rh` px (`cw` may be
   * fractional) and returns its context, the plot area white and the rest clear. */
  layout(columns, rows, cw, rh) {
    Object.assign(this, { columns, rows, cw, rh, pw: Math.round(columns * cw), ph: rows * rh });
    this.mark.hidden = true;
    const w = ML + this.pw + MR, h = MT + this.ph + MB, dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.round(w * dpr);
    this.canvas.height = Math.round(h * dpr);
    this.canvas.style.width = w + 'px';
    this.canvas.style.height = h + 'px';
    const g = this.canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    g.fillStyle = '#fff';
    g.fillRect(ML, MT, this.pw, this.ph);
    return g;
  }

  /** The width the cells may take in the container (or in `width` px). */
  available(width = this.wrap.clientWidth) {
    return Math.max(200, width) - ML - MR;
  }

  /** Left edge of column `c` and top edge of row `r`, px in the canvas. */
  x(c) { return ML + Math.round(c * this.cw); }
  y(r) { return MT + (this.bottomUp ? this.rows - 1 - r : r) * this.rh; }

  /** Fills cell (c, r). */
  fill(g, c, r) {
    g.fillRect(this.x(c), this.y(r), this.x(c + 1) - this.x(c), this.rh);
  }

  /** The frame around the plot. */
  frame(g) {
    g.strokeStyle = '#999';
    g.strokeRect(ML - 0.5, MT - 0.5, this.pw + 1, this.ph + 1);
  }

  /** The time axis under the plot: ticks at round UTC clock times (a step of at least
   * 64 px), `title` below them. The columns start at `startMs`, `colMs` each. Returns the
   * ticks' times. */
  timeAxis(g, startMs, colMs, title) {
    const pxPerMs = this.cw / colMs, endMs = startMs + this.columns * colMs, y = MT + this.ph;
    const step = (TIME_STEPS.find((s) => s * 1000 * pxPerMs >= 64) || TIME_STEPS[TIME_STEPS.length - 1]) * 1000;
    const times = [];
    g.fillStyle = '#444';
    g.font = '11px sans-serif';
    g.textAlign = 'center';
    g.textBaseline = 'top';
    for (let t = Math.ceil(startMs / step) * step; t <= endMs; t += step) {
      const x = ML + (t - startMs) * pxPerMs;
      times.push(t);
      g.fillRect(Math.round(x), y, 1, 4);
      const text = clock(t), half = g.measureText(text).width / 2;
      g.fillText(text, Math.min(ML + this.pw + MR - half - 1, x), y + 6);
    }
    g.textAlign = 'left';
    g.fillText(title, ML, y + 21);
    return times;
  }

  /** The row axis's title, written up the left edge. */
  rowTitle(g, text) {
    g.save();
    g.translate(12, MT + this.ph / 2);
    g.rotate(-Math.PI / 2);
    g.textAlign = 'center';
    g.textBaseline = 'middle';
    g.fillText(text, 0, 0);
    g.restore();
  }

  cell(e) {
    if (!this.rows) return null;
    const b = this.canvas.getBoundingClientRect();
    const c = Math.floor((e.clientX - b.left - ML) / this.cw), sr = Math.floor((e.clientY - b.top - MT) / this.rh);
    if (c < 0 || sr < 0 || c >= this.columns || sr >= this.rows) return null;
    return (this.last = { c, r: this.bottomUp ? this.rows - 1 - sr : sr });
  }

  /** Marks the cells from `a` to `b` (either corner first). */
  show(a, b) {
    if (!a || !b) return;
    const c0 = Math.min(a.c, b.c), c1 = Math.max(a.c, b.c), r0 = Math.min(a.r, b.r), r1 = Math.max(a.r, b.r);
    const top = Math.min(this.y(r0), this.y(r1));
    Object.assign(this.mark.style, { left: this.x(c0) + 'px', top: top + 'px',
      width: this.x(c1 + 1) - this.x(c0) + 'px', height: (r1 - r0 + 1) * this.rh + 'px' });
    this.mark.hidden = false;
  }

  /** The page position of cell (c, r)'s centre (tests). */
  pointOf(c, r) {
    const b = this.canvas.getBoundingClientRect();
    return { x: b.left + (this.x(c) + this.x(c + 1)) / 2, y: b.top + this.y(r) + this.rh / 2 };
  }
}

class HeatMap extends CellGrid {
  constructor(container, onSelect) {
    super(container);
    this.info = document.createElement('div');
    this.info.className = 'ks-heat-info';
    container.append(this.info);
    this.onSelect = onSelect;
  }

  hover(c) {
    if (!c) return;
    const n = this.data.counts[c.c * this.data.rows + c.r];
    this.info.textContent = `second ${c.c} (${clock(this.data.start / 1e6 + c.c * 1000)} UTC), ` +
      `${c.r * this.data.row_ms}–${(c.r + 1) * this.data.row_ms} ms: ${n} samples`;
  }

  select(sel) {
    this.onSelect(sel);
  }

  /** Draws `data` (the /api/heatmap answer). */
  set(data) {
    this.data = data;
    const cw = Math.max(2, Math.floor(this.available() / data.columns));
    const g = this.layout(data.columns, data.rows, cw, Math.max(3, Math.floor(PLOT_H / data.rows)));
    const max = data.max || 1;
    for (let c = 0; c < data.columns; c++) {
      for (let r = 0; r < data.rows; r++) {
        const n = data.counts[c * data.rows + r];
        if (!n) continue;
        g.fillStyle = heatColor(Math.sqrt(n / max));
        this.fill(g, c, r);
      }
    }
    this.frame(g);
    this.drawAxes(g);
    const rate = data.rate_hz ? `, sampled at ${data.rate_hz} Hz per CPU` : '';
    this.info.textContent = `${data.columns} s × ${data.rows} rows of ${data.row_ms} ms${rate}, ${data.total} samples, ` +
      `hottest cell ${data.max}: drag over cells to see their flame graph`;
  }

  /** The offset axis (left: ms within the second, 0 at the top) and the time axis (below:
   * UTC clock time of the columns' seconds, the date in its title). Their tick values are
   * kept in `axes` (tests). */
  drawAxes(g) {
    const d = this.data, startMs = d.start / 1e6;
    g.fillStyle = '#444';
    g.font = '11px sans-serif';
    // Offsets: the round row boundaries at least 14 px apart, and 1000 ms at the bottom.
    const offStep = [10, 20, 25, 50, 100, 200, 250, 500, 1000].find((s) => s % d.row_ms === 0 && (s / d.row_ms) * this.rh >= 14) || 1000;
    const offsets = [];
    for (let ms = 0; ms <= 1000; ms += offStep) offsets.push(ms);
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    for (const ms of offsets) {
      const y = MT + (ms / d.row_ms) * this.rh;
      g.fillRect(ML - 4, Math.round(y), 4, 1);
      g.fillText(ms + ' ms', ML - 6, Math.min(MT + this.ph, y));
    }
    this.rowTitle(g, 'offset in the second');
    const date = new Date(startMs).toISOString().slice(0, 10);
    const timeTitle = `time (UTC, ${date}), one column per second`;
    const times = this.timeAxis(g, startMs, 1000, timeTitle);
    this.axes = { offsets, times, offsetTitle: 'offset in the second', timeTitle, rowPx: this.rh };
  }
}

export { CellGrid, HeatMap, ML, MR, MT, MB, clock, heatColor };
