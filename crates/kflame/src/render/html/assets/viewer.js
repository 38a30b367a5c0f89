/* kflame viewer, part 5: the interactive viewer (toolbar, search, hide/focus with undo,
 * sandwich, top functions, tooltip, URL state, keyboard).
 *
 * Usage: start(element, meta, nodes), or new FlameViewer(element, tree, meta) where tree
 * comes from decodeTree(meta, nodes) (model.js) or a TreeBuilder, and meta holds title,
 * subtitle, notes, unit, countname, palette, inverted, flamechart. Every piece of profile
 * text is inserted with textContent. With meta.embedded (a viewer that is part of another
 * view, such as the scatter page's), it keeps no state in the URL and answers no keys
 * outside its own element. Selecting a frame (a click, a zoom, the top table) dispatches
 * `kf-select` (bubbling) on the viewer's element, `detail.name` the frame's name (null: none), for a
 * page that offers more about the selected frame.
 */
import * as model from './model.js';
import * as palette from './palette.js';
import { FlameView } from './render.js';
import * as ui from './ui.js';

/** Everything the viewer uses from the other modules. */
const K = { ...model, ...palette, FlameView, ...ui };
const HELP = 'click: zoom · Esc: reset zoom · /: search · c: ignore case · i: icicle/flame · ' +
  'l: left-heavy · f: focus selected · h: hide selected · u or Ctrl+Z: undo · s: sandwich · ' +
  't: top functions · g: flame graph';
const el = K.el;

const button = (act, text, title) => el('button', { 'data-act': act, text, title: title || text, type: 'button' });
const escapeRegex = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

class FlameViewer {
  constructor(root, tree, meta) {
    this.meta = meta;
    this.trees = [tree];
    this.transforms = [];
    this.state = { view: 'flame', zoom: 0, inverted: !!meta.inverted, heavy: false, search: '', ci: false,
      fn: -1, selected: -1, topSort: 'self', sandwichZoom: [0, 0] };
    this.mask = null;
    this.hovered = -1;
    this.timings = {};
    this.buildDom(root);
    this.flame = new K.FlameView(this.dom.canvas);
    this.callersView = new K.FlameView(this.dom.callersCanvas);
    this.calleesView = new K.FlameView(this.dom.calleesCanvas);
    this.useTree();
    this.restoreHash();
    this.bind();
    this.render();
  }

  /** The tree shown now (after hide/focus). */
  get tree() {
    return this.trees[this.trees.length - 1];
  }

  buildDom(root) {
    const d = (this.dom = {});
    d.title = el('h1', { class: 'kf-title', text: this.meta.title || 'Flame Graph' });
    d.subtitle = el('div', { class: 'kf-subtitle', text: this.meta.subtitle || '' });
    d.notes = el('div', { class: 'kf-notes', text: this.meta.notes || '' });
    const toolbar = this.buildToolbar(d);
    d.selName = el('span', { class: 'kf-sel-name', text: 'none (click a frame)' });
    const selected = el('div', { class: 'kf-selected' }, 'Selected: ', d.selName, ' ',
      button('focus', 'Focus', 'Focus on this function (f)'), button('hide', 'Hide', 'Hide this function (h)'),
      button('sandwich', 'Sandwich', 'Callers and callees (s)'));
    d.transforms = el('div', { class: 'kf-transforms' });
    d.legend = el('div', { class: 'kf-legend' });
    this.buildViews(d);
    d.details = el('div', { class: 'kf-details', text: ' ' });
    d.tooltip = el('div', { class: 'kf-tooltip', hidden: '' });
    d.root = el('div', { class: 'kf-viewer', tabindex: '-1' }, d.title, d.subtitle, d.notes, d.views, toolbar, selected,
      d.transforms, d.legend, d.empty, d.flame, d.sandwich, d.top, d.details,
      el('div', { class: 'kf-help', text: HELP }), d.tooltip);
    if (this.meta.differential) d.root.classList.add('kf-diff');
    root.replaceChildren(d.root);
  }

  buildToolbar(d) {
    d.search = el('input', { type: 'search', class: 'kf-search', placeholder: 'Search (regex)', spellcheck: 'false' });
    d.ci = el('input', { type: 'checkbox', class: 'kf-ci' });
    d.matched = el('span', { class: 'kf-matched' });
    d.undo = button('undo', 'Undo', 'Undo the last hide/focus (u)');
    const names = { flame: 'Flame graph', sandwich: 'Sandwich', top: 'Top functions' };
    d.views = el('span', { class: 'kf-views' },
      ...Object.entries(names).map(([v, text]) => el('button', { 'data-view': v, type: 'button', text })));
    return el('div', { class: 'kf-toolbar' },
      button('reset', 'Reset zoom'), button('invert', 'Icicle', 'Toggle icicle / flame (i)'),
      button('heavy', 'Left-heavy', 'Sort children by weight (l)'), el('span', { class: 'kf-sep' }),
      d.search, el('label', { class: 'kf-ci-label' }, d.ci, ' Ignore case'), d.matched,
      button('hide-matches', 'Hide matches'), button('focus-matches', 'Focus matches'), d.undo);
  }

  /** The three views: flame graph, sandwich (callers above, callees below), top table. */
  buildViews(d) {
    d.canvas = el('canvas', { class: 'kf-canvas' });
    d.hoverBox = el('div', { class: 'kf-hover-box', hidden: '' });
    d.flame = el('div', { class: 'kf-flame kf-scroll' }, d.canvas, d.hoverBox);
    d.empty = el('div', { class: 'kf-empty', text: 'No samples: the profile is empty.' });
    d.sandwichTitle = [el('h2', {}), el('h2', {})];
    d.callersCanvas = el('canvas', { class: 'kf-canvas' });
    d.calleesCanvas = el('canvas', { class: 'kf-canvas' });
    d.callersBox = el('div', { class: 'kf-scroll kf-half' }, d.callersCanvas);
    d.calleesBox = el('div', { class: 'kf-scroll kf-half' }, d.calleesCanvas);
    d.sandwich = el('div', { class: 'kf-sandwich' }, d.sandwichTitle[0], d.callersBox, d.sandwichTitle[1], d.calleesBox);
    this.table = new K.TopTable((nm) => this.pickFunction(nm), (key) => { this.state.topSort = key; this.render(); });
    d.top = this.table.element;
  }

  /** Prepares derived data of the current tree (colors, cached tables). */
  useTree() {
    this.colorOf = K.makeColorer(this.meta.palette, this.tree, this.meta);
    this.flame.setTree(this.tree, this.colorOf);
    this.topCache = null;
    this.updateMask();
  }

  // ---- actions ----------------------------------------------------------------------

  /** Zooms to node i of the current tree (0 resets). */
  zoom(i) {
    this.state.zoom = i >= 0 && i < this.tree.n ? i : 0;
    if (i > 0) this.select(this.tree.name[i]);
    this.render();
  }

  select(nm) {
    this.state.selected = nm;
    this.dom.selName.textContent = nm >= 0 ? this.tree.names[nm] : 'none (click a frame)';
    this.dom.root.dispatchEvent(new CustomEvent('kf-select', { bubbles: true, detail: { name: nm >= 0 ? this.tree.names[nm] : null } }));
  }

  /** Sets the search regex; '' clears it. */
  search(text, ignoreCase) {
    this.state.search = text;
    if (ignoreCase !== undefined) this.state.ci = !!ignoreCase;
    this.dom.search.value = text;
    this.dom.ci.checked = this.state.ci;
    this.updateMask();
    this.render();
  }

  updateMask() {
    this.mask = null;
    this.dom.matched.classList.remove('kf-error');
    if (!this.state.search) return;
    try {
      this.mask = K.matchNames(this.tree.names, new RegExp(this.state.search, this.state.ci ? 'i' : ''));
    } catch (e) {
      this.dom.matched.classList.add('kf-error');
      this.badRegex = e.message;
    }
  }

  /** Hides or focuses (kind) frames named `value` (how = 'name') or matching the regex
   * `value` (how = 'regex', ci = ignore case). Returns false for a bad regex. */
  transform(kind, how, value, ci) {
    const t = { kind, how, value, ci: !!ci }, mask = this.maskFor(t);
    if (!mask) return false;
    this.trees.push(kind === 'hide' ? K.hide(this.tree, mask) : K.focus(this.tree, mask));
    this.transforms.push(t);
    this.afterTransform();
    return true;
  }

  /** Undoes the last hide/focus. */
  undo() {
    if (this.transforms.length === 0) return;
    this.trees.pop();
    this.transforms.pop();
    this.afterTransform();
  }

  afterTransform() {
    this.state.zoom = 0;
    this.state.sandwichZoom = [0, 0];
    this.useTree();
    if (this.state.fn >= 0) this.buildSandwich();
    this.render();
  }

  /** Shows callers and callees of the function named by index nm. */
  sandwich(nm) {
    if (nm < 0) return;
    this.state.fn = nm;
    this.state.view = 'sandwich';
    this.state.sandwichZoom = [0, 0];
    this.select(nm);
    this.buildSandwich();
    this.render();
  }

  buildSandwich() {
    const nm = this.state.fn, tree = this.tree;
    this.callersTree = K.callers(tree, nm);
    this.calleesTree = K.callees(tree, nm);
    this.callersView.setTree(this.callersTree, K.makeColorer(this.meta.palette, this.callersTree, this.meta));
    this.calleesView.setTree(this.calleesTree, K.makeColorer(this.meta.palette, this.calleesTree, this.meta));
    const name = tree.names[nm];
    this.callersView.rootLabel = this.calleesView.rootLabel = name;
    // Above `--` a stack is the waker's, leaf first: a frame's "callers" there are the
    // functions it called, down to the waker's wakeup call, then `--` and the blocked stack.
    let waker = false;
    for (let i = 1; i < tree.n && !waker; i++) waker = tree.name[i] === nm && tree.waker[i] === 1;
    const note = waker ? " (in the waker's stack, read leaf first)" : '';
    this.dom.sandwichTitle[0].textContent = 'Callers of ' + name + note;
    this.dom.sandwichTitle[1].textContent = 'Callees of ' + name + note;
  }

  showView(v) {
    if (v === 'sandwich' && this.state.fn < 0) {
      if (this.state.selected < 0) return;
      return this.sandwich(this.state.selected);
    }
    this.state.view = v;
    this.render();
  }

  // ---- drawing ----------------------------------------------------------------------

  render() {
    const d = this.dom, s = this.state, empty = this.trees[0].n <= 1;
    d.empty.hidden = !empty;
    d.flame.hidden = empty || s.view !== 'flame';
    d.sandwich.hidden = empty || s.view !== 'sandwich';
    d.top.hidden = empty || s.view !== 'top';
    for (const b of d.views.children) b.setAttribute('aria-pressed', String(b.dataset.view === s.view));
    d.root.querySelector('[data-act=invert]').setAttribute('aria-pressed', String(s.inverted));
    d.root.querySelector('[data-act=heavy]').setAttribute('aria-pressed', String(s.heavy));
    d.undo.disabled = this.transforms.length === 0;
    this.renderTransforms();
    this.renderLegend();
    if (!empty && s.view === 'flame') this.drawFlame();
    if (!empty && s.view === 'sandwich') this.drawSandwich();
    if (!empty && s.view === 'top') this.renderTop();
    this.renderMatched();
    this.saveHash();
  }

  /** Drawing width of a visible scroll box, in CSS pixels. */
  width(box) {
    return Math.max(200, box.clientWidth);
  }

  drawFlame() {
    const s = this.state;
    this.flame.draw({ zoom: s.zoom, inverted: s.inverted, heavy: s.heavy, mask: this.mask }, this.width(this.dom.flame));
    this.timings.lastDraw = this.flame.drawnIn;
    this.dom.hoverBox.hidden = true;
    this.scrollTo(this.dom.flame, this.flame, s.zoom);
    this.showBand(this.dom.flame, this.flame);
  }

  drawSandwich() {
    const s = this.state, w = this.width(this.dom.callersBox);
    this.callersView.draw({ zoom: s.sandwichZoom[0], inverted: false, heavy: s.heavy, mask: this.mask }, w);
    this.calleesView.draw({ zoom: s.sandwichZoom[1], inverted: true, heavy: s.heavy, mask: this.mask }, w);
    this.scrollTo(this.dom.callersBox, this.callersView, s.sandwichZoom[0]);
    this.scrollTo(this.dom.calleesBox, this.calleesView, s.sandwichZoom[1]);
    this.showBand(this.dom.callersBox, this.callersView);
    this.showBand(this.dom.calleesBox, this.calleesView);
  }

  /** Paints the rows of a view that its scroll box shows. */
  showBand(box, view) {
    if (box.clientHeight > 0 && view.items) view.show(box.scrollTop, box.clientHeight);
  }

  /** Repaints a view when its box scrolls, once per animation frame. */
  follow(box, view) {
    let queued = false;
    box.addEventListener('scroll', () => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        this.showBand(box, view);
      });
    }, { passive: true });
  }

  /** Scrolls a view's box so that the zoomed frame (the root when not zoomed) shows, with
   * the frames it calls beyond it; only when what is drawn changed, not on a search. */
  scrollTo(box, view, zoom) {
    const key = [zoom, view.state.inverted, view.rootLabel, view.tree.n, view.tree.total[0], this.trees.length].join('/');
    if (box.dataset.scrolled === key) return;
    box.dataset.scrolled = key;
    const y = view.rowY(view.tree.depth[zoom]), rh = view.rowHeight;
    // A frame already in sight (the one just clicked) stays where it is.
    if (box.clientHeight > 0 && y >= box.scrollTop && y + rh <= box.scrollTop + box.clientHeight) return;
    box.scrollTop = view.state.inverted ? Math.max(0, y - 3 * rh) : Math.max(0, y + 4 * rh - box.clientHeight);
  }

  renderMatched() {
    const d = this.dom.matched;
    if (d.classList.contains('kf-error')) {
      d.textContent = 'Bad regex: ' + this.badRegex;
      return;
    }
    if (!this.mask) {
      d.textContent = '';
      return;
    }
    const tree = this.tree, all = K.matchedWeight(tree, this.mask, 0);
    const m = this.meta;
    let text = 'Matched: ' + K.formatPercent(all, tree.total[0]) + ' (' + K.formatWeight(all, m.unit, m.countname) + ')';
    if (this.state.zoom > 0 && this.state.view === 'flame') {
      text += ' (' + K.formatPercent(K.matchedWeight(tree, this.mask, this.state.zoom), tree.total[this.state.zoom]) + ' of zoomed frame)';
    }
    d.textContent = text;
  }

  renderTransforms() {
    const items = this.transforms.map((t) =>
      el('span', { class: 'kf-transform', text: (t.kind === 'hide' ? 'hidden: ' : 'focus: ') + (t.how === 'regex' ? '/' + t.value + '/' + (t.ci ? 'i' : '') : t.value) }));
    this.dom.transforms.replaceChildren(...items);
    this.dom.transforms.hidden = items.length === 0;
  }

  /** True for differential input (BEFORE and AFTER weights), drawn red and blue. */
  differential() {
    return !!(this.meta.differential && this.trees[0].before);
  }

  renderLegend() {
    const d = this.dom.legend, diff = this.differential();
    d.hidden = !diff && this.meta.palette !== 'kernel';
    if (d.hidden || d.childElementCount) return;
    for (const [label, color] of diff ? K.DIFF_LEGEND : K.KERNEL_LEGEND) {
      const swatch = el('span', { class: 'kf-swatch' });
      swatch.style.background = color;
      d.append(el('span', { class: 'kf-legend-item' }, swatch, label));
    }
    if (diff) {
      const text = this.meta.negate
        ? 'Differential graph (negated): widths are the second column (before); each frame is red where its own weight grows in the first column (after), blue where it shrinks.'
        : 'Differential graph: widths are the second column (after); each frame is red where its own weight grew since the first column (before), blue where it shrank.';
      d.append(el('span', { class: 'kf-legend-note', text }));
    }
  }

  topTable() {
    if (!this.topCache) this.topCache = K.topFunctions(this.tree);
    return this.topCache;
  }

  renderTop() {
    const fmt = (v) => K.formatWeight(v, this.meta.unit, this.meta.countname);
    this.table.render(this.tree, this.topTable(), this.state.topSort, fmt);
  }

  // ---- hover ------------------------------------------------------------------------

  /** The tooltip text lines for node i of a view zoomed at `zoom`. */
  describe(view, i, zoom) {
    const m = this.meta, tree = view.tree;
    const lines = [view.labelOf(i) + this.separatorNote(view, i), ...this.shares(view, tree.total[i], zoom)];
    if (i > 0 && tree.waker[i]) lines.push("in the waker's stack (leaf first from --)");
    if (tree.self[i] > 0) lines.push('self: ' + K.formatWeight(tree.self[i], m.unit, m.countname));
    if (tree.before && this.differential()) lines.push(...this.changes(tree, i));
    return lines;
  }

  /** What the name of a `--` frame is followed by: which side of it is the waker's stack
   * and which the blocked task's, as drawn in this view (the children of `--` are the
   * waker's frames in the flame graph and the callees, the blocked task's in the callers). */
  separatorNote(view, i) {
    const tree = view.tree;
    if (i === 0 || tree.names[tree.name[i]] !== K.WAKER_SEPARATOR) return '';
    let wakerKids = tree.kidOff[i] === tree.kidOff[i + 1];
    for (let k = tree.kidOff[i]; k < tree.kidOff[i + 1]; k++) if (tree.waker[tree.kids[k]]) wakerKids = true;
    const up = wakerKids !== !!view.state.inverted;
    return up ? " (waker's stack above, blocked stack below)" : " (waker's stack below, blocked stack above)";
  }

  /** Tooltip lines of a differential frame: its weight before and after, the change, and
   * the change of its own weight (what its color shows), as a share of the total. With
   * --negate the drawn (second) column is the earlier profile. */
  changes(tree, i) {
    const m = this.meta, fmt = (v) => K.formatWeight(v, m.unit, m.countname);
    const change = (v) => K.formatChange(v, m.unit, m.countname);
    const swap = !!m.negate, all = this.trees[0].total[0];
    const [before, after] = swap ? [tree.total[i], tree.totalBefore[i]] : [tree.totalBefore[i], tree.total[i]];
    const [selfBefore, selfAfter] = swap ? [tree.self[i], tree.before[i]] : [tree.before[i], tree.self[i]];
    const d = after - before, ds = selfAfter - selfBefore;
    const rel = before > 0 ? ' (' + (d > 0 ? '+' : '') + K.formatPercent(d, before) + ')' : after > 0 ? ' (new)' : '';
    const lines = ['before: ' + fmt(before) + ' → after: ' + fmt(after), 'change: ' + change(d) + rel];
    if (selfBefore > 0 || selfAfter > 0) {
      lines.push('self change: ' + change(ds) + ', ' + (ds > 0 ? '+' : '') + K.formatPercent(ds, all) + ' of total');
    }
    return lines;
  }

  /** A weight in its unit and as shares of the whole profile, of the focused view (after a
   * focus), of the sandwiched function and of the zoomed frame. */
  shares(view, w, zoom) {
    const m = this.meta, all = this.trees[0].total[0], shown = this.tree.total[0];
    const lines = [K.formatWeight(w, m.unit, m.countname), K.formatPercent(w, all) + ' of total'];
    if (shown !== all) lines.push(K.formatPercent(w, shown) + ' of the focused view');
    if (view !== this.flame) lines.push(K.formatPercent(w, view.tree.total[0]) + ' of ' + view.rootLabel);
    if (zoom > 0) lines.push(K.formatPercent(w, view.tree.total[zoom]) + ' of zoomed frame');
    return lines;
  }

  hover(view, zoom, ev) {
    const { x, y } = view.pointer(ev);
    const i = view.hit(x, y), merged = i < 0 ? view.hitMerged(x, y) : null;
    this.outline(view, i);
    this.hovered = i > 0 ? view.tree.name[i] : i === 0 && view !== this.flame ? this.state.fn : -1;
    let lines = null;
    if (i >= 0) lines = this.describe(view, i, zoom);
    else if (merged) lines = this.describeMerged(view, merged, zoom);
    this.showTip(lines, ev);
  }

  /** Tooltip lines for a block of frames each narrower than a pixel. */
  describeMerged(view, m, zoom) {
    const title = m.count + (m.count === 1 ? ' frame' : ' frames') + ' too narrow to draw (zoom in)';
    return [title, ...this.shares(view, m.weight, zoom)];
  }

  showTip(lines, ev) {
    const tip = this.dom.tooltip;
    if (!lines) {
      tip.hidden = true;
      return;
    }
    tip.replaceChildren(...lines.map((l, k) => el('div', { class: k === 0 ? 'kf-tip-name' : '', text: l })));
    tip.hidden = false;
    const x = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 4);
    const y = ev.clientY + 18 + tip.offsetHeight > window.innerHeight ? ev.clientY - tip.offsetHeight - 8 : ev.clientY + 18;
    tip.style.left = Math.max(0, x) + 'px';
    tip.style.top = Math.max(0, y) + 'px';
    this.dom.details.textContent = lines.join(' · ');
  }

  leave() {
    this.dom.tooltip.hidden = true;
    this.dom.hoverBox.hidden = true;
    this.hovered = -1;
  }

  /** Outlines the hovered frame of the main view. */
  outline(view, i) {
    const box = this.dom.hoverBox, r = view === this.flame && i >= 0 ? view.rectOf(i) : null;
    box.hidden = !r;
    if (!r) return;
    Object.assign(box.style, { left: r.x + 'px', top: r.y + 'px', width: Math.max(1, r.w - 1) + 'px', height: r.h + 'px' });
  }

  // ---- events -----------------------------------------------------------------------

  bind() {
    const d = this.dom;
    d.canvas.addEventListener('mousemove', (e) => this.hover(this.flame, this.state.zoom, e));
    d.canvas.addEventListener('mouseleave', () => this.leave());
    d.canvas.addEventListener('click', (e) => this.clickFlame(e));
    this.follow(d.flame, this.flame);
    this.follow(d.callersBox, this.callersView);
    this.follow(d.calleesBox, this.calleesView);
    this.bindSandwich(0, this.callersView);
    this.bindSandwich(1, this.calleesView);
    d.root.addEventListener('click', (e) => this.clickButton(e));
    let timer = 0;
    d.search.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.search(d.search.value), 150);
    });
    d.search.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') { clearTimeout(timer); this.search(d.search.value); }
    });
    d.ci.addEventListener('change', () => this.search(d.search.value, d.ci.checked));
    // Listeners outside the viewer's own elements end with destroy().
    this.global = new AbortController();
    const signal = this.global.signal;
    window.addEventListener('resize', () => this.render(), { signal });
    if (this.meta.embedded) {
      d.root.addEventListener('keydown', (e) => this.key(e), { signal });
      return;
    }
    document.addEventListener('keydown', (e) => this.key(e), { signal });
    window.addEventListener('hashchange', () => { if (location.hash !== this.lastHash) { this.restoreHash(); this.render(); } },
      { signal });
  }

  /** Detaches the viewer from the document and window (a page that replaces it with a viewer
   * of other data calls this first, so the old one no longer answers keys or the URL). */
  destroy() {
    this.global.abort();
    this.dom.root.remove();
  }

  bindSandwich(k, view) {
    const canvas = k === 0 ? this.dom.callersCanvas : this.dom.calleesCanvas;
    canvas.addEventListener('mousemove', (e) => this.hover(view, this.state.sandwichZoom[k], e));
    canvas.addEventListener('mouseleave', () => this.leave());
    canvas.addEventListener('click', (e) => {
      const p = view.pointer(e), i = view.hit(p.x, p.y);
      if (i < 0) return;
      this.state.sandwichZoom[k] = i;
      this.render();
    });
  }

  clickFlame(e) {
    const p = this.flame.pointer(e), i = this.flame.hit(p.x, p.y);
    if (i >= 0) this.zoom(i);
  }

  clickButton(e) {
    const b = e.target.closest('button');
    if (!b) return;
    if (b.dataset.view) return this.showView(b.dataset.view);
    this.act(b.dataset.act);
  }

  /** A function picked in the table: search for it and show its sandwich. */
  pickFunction(nm) {
    this.state.search = '^' + escapeRegex(this.tree.names[nm]) + '$';
    this.dom.search.value = this.state.search;
    this.updateMask();
    this.sandwich(nm);
  }

  /** Runs a toolbar action by name. */
  act(name) {
    const s = this.state, sel = s.selected >= 0 ? this.tree.names[s.selected] : null;
    switch (name) {
      case 'reset': s.sandwichZoom = [0, 0]; return this.zoom(0);
      case 'invert': s.inverted = !s.inverted; return this.render();
      case 'heavy': s.heavy = !s.heavy; return this.render();
      case 'undo': return this.undo();
      case 'hide-matches': if (this.mask) this.transform('hide', 'regex', s.search, s.ci); return;
      case 'focus-matches': if (this.mask) this.transform('focus', 'regex', s.search, s.ci); return;
      case 'hide': if (sel !== null) this.transform('hide', 'name', sel); return;
      case 'focus': if (sel !== null) this.transform('focus', 'name', sel); return;
      case 'sandwich': return this.sandwich(s.selected);
    }
  }

  key(e) {
    const typing = e.target instanceof HTMLInputElement && e.target.type !== 'checkbox';
    if (e.key === 'Escape') {
      if (typing) e.target.blur();
      else if (this.state.zoom > 0 || this.state.sandwichZoom.some((z) => z > 0)) this.act('reset');
      else if (this.state.search) this.search('');
      return;
    }
    if (typing || e.altKey || e.metaKey) return;
    if (e.ctrlKey) {
      if (e.key === 'z') { e.preventDefault(); this.undo(); }
      return;
    }
    const target = this.hovered >= 0 ? this.hovered : this.state.selected;
    const map = {
      '/': () => this.dom.search.focus(), c: () => this.search(this.state.search, !this.state.ci),
      i: () => this.act('invert'), l: () => this.act('heavy'), u: () => this.undo(),
      f: () => this.act('focus'), h: () => this.act('hide'), s: () => this.sandwich(target),
      t: () => this.showView('top'), g: () => this.showView('flame'),
    };
    if (map[e.key]) { e.preventDefault(); map[e.key](); }
  }

  // ---- URL state --------------------------------------------------------------------

  saveHash() {
    if (this.meta.embedded) return;
    const s = this.state, defaults = { inverted: !!this.meta.inverted };
    const hash = K.UrlState.encode(s, defaults, s.fn >= 0 ? this.tree.names[s.fn] : null, this.transforms);
    if (hash !== (location.hash || '')) history.replaceState(null, '', hash || location.pathname + location.search);
    this.lastHash = location.hash;
  }

  restoreHash() {
    if (this.meta.embedded) return;
    const want = K.UrlState.decode(location.hash, { inverted: !!this.meta.inverted }), s = this.state;
    this.replayTransforms(want.transforms);
    Object.assign(s, { inverted: want.inverted, heavy: want.heavy, ci: want.ci, search: want.search });
    this.dom.search.value = s.search;
    this.dom.ci.checked = s.ci;
    this.updateMask();
    const fn = want.fn === null ? -1 : this.tree.names.indexOf(want.fn);
    if (fn >= 0) { s.fn = fn; this.buildSandwich(); }
    s.view = want.view === 'sandwich' && fn < 0 ? 'flame' : want.view;
    s.zoom = want.zoom < this.tree.n ? want.zoom : 0;
    if (s.zoom > 0) this.select(this.tree.name[s.zoom]);
  }

  /** Re-applies hide/focus steps unless they are the ones applied already. */
  replayTransforms(list) {
    if (JSON.stringify(list) === JSON.stringify(this.transforms)) return;
    this.trees.length = 1;
    this.transforms = [];
    for (const t of list) {
      const mask = this.maskFor(t);
      if (!mask) continue;
      this.trees.push(t.kind === 'hide' ? K.hide(this.tree, mask) : K.focus(this.tree, mask));
      this.transforms.push(t);
    }
    this.useTree();
  }

  maskFor(t) {
    if (t.how === 'name') {
      const nm = this.tree.names.indexOf(t.value), mask = new Uint8Array(this.tree.names.length);
      if (nm >= 0) mask[nm] = 1;
      return mask;
    }
    try {
      return K.matchNames(this.tree.names, new RegExp(t.value, t.ci ? 'i' : ''));
    } catch (e) {
      return null;
    }
  }

  // ---- for tests and embedding pages ------------------------------------------------

  /** Node of the current tree reached by a list of frame names from the root, or -1. */
  nodeByPath(frames) {
    return this.tree.find(frames);
  }

  /** Center of node i in viewport coordinates (flame view), or null when not drawn. */
  pointOf(i) {
    const r = this.flame.rectOf(i);
    if (!r) return null;
    return this.flame.toClient(r.x + Math.min(r.w / 2, 40), r.y + r.h / 2);
  }
}

/** Shows the profile `meta` + `nodes` (the base64 node stream) in `root`: what both the
 * page with embedded data (page.js) and a page that fetches its data (served.js) do. `t0`:
 * when reading the data began (performance.now()), for the decode and first-draw timings.
 * The viewer is also globalThis.kflameViewer (tests, the console). */
function start(root, meta, nodes, t0 = performance.now()) {
  const tree = K.decodeTree(meta, nodes);
  const t1 = performance.now();
  const viewer = new FlameViewer(root, tree, meta);
  viewer.timings.decode = t1 - t0;
  viewer.timings.firstDraw = performance.now() - t0;
  globalThis.kflameViewer = viewer;
  return viewer;
}

export { FlameViewer, start };
