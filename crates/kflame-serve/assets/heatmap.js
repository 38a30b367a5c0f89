/* kflame serve, heat map: samples per second (columns) and offset within the second (rows,
 * offset 0 at the top), as FlameScope draws them. Drag over cells to select a rectangle;
 * `onSelect({c0, c1, r0, r1})` gets the inclusive cell range. */

const ROW_PX = 7;

class HeatMap {
  constructor(container, onSelect) {
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'ks-heat-canvas';
    this.box = document.createElement('div');
    this.box.className = 'ks-heat-box';
    this.box.hidden = true;
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
    this.canvas.addEventListener('mousedown', (e) => { e.preventDefault(); this.drag = this.cell(e); this.show(this.drag, this.drag); });
    this.canvas.addEventListener('mousemove', (e) => {
      const c = this.cell(e);
      if (!c) return;
      if (this.drag) this.show(this.drag, c);
      const n = this.data.counts[c.c * this.data.rows + c.r];
      this.info.textContent = `second ${c.c} (${new Date(this.data.start / 1e6 + c.c * 1000).toISOString().slice(11, 19)} UTC), ` +
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
    const avail = Math.max(200, this.canvas.parentElement.clientWidth);
    this.cw = Math.max(2, Math.floor(avail / data.columns));
    const w = data.columns * this.cw, h = data.rows * ROW_PX;
    this.canvas.width = w;
    this.canvas.height = h;
    this.canvas.style.width = w + 'px';
    this.canvas.style.height = h + 'px';
    const g = this.canvas.getContext('2d');
    g.fillStyle = '#fff';
    g.fillRect(0, 0, w, h);
    const max = data.max || 1;
    for (let c = 0; c < data.columns; c++) {
      for (let r = 0; r < data.rows; r++) {
        const n = data.counts[c * data.rows + r];
        if (!n) continue;
        const f = Math.sqrt(n / max);
        g.fillStyle = `rgb(255,${Math.round(235 - 200 * f)},${Math.round(200 - 200 * f)})`;
        g.fillRect(c * this.cw, r * ROW_PX, this.cw, ROW_PX);
      }
    }
    this.info.textContent = `${data.columns} s × ${data.rows} rows of ${data.row_ms} ms, ${data.total} samples, ` +
      `hottest cell ${data.max}: drag over cells to see their flame graph`;
  }

  cell(e) {
    if (!this.data) return null;
    const r = this.canvas.getBoundingClientRect();
    const c = Math.floor((e.clientX - r.left) / this.cw), row = Math.floor((e.clientY - r.top) / ROW_PX);
    if (c < 0 || row < 0 || c >= this.data.columns || row >= this.data.rows) return null;
    return (this.last = { c, r: row });
  }

  show(a, b) {
    if (!a || !b) return;
    const c0 = Math.min(a.c, b.c), c1 = Math.max(a.c, b.c), r0 = Math.min(a.r, b.r), r1 = Math.max(a.r, b.r);
    Object.assign(this.mark.style, { left: c0 * this.cw + 'px', top: r0 * ROW_PX + 'px',
      width: (c1 - c0 + 1) * this.cw + 'px', height: (r1 - r0 + 1) * ROW_PX + 'px' });
    this.mark.hidden = false;
  }

  /** The page position of cell (c, r)'s centre (tests). */
  pointOf(c, r) {
    const b = this.canvas.getBoundingClientRect();
    return { x: b.left + (c + 0.5) * this.cw, y: b.top + (r + 0.5) * ROW_PX };
  }
}

export { HeatMap };
