/* kflame serve, heat map: samples per second (columns) and offset within the second (rows,
 * offset 0 at the top), as FlameScope draws them, with both axes labelled: UTC time across
 * (the date in the axis title), the offset in milliseconds down. The server picks rows of at
 * least two sampling periods (`row_ms=auto`): finer rows than the rate would draw the
 * sampling instants as stripes. Drag over cells to select a rectangle;
 * `onSelect({c0, c1, r0, r1})` gets the inclusive cell range. */

/** Margins around the cells: the offset axis on the left, the time axis below. */
const ML = 74, MR = 10, MT = 6, MB = 36;
/** The cells' height, whatever the number of rows (rows of 3 px at least). */
const PLOT_H = 200;

/** `12:34:56` (UTC) of ms since the epoch. */
const clock = (ms) => new Date(ms).toISOString().slice(11, 19);

class HeatMap {
  constructor(container, onSelect) {
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'ks-heat-canvas';
    this.mark = document.createElement('div');
    this.mark.className = 'ks-heat-sel';
    this.mark.hidden = true;
    const wrap = document.createElement('div');
    wrap.className = 'ks-heat-wrap';
    wrap.append(this.canvas, this.mark);
    this.info = document.createElement('div');
    this.info.className = 'ks-heat-info';
    container.append(wrap, this.info);
    this.onSelect = onSelect;
    this.canvas.addEventListener('mousedown', (e) => {
      const c = this.cell(e);
      if (!c) return;
      e.preventDefault();
      this.drag = c;
      this.show(c, c);
    });
    this.canvas.addEventListener('mousemove', (e) => {
      const c = this.cell(e);
      if (!c) return;
      if (this.drag) this.show(this.drag, c);
      const n = this.data.counts[c.c * this.data.rows + c.r];
      this.info.textContent = `second ${c.c} (${clock(this.data.start / 1e6 + c.c * 1000)} UTC), ` +
        `${c.r * this.data.row_ms}–${(c.r + 1) * this.data.row_ms} ms: ${n} samples`;
    });
    window.addEventListener('mouseup', (e) => {
      if (!this.drag) return;
      const a = this.drag, b = this.cell(e) || this.last || a;
      this.drag = null;
      this.onSelect({ c0: Math.min(a.c, b.c), c1: Math.max(a.c, b.c), r0: Math.min(a.r, b.r), r1: Math.max(a.r, b.r) });
    });
  }

  /** Draws `data` (the /api/heatmap answer). */
  set(data) {
    this.data = data;
    this.mark.hidden = true;
    const avail = Math.max(200, this.canvas.parentElement.clientWidth) - ML - MR;
    this.cw = Math.max(2, Math.floor(avail / data.columns));
    this.rh = Math.max(3, Math.floor(PLOT_H / data.rows));
    const pw = data.columns * this.cw, ph = data.rows * this.rh;
    const w = ML + pw + MR, h = MT + ph + MB, dpr = window.devicePixelRatio || 1;
    this.canvas.width = w * dpr;
    this.canvas.height = h * dpr;
    this.canvas.style.width = w + 'px';
    this.canvas.style.height = h + 'px';
    const g = this.canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    g.fillStyle = '#fff';
    g.fillRect(ML, MT, pw, ph);
    const max = data.max || 1;
    for (let c = 0; c < data.columns; c++) {
      for (let r = 0; r < data.rows; r++) {
        const n = data.counts[c * data.rows + r];
        if (!n) continue;
        const f = Math.sqrt(n / max);
        g.fillStyle = `rgb(255,${Math.round(235 - 200 * f)},${Math.round(200 - 200 * f)})`;
        g.fillRect(ML + c * this.cw, MT + r * this.rh, this.cw, this.rh);
      }
    }
    g.strokeStyle = '#999';
    g.strokeRect(ML - 0.5, MT - 0.5, pw + 1, ph + 1);
    this.drawAxes(g, pw, ph);
    const rate = data.rate_hz ? `, sampled at ${data.rate_hz} Hz per CPU` : '';
    this.info.textContent = `${data.columns} s × ${data.rows} rows of ${data.row_ms} ms${rate}, ${data.total} samples, ` +
      `hottest cell ${data.max}: drag over cells to see their flame graph`;
  }

  /** The offset axis (left: ms within the second, 0 at the top) and the time axis (below:
   * UTC clock time of the columns' seconds, the date in its title). Their tick values are
   * kept in `axes` (tests). */
  drawAxes(g, pw, ph) {
    const d = this.data, startMs = d.start / 1e6;
    g.fillStyle = '#444';
    g.strokeStyle = '#999';
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
      g.fillText(ms + ' ms', ML - 6, Math.min(MT + ph, y));
    }
    g.save();
    g.translate(12, MT + ph / 2);
    g.rotate(-Math.PI / 2);
    g.textAlign = 'center';
    g.fillText('offset in the second', 0, 0);
    g.restore();
    // Time: seconds at a round step, labels at least 64 px apart.
    const step = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600].find((s) => s * this.cw >= 64) || 3600;
    const firstSec = Math.round(startMs / 1000), times = [];
    g.textAlign = 'center';
    g.textBaseline = 'top';
    for (let c = (step - (firstSec % step)) % step; c <= d.columns; c += step) {
      const x = ML + c * this.cw;
      times.push(startMs + c * 1000);
      g.fillRect(Math.round(x), MT + ph, 1, 4);
      const text = clock(startMs + c * 1000), half = g.measureText(text).width / 2;
      g.fillText(text, Math.min(ML + pw + MR - half - 1, x), MT + ph + 6);
    }
    const date = new Date(startMs).toISOString().slice(0, 10);
    g.textAlign = 'left';
    g.fillText(`time (UTC, ${date}), one column per second`, ML, MT + ph + 21);
    this.axes = { offsets, times, offsetTitle: 'offset in the second', timeTitle: `time (UTC, ${date}), one column per second`, rowPx: this.rh };
  }

  cell(e) {
    if (!this.data) return null;
    const r = this.canvas.getBoundingClientRect();
    const c = Math.floor((e.clientX - r.left - ML) / this.cw), row = Math.floor((e.clientY - r.top - MT) / this.rh);
    if (c < 0 || row < 0 || c >= this.data.columns || row >= this.data.rows) return null;
    return (this.last = { c, r: row });
  }

  show(a, b) {
    if (!a || !b) return;
    const c0 = Math.min(a.c, b.c), c1 = Math.max(a.c, b.c), r0 = Math.min(a.r, b.r), r1 = Math.max(a.r, b.r);
    Object.assign(this.mark.style, { left: ML + c0 * this.cw + 'px', top: MT + r0 * this.rh + 'px',
      width: (c1 - c0 + 1) * this.cw + 'px', height: (r1 - r0 + 1) * this.rh + 'px' });
    this.mark.hidden = false;
  }

  /** The page position of cell (c, r)'s centre (tests). */
  pointOf(c, r) {
    const b = this.canvas.getBoundingClientRect();
    return { x: b.left + ML + (c + 0.5) * this.cw, y: b.top + MT + (r + 0.5) * this.rh };
  }
}

export { HeatMap };
