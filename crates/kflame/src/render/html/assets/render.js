/* kflame viewer, part 3: layout and canvas drawing of one tree.
 *
 * Only frames at least MIN_WIDTH pixels wide are drawn and descended into; runs of narrower
 * siblings are drawn as one gray block, so the cost of a frame is bounded by what can be
 * seen, not by the size of the profile. Layout and painting are apart: the canvas covers
 * only the band of rows in view (show()), at full resolution, placed by its margins in a box
 * as tall as the whole graph, so that a stack tens of thousands of frames deep scrolls as
 * sharply as a shallow one. Names are drawn with fillText (never parsed as markup).
 * Exports FlameView.
 */
const MIN_WIDTH = 1;
const HIGHLIGHT = 'rgb(230,0,230)';
const MERGED = 'rgba(150,150,150,0.6)';
/** The tallest band painted at once, in CSS pixels (browsers refuse canvases taller than
 * 32767 device pixels). */
const MAX_BAND = 8000;

/** Draws a tree on a canvas and answers "which frame is under this point". */
class FlameView {
  constructor(canvas, options) {
    this.canvas = canvas;
    this.rowHeight = (options && options.rowHeight) || 17;
    this.fontSize = (options && options.fontSize) || 12;
    this.rootLabel = (options && options.rootLabel) || 'all';
    this.tree = null;
    this.items = null;
    this.band = { top: 0, height: MAX_BAND };
    this.painted = { top: 0, height: 0 };
  }

  /** Sets the tree and its colors (a function node -> CSS color). */
  setTree(tree, colorOf) {
    this.tree = tree;
    this.colorOf = colorOf;
  }

  /** Deepest depth under node i (the rows a zoom on i needs). */
  depthUnder(i) {
    const tree = this.tree;
    if (i === 0) return tree.maxDepth;
    let max = 0;
    for (let k = i; k < tree.end[i]; k++) if (tree.depth[k] > max) max = tree.depth[k];
    return max;
  }

  /** Lays out with state {zoom, inverted, heavy, mask}, width in CSS pixels, then paints
   * the band last asked for by show() (the top of the graph at first). Returns the number
   * of frames laid out. */
  draw(state, width) {
    const t0 = performance.now();
    const tree = this.tree;
    // The height of the whole graph whatever the zoom (as flamegraph.pl's SVG): a zoom
    // redraws the frames above the clicked one in place, so the clicked frame stays under
    // the pointer instead of the canvas shrinking to the subtree's depth around it.
    this.rows = this.depthUnder(0);
    this.height = (this.rows + 1) * this.rowHeight + 4;
    this.state = state;
    this.width = width;
    this.items = { x: [], w: [], node: [], row: [], dim: [] };
    this.merges = { x: [], w: [], row: [], count: [], weight: [] };
    const zoom = state.zoom, kids = state.heavy ? tree.heavyKids() : tree.kids;
    const path = tree.pathTo(zoom);
    for (const a of path) this.frame(a, 0, width, a !== zoom);
    if (tree.total[zoom] > 0) this.descend(zoom, 0, width / tree.total[zoom], kids);
    this.paint();
    this.drawnIn = performance.now() - t0;
    return this.items.node.length;
  }

  /** Paints the rows between `top` and `top + height` (CSS pixels from the top of the
   * graph): what the scroll box around the canvas shows. */
  show(top, height) {
    this.band = { top, height };
    if (this.items) this.paint();
  }

  /** Sizes and places the canvas over the band, then paints the frames in it. */
  paint() {
    const canvas = this.canvas, dpr = window.devicePixelRatio || 1, full = this.height;
    const h = Math.max(1, Math.min(this.band.height || MAX_BAND, MAX_BAND, full));
    const top = Math.max(0, Math.min(this.band.top, full - h));
    canvas.style.width = this.width + 'px';
    canvas.style.height = h + 'px';
    canvas.style.marginTop = top + 'px';
    canvas.style.marginBottom = full - top - h + 'px';
    const scale = Math.min(dpr, 32000 / h);
    canvas.width = Math.round(this.width * scale);
    canvas.height = Math.round(h * scale);
    const ctx = canvas.getContext('2d');
    ctx.setTransform(scale, 0, 0, scale, 0, -top * scale);
    ctx.font = this.fontSize + 'px ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace';
    ctx.textBaseline = 'middle';
    this.ctx = ctx;
    this.charWidth = ctx.measureText('MMMMMMMMMM').width / 10;
    this.painted = { top, height: h };
    const rh = this.rowHeight, it = this.items, m = this.merges;
    const inBand = (row) => {
      const y = this.rowY(row);
      return y + rh > top && y < top + h;
    };
    for (let k = 0; k < it.node.length; k++) if (inBand(it.row[k])) this.paintFrame(k);
    ctx.fillStyle = MERGED;
    for (let k = 0; k < m.x.length; k++) if (inBand(m.row[k])) ctx.fillRect(m.x[k], this.rowY(m.row[k]), m.w[k], rh - 1);
  }

  /** The point of a mouse event in CSS pixels of the whole graph. */
  pointer(ev) {
    const r = this.canvas.getBoundingClientRect();
    return { x: ev.clientX - r.left, y: ev.clientY - r.top + this.painted.top };
  }

  /** Where the graph point (x, y) is in the viewport. */
  toClient(x, y) {
    const r = this.canvas.getBoundingClientRect();
    return { x: r.left + x, y: r.top - this.painted.top + y };
  }

  /** Lays out the visible descendants of n, whose left edge is at x, in pre-order. The walk
   * keeps its own stack (one entry per level: the node, its next child, that child's x and
   * the run of narrow children so far), so that stacks tens of thousands of frames deep do
   * not exhaust the JavaScript call stack. */
  descend(n, x, scale, kids) {
    const tree = this.tree, kidOff = tree.kidOff, total = tree.total;
    const level = (node, left) => ({ node, next: kidOff[node], x: left, tiny: { x: -1, w: 0, count: 0, weight: 0 } });
    const open = [level(n, x)];
    while (open.length) {
      const top = open[open.length - 1], end = kidOff[top.node + 1], row = tree.depth[top.node] + 1;
      let child = -1;
      while (top.next < end) {
        const c = kids[top.next++], w = total[c] * scale, left = top.x;
        top.x += w;
        if (w < MIN_WIDTH) {
          const tiny = top.tiny;
          if (tiny.x < 0) tiny.x = left;
          tiny.w += w;
          tiny.count++;
          tiny.weight += total[c];
        } else {
          this.merged(top.tiny, row);
          this.frame(c, left, w, false);
          child = c;
          open.push(level(c, left));
          break;
        }
      }
      if (child < 0) {
        this.merged(top.tiny, row);
        open.pop();
      }
    }
  }

  /** The y of a row (depth) in CSS pixels. */
  rowY(depth) {
    return this.state.inverted ? 2 + depth * this.rowHeight : 2 + (this.rows - depth) * this.rowHeight;
  }

  /** Lays out node i at x, w wide (dim: an ancestor of the zoomed frame). */
  frame(i, x, w, dim) {
    const items = this.items;
    items.x.push(x);
    items.w.push(w);
    items.node.push(i);
    items.row.push(this.tree.depth[i]);
    items.dim.push(dim);
  }

  /** Paints laid-out frame k. */
  paintFrame(k) {
    const ctx = this.ctx, tree = this.tree, it = this.items, i = it.node[k], x = it.x[k], w = it.w[k];
    const y = this.rowY(it.row[k]), h = this.rowHeight - 1;
    const match = this.state.mask && i > 0 && this.state.mask[tree.name[i]];
    ctx.globalAlpha = it.dim[k] ? 0.55 : 1;
    ctx.fillStyle = match ? HIGHLIGHT : this.colorOf(i);
    ctx.fillRect(x, y, w > 2 ? w - 1 : w, h);
    ctx.globalAlpha = 1;
    this.label(this.labelOf(i), x, y + h / 2 + 0.5, w);
  }

  /** The text of node i (the root is called rootLabel). */
  labelOf(i) {
    return i === 0 ? this.rootLabel : this.tree.label(i);
  }

  /** Lays out a run of frames too narrow to draw alone as one block (when it is wide
   * enough to be seen), then starts a new run. */
  merged(tiny, row) {
    if (tiny.x >= 0 && tiny.w >= MIN_WIDTH) {
      const m = this.merges;
      m.x.push(tiny.x);
      m.w.push(tiny.w);
      m.row.push(row);
      m.count.push(tiny.count);
      m.weight.push(tiny.weight);
    }
    Object.assign(tiny, { x: -1, w: 0, count: 0, weight: 0 });
  }

  label(text, x, y, w) {
    const fit = Math.floor((w - 6) / this.charWidth);
    if (fit < 3) return;
    const s = text.length <= fit ? text : text.slice(0, fit - 2) + '..';
    this.ctx.fillStyle = 'rgb(20,20,20)';
    this.ctx.fillText(s, x + 3, y);
  }

  /** The depth drawn at y (CSS pixels of the canvas). */
  rowAt(y) {
    const r = Math.floor((y - 2) / this.rowHeight);
    return this.state.inverted ? r : this.rows - r;
  }

  /** The node drawn at (x, y) in CSS pixels of the canvas, or -1. */
  hit(x, y) {
    if (!this.items) return -1;
    const row = this.rowAt(y), it = this.items;
    for (let k = 0; k < it.node.length; k++) {
      if (it.row[k] === row && x >= it.x[k] && x < it.x[k] + it.w[k]) return it.node[k];
    }
    return -1;
  }

  /** The merged block at (x, y): {count, weight}, or null. */
  hitMerged(x, y) {
    if (!this.merges) return null;
    const row = this.rowAt(y), m = this.merges;
    for (let k = 0; k < m.x.length; k++) {
      if (m.row[k] === row && x >= m.x[k] && x < m.x[k] + m.w[k]) return { count: m.count[k], weight: m.weight[k] };
    }
    return null;
  }

  /** Where node i was drawn ({x, y, w, h} in CSS pixels of the canvas), or null. */
  rectOf(i) {
    const it = this.items;
    if (!it) return null;
    const k = it.node.indexOf(i);
    if (k < 0) return null;
    return { x: it.x[k], y: this.rowY(it.row[k]), w: it.w[k], h: this.rowHeight - 1 };
  }
}

export { FlameView };
