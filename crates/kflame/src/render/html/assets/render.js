/* kflame viewer, part 3: layout and canvas drawing of one tree.
 *
 * Only frames at least MIN_WIDTH pixels wide are drawn and descended into; runs of narrower
 * siblings are drawn as one gray block, so the cost of a frame is bounded by what can be
 * seen, not by the size of the profile. Names are drawn with fillText (never parsed as
 * markup). Exposes globalThis.KFlame.FlameView.
 */
(function (K) {
  'use strict';

  const MIN_WIDTH = 1;
  const HIGHLIGHT = 'rgb(230,0,230)';
  const MERGED = 'rgba(150,150,150,0.6)';

  /** Draws a tree on a canvas and answers "which frame is under this point". */
  class FlameView {
    constructor(canvas, options) {
      this.canvas = canvas;
      this.rowHeight = (options && options.rowHeight) || 17;
      this.fontSize = (options && options.fontSize) || 12;
      this.rootLabel = (options && options.rootLabel) || 'all';
      this.tree = null;
      this.items = null;
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

    /** Draws with state {zoom, inverted, heavy, mask}; width in CSS pixels. */
    draw(state, width) {
      const t0 = performance.now();
      const tree = this.tree, canvas = this.canvas, dpr = window.devicePixelRatio || 1;
      this.rows = this.depthUnder(state.zoom);
      const height = (this.rows + 1) * this.rowHeight + 4;
      canvas.style.width = width + 'px';
      canvas.style.height = height + 'px';
      // Browsers refuse canvases taller than 32767 device pixels: trade sharpness for height.
      const scale = Math.min(dpr, 32000 / height);
      canvas.width = Math.round(width * scale);
      canvas.height = Math.round(height * scale);
      const ctx = canvas.getContext('2d');
      ctx.setTransform(scale, 0, 0, scale, 0, 0);
      ctx.font = this.fontSize + 'px ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace';
      ctx.textBaseline = 'middle';
      this.ctx = ctx;
      this.charWidth = ctx.measureText('MMMMMMMMMM').width / 10;
      this.state = state;
      this.width = width;
      this.items = { x: [], w: [], node: [], row: [] };
      this.merges = { x: [], w: [], row: [], count: [], weight: [] };
      const zoom = state.zoom, kids = state.heavy ? tree.heavyKids() : tree.kids;
      const path = tree.pathTo(zoom);
      for (const a of path) this.frame(a, 0, width, a !== zoom);
      if (tree.total[zoom] > 0) this.descend(zoom, 0, width / tree.total[zoom], kids);
      this.drawnIn = performance.now() - t0;
      return this.items.node.length;
    }

    /** Draws the visible descendants of n, whose left edge is at x, in pre-order. The walk
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

    frame(i, x, w, dim) {
      const ctx = this.ctx, tree = this.tree, y = this.rowY(tree.depth[i]), h = this.rowHeight - 1;
      const match = this.state.mask && i > 0 && this.state.mask[tree.name[i]];
      ctx.globalAlpha = dim ? 0.55 : 1;
      ctx.fillStyle = match ? HIGHLIGHT : this.colorOf(i);
      ctx.fillRect(x, y, w > 2 ? w - 1 : w, h);
      ctx.globalAlpha = 1;
      const items = this.items;
      items.x.push(x);
      items.w.push(w);
      items.node.push(i);
      items.row.push(tree.depth[i]);
      this.label(this.labelOf(i), x, y + h / 2 + 0.5, w);
    }

    /** The text of node i (the root is called rootLabel). */
    labelOf(i) {
      return i === 0 ? this.rootLabel : this.tree.label(i);
    }

    /** Draws a run of frames too narrow to draw alone as one block (when it is wide enough
     * to be seen), then starts a new run. */
    merged(tiny, row) {
      if (tiny.x >= 0 && tiny.w >= MIN_WIDTH) {
        this.ctx.fillStyle = MERGED;
        this.ctx.fillRect(tiny.x, this.rowY(row), tiny.w, this.rowHeight - 1);
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

  K.FlameView = FlameView;
})((globalThis.KFlame = globalThis.KFlame || {}));
