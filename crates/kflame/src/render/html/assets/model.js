/* kflame viewer, part 1: the data model.
 *
 * A profile is a frame tree in pre-order held in typed arrays (node 0 is the root, "all").
 * Everything the viewer shows (zoom, search, hide/focus, sandwich, top functions) is
 * computed from these arrays; derived trees are built with a TreeBuilder.
 * Exports {WAKER_SEPARATOR, Tree, TreeBuilder, decodeTree, hide, focus, callers, callees,
 * topFunctions, matchNames, matchedWeight, formatWeight, formatChange, formatPercent}.
 */
/** The frame bcc's offwaketime (and `kflame record --off-cpu --wakers`) puts between the
 * blocked task's stack (root first) and its waker's stack (leaf first). Only this name: a
 * single `-` is bcc's delimiter of the user and kernel parts of one stack. */
const WAKER_SEPARATOR = '--';

/** A frame tree in pre-order: names[name[i]] is node i's frame, depth[i] its depth,
 * self[i] the weight of stacks ending there; for differential input before[i] is their
 * BEFORE weight (null otherwise). waker[i] is 1 for a frame of a waker's stack: above a
 * `--` frame, or for a derived tree (hide, focus, sandwich), from such a frame. */
class Tree {
  constructor(names, name, depth, self, ordered, before, waker) {
    this.names = names;
    this.name = name;
    this.depth = depth;
    this.self = self;
    this.before = before || null;
    this.ordered = ordered;
    this.n = name.length;
    this.link();
    this.sum();
    this.childLists();
    this.waker = waker || this.wakerSide();
    this.heavy = null;
  }

  /** 1 for every node above a `--` frame. */
  wakerSide() {
    const sep = this.names.indexOf(WAKER_SEPARATOR), waker = new Uint8Array(this.n);
    if (sep < 0) return waker;
    for (let i = 1; i < this.n; i++) {
      const p = this.parent[i];
      waker[i] = waker[p] || (p > 0 && this.name[p] === sep) ? 1 : 0;
    }
    return waker;
  }

  /** parent[] and end[] (exclusive end of each subtree in pre-order). */
  link() {
    const n = this.n, depth = this.depth;
    const parent = new Int32Array(n), end = new Int32Array(n), lastAt = [0];
    let maxDepth = 0;
    parent[0] = -1;
    for (let i = 1; i < n; i++) {
      const d = depth[i];
      parent[i] = lastAt[d - 1];
      lastAt[d] = i;
      if (d > maxDepth) maxDepth = d;
    }
    end.fill(1);
    for (let i = n - 1; i > 0; i--) end[parent[i]] += end[i];
    for (let i = 0; i < n; i++) end[i] += i;
    this.parent = parent;
    this.end = end;
    this.maxDepth = maxDepth;
  }

  /** total[] = self plus all descendants (totalBefore[] likewise for BEFORE weights). */
  sum() {
    const total = Float64Array.from(this.self);
    for (let i = this.n - 1; i > 0; i--) total[this.parent[i]] += total[i];
    this.total = total;
    this.totalBefore = null;
    if (this.before) {
      const tb = Float64Array.from(this.before);
      for (let i = this.n - 1; i > 0; i--) tb[this.parent[i]] += tb[i];
      this.totalBefore = tb;
    }
  }

  /** Children in pre-order (drawing) order, as offsets kidOff[i]..kidOff[i+1] in kids. */
  childLists() {
    const n = this.n, parent = this.parent;
    const kidOff = new Int32Array(n + 1);
    for (let i = 1; i < n; i++) kidOff[parent[i] + 1]++;
    for (let i = 0; i < n; i++) kidOff[i + 1] += kidOff[i];
    const fill = kidOff.slice(0, n), kids = new Int32Array(Math.max(n - 1, 0));
    for (let i = 1; i < n; i++) kids[fill[parent[i]]++] = i;
    this.kidOff = kidOff;
    this.kids = kids;
  }

  /** Children lists sorted by total weight, heaviest first (left-heavy ordering). */
  heavyKids() {
    if (this.heavy) return this.heavy;
    const heavy = this.kids.slice(), total = this.total;
    for (let i = 0; i < this.n; i++) {
      const a = this.kidOff[i], b = this.kidOff[i + 1];
      if (b - a > 1) heavy.subarray(a, b).sort((x, y) => total[y] - total[x] || x - y);
    }
    this.heavy = heavy;
    return heavy;
  }

  /** The frame name of node i. */
  label(i) {
    return i === 0 ? 'all' : this.names[this.name[i]];
  }

  /** Nodes from the root down to i (both included). */
  pathTo(i) {
    const path = [];
    for (let a = i; a >= 0; a = this.parent[a]) path.push(a);
    return path.reverse();
  }

  /** The node reached by following frame names from the root, or -1. */
  find(frames) {
    let at = 0;
    for (const f of frames) {
      let next = -1;
      for (let k = this.kidOff[at]; k < this.kidOff[at + 1]; k++) {
        if (this.names[this.name[this.kids[k]]] === f) { next = this.kids[k]; break; }
      }
      if (next < 0) return -1;
      at = next;
    }
    return at;
  }
}

/** Builds a tree node by node (any order), then lays it out in pre-order. With
 * `differential`, nodes also sum BEFORE weights. */
class TreeBuilder {
  constructor(names, ordered, differential) {
    this.names = names;
    this.ordered = ordered;
    this.differential = !!differential;
    this.nameOf = [-1];
    this.parentOf = [-1];
    this.selfOf = [0];
    this.beforeOf = [0];
    this.wakerOf = [0];
    this.sided = false;
    this.last = [-1];
    this.index = new Map();
  }

  /** The child of p named nm, created when missing (flame charts: only the last child). */
  child(p, nm) {
    const last = this.last[p];
    if (last >= 0 && this.nameOf[last] === nm) return last;
    const key = p * this.names.length + nm;
    if (!this.ordered) {
      const c = this.index.get(key);
      if (c !== undefined) return c;
    }
    const id = this.nameOf.length;
    this.nameOf.push(nm);
    this.parentOf.push(p);
    this.selfOf.push(0);
    this.beforeOf.push(0);
    this.wakerOf.push(0);
    this.last.push(-1);
    this.last[p] = id;
    if (!this.ordered) this.index.set(key, id);
    return id;
  }

  /** Adds weight to node id's self weight (and b to its BEFORE weight). */
  add(id, w, b) {
    this.selfOf[id] += w;
    if (b) this.beforeOf[id] += b;
  }

  /** Marks node id as (part of) a waker's stack when `waker` is set. A builder that marks
   * any node gives its tree these marks; one that marks none (stacks built from names)
   * leaves the tree to find its waker frames above `--` itself. */
  markWaker(id, waker) {
    this.sided = true;
    if (waker) this.wakerOf[id] = 1;
  }

  /** The finished tree; children ordered by name rank (or creation order for charts). */
  build(rank) {
    const n = this.nameOf.length, kids = Array.from({ length: n }, () => []);
    for (let i = 1; i < n; i++) kids[this.parentOf[i]].push(i);
    if (!this.ordered) for (const k of kids) if (k.length > 1) k.sort((a, b) => rank[this.nameOf[a]] - rank[this.nameOf[b]]);
    const name = new Int32Array(n), depth = new Int32Array(n), self = new Float64Array(n);
    const before = this.differential ? new Float64Array(n) : null;
    const waker = new Uint8Array(n);
    const stack = [0], depthOf = new Int32Array(n);
    let at = 0;
    while (stack.length) {
      const id = stack.pop();
      name[at] = this.nameOf[id];
      depth[at] = depthOf[id];
      self[at] = this.selfOf[id];
      if (before) before[at] = this.beforeOf[id];
      waker[at] = this.wakerOf[id];
      at++;
      const k = kids[id];
      for (let j = k.length - 1; j >= 0; j--) {
        depthOf[k[j]] = depthOf[id] + 1;
        stack.push(k[j]);
      }
    }
    return new Tree(this.names, name, depth, self, this.ordered, before, this.sided ? waker : null);
  }
}

/** Rank of each name in code-unit order (the order children are drawn in). */
function nameRank(names) {
  if (names.rank) return names.rank;
  const order = Array.from(names.keys()).sort((a, b) => (names[a] < names[b] ? -1 : names[a] > names[b] ? 1 : 0));
  const rank = new Int32Array(names.length);
  order.forEach((nm, r) => { rank[nm] = r; });
  Object.defineProperty(names, 'rank', { value: rank });
  return rank;
}

/** Decodes the embedded profile: meta.names and the base64 varint node stream (three
 * varints per node: levels up from the previous node's child, name index, self weight;
 * a fourth, the BEFORE weight, when meta.differential). */
function decodeTree(meta, b64) {
  const bin = atob(b64.trim()), n = meta.count + 1;
  const name = new Int32Array(n), depth = new Int32Array(n), self = new Float64Array(n);
  const before = meta.differential ? new Float64Array(n) : null;
  const div = Math.pow(10, meta.scale);
  name[0] = -1;
  let p = 0, prev = 0;
  const varint = () => {
    let b = bin.charCodeAt(p++);
    if (b < 128) return b;
    let x = b & 127, mul = 128;
    do {
      b = bin.charCodeAt(p++);
      x += (b & 127) * mul;
      mul *= 128;
    } while (b & 128);
    return x;
  };
  for (let i = 1; i < n; i++) {
    const d = prev + 1 - varint();
    depth[i] = d;
    name[i] = varint();
    const w = varint();
    self[i] = w === 0 ? 0 : w / div;
    if (before) {
      const b = varint();
      before[i] = b === 0 ? 0 : b / div;
    }
    prev = d;
  }
  return new Tree(meta.names, name, depth, self, !!meta.flamechart, before);
}

/** Removes frames whose name is in mask: their children and self weight move to the caller. */
function hide(tree, mask) {
  const b = new TreeBuilder(tree.names, tree.ordered, tree.before), map = new Int32Array(tree.n);
  for (let i = 1; i < tree.n; i++) {
    const up = map[tree.parent[i]];
    map[i] = mask[tree.name[i]] ? up : b.child(up, tree.name[i]);
    if (map[i] > 0 && map[i] !== up) b.markWaker(map[i], tree.waker[i]);
    b.add(map[i], tree.self[i], selfBefore(tree, i));
  }
  return b.build(nameRank(tree.names));
}

/** Keeps only stacks through a frame in mask, re-rooted at the outermost such frame
 * (all its occurrences merged). */
function focus(tree, mask) {
  const b = new TreeBuilder(tree.names, tree.ordered, tree.before), map = new Int32Array(tree.n);
  map[0] = -1;
  for (let i = 1; i < tree.n; i++) {
    const up = map[tree.parent[i]];
    if (up >= 0) map[i] = b.child(up, tree.name[i]);
    else map[i] = mask[tree.name[i]] ? b.child(0, tree.name[i]) : -1;
    if (map[i] >= 0) {
      b.markWaker(map[i], tree.waker[i]);
      b.add(map[i], tree.self[i], selfBefore(tree, i));
    }
  }
  return b.build(nameRank(tree.names));
}

/** The functions called from nm, merged over its outermost occurrences; the root of the
 * returned tree stands for nm. */
function callees(tree, nm) {
  const b = new TreeBuilder(tree.names, false, tree.before), map = new Int32Array(tree.n).fill(-1);
  for (let i = 1; i < tree.n; i++) {
    const up = map[tree.parent[i]];
    if (up >= 0) map[i] = b.child(up, tree.name[i]);
    else if (tree.name[i] === nm) map[i] = 0;
    if (map[i] > 0) b.markWaker(map[i], tree.waker[i]);
    if (map[i] >= 0) b.add(map[i], tree.self[i], selfBefore(tree, i));
  }
  return b.build(nameRank(tree.names));
}

/** The callers of nm, merged over its outermost occurrences (each weighted by its total);
 * the root of the returned tree stands for nm, its children are the direct callers. */
function callers(tree, nm) {
  const b = new TreeBuilder(tree.names, false, tree.before), inside = new Uint8Array(tree.n);
  for (let i = 1; i < tree.n; i++) {
    const p = tree.parent[i];
    inside[i] = inside[p] || (p > 0 && tree.name[p] === nm) ? 1 : 0;
    if (tree.name[i] !== nm || inside[i]) continue;
    let at = 0;
    for (let a = p; a > 0; a = tree.parent[a]) {
      at = b.child(at, tree.name[a]);
      b.markWaker(at, tree.waker[a]);
    }
    b.add(at, tree.total[i], tree.totalBefore ? tree.totalBefore[i] : 0);
  }
  return b.build(nameRank(tree.names));
}

/** Node i's own BEFORE weight (0 when the tree is not differential). */
function selfBefore(tree, i) {
  return tree.before ? tree.before[i] : 0;
}

/** Self and total weight per function; total counts only outermost occurrences, so
 * recursion is not counted twice. */
function topFunctions(tree) {
  const self = new Float64Array(tree.names.length), total = new Float64Array(tree.names.length);
  const active = new Int32Array(tree.names.length), open = [];
  for (let i = 1; i < tree.n; i++) {
    while (open.length && tree.end[open[open.length - 1]] <= i) active[tree.name[open.pop()]]--;
    const nm = tree.name[i];
    self[nm] += tree.self[i];
    if (active[nm] === 0) total[nm] += tree.total[i];
    active[nm]++;
    open.push(i);
  }
  return { self, total };
}

/** mask[name] = 1 for every name the regular expression matches. */
function matchNames(names, re) {
  const mask = new Uint8Array(names.length);
  for (let i = 0; i < names.length; i++) {
    re.lastIndex = 0;
    if (re.test(names[i])) mask[i] = 1;
  }
  return mask;
}

/** Weight under frames in mask below node `from`, nested matches counted once. */
function matchedWeight(tree, mask, from) {
  let sum = 0;
  for (let i = from + 1; i < tree.end[from];) {
    if (mask[tree.name[i]]) {
      sum += tree.total[i];
      i = tree.end[i];
    } else i++;
  }
  return sum;
}

const group = (v, digits) => v.toLocaleString('en-US', { maximumFractionDigits: digits });

function scaled(v, steps, base) {
  let i = 0;
  while (i < steps.length - 1 && Math.abs(v) >= base) {
    v /= base;
    i++;
  }
  return (i === 0 ? group(v, 3) : v.toFixed(v < 10 ? 2 : 1)) + ' ' + steps[i];
}

/** A weight in its unit: bytes in KiB/MiB/GiB, nanoseconds in us/ms/s. */
function formatWeight(v, unit, countname) {
  if (unit === 'bytes') {
    const s = scaled(v, ['B', 'KiB', 'MiB', 'GiB', 'TiB'], 1024);
    return v >= 1024 ? s + ' (' + group(v, 0) + ' bytes)' : s;
  }
  if (unit === 'ns') {
    const s = scaled(v, ['ns', 'us', 'ms', 's'], 1000);
    return v >= 1000 ? s + ' (' + group(v, 0) + ' ns)' : s;
  }
  return group(v, 3) + ' ' + countname;
}

/** A signed change in its unit: `+1.50 KiB`, `-3 samples`, `0 samples`. */
function formatChange(v, unit, countname) {
  const s = formatWeight(Math.abs(v), unit, countname);
  return v > 0 ? '+' + s : v < 0 ? '-' + s : s;
}

/** part / whole as a percentage with two decimals. */
function formatPercent(part, whole) {
  return (whole > 0 ? (100 * part) / whole : 0).toFixed(2) + '%';
}

export {
  WAKER_SEPARATOR, Tree, TreeBuilder, decodeTree, nameRank, hide, focus, callers, callees, topFunctions,
  matchNames, matchedWeight, formatWeight, formatChange, formatPercent,
};
