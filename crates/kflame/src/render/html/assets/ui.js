/* kflame viewer, part 4: UI pieces the viewer is made of: DOM building, the top-functions
 * table and the URL state. Exports {el, TopTable, UrlState}.
 */
import { formatPercent } from './model.js';

const TOP_ROWS = 300;

/** A DOM element with attributes and children (strings become text nodes, never markup). */
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

/** The functions of a tree by self or total weight; onPick(nameIndex) on a row click,
 * onSort(key) on a header click. */
class TopTable {
  constructor(onPick, onSort) {
    this.tbody = el('tbody');
    this.thead = el('thead', {}, el('tr', {}, el('th', { text: 'Function' }),
      el('th', { 'data-sort': 'self', text: 'Self' }), el('th', { text: 'Self %' }),
      el('th', { 'data-sort': 'total', text: 'Total' }), el('th', { text: 'Total %' })));
    this.element = el('div', { class: 'kf-top' }, el('table', {}, this.thead, this.tbody));
    this.tbody.addEventListener('click', (e) => {
      const tr = e.target.closest('tr[data-name]');
      if (tr) onPick(Number(tr.dataset.name));
    });
    this.thead.addEventListener('click', (e) => {
      const th = e.target.closest('th[data-sort]');
      if (th) onSort(th.dataset.sort);
    });
  }

  /** Shows the heaviest TOP_ROWS functions of `top` (from model.js topFunctions) by `key`. */
  render(tree, top, key, fmt) {
    const total = tree.total[0], order = [];
    for (let nm = 0; nm < tree.names.length; nm++) if (top.total[nm] > 0) order.push(nm);
    order.sort((a, b) => top[key][b] - top[key][a] || top.total[b] - top.total[a] || a - b);
    const rows = order.slice(0, TOP_ROWS).map((nm) => el('tr', { 'data-name': String(nm) },
      el('td', { class: 'kf-fn', text: tree.names[nm] }),
      el('td', { text: fmt(top.self[nm]) }), el('td', { text: formatPercent(top.self[nm], total) }),
      el('td', { text: fmt(top.total[nm]) }), el('td', { text: formatPercent(top.total[nm], total) })));
    this.tbody.replaceChildren(...rows);
    for (const th of this.thead.querySelectorAll('th[data-sort]')) th.classList.toggle('kf-sorted', th.dataset.sort === key);
  }
}

/** The viewer state in the URL hash: view, zoom, search, ci, inverted, heavy, fn, tx. */
const UrlState = {
  /** The hash (with '#', or '') for a state; defaults are left out. */
  encode(s, defaults, fnName, transforms) {
    const p = new URLSearchParams();
    if (s.view !== 'flame') p.set('view', s.view);
    if (s.zoom > 0) p.set('zoom', String(s.zoom));
    if (s.search) p.set('search', s.search);
    if (s.ci) p.set('ci', '1');
    if (s.inverted !== defaults.inverted) p.set('inverted', s.inverted ? '1' : '0');
    if (s.heavy) p.set('heavy', '1');
    if (fnName !== null) p.set('fn', fnName);
    if (transforms.length) p.set('tx', JSON.stringify(transforms));
    const text = p.toString();
    return text ? '#' + text : '';
  },

  /** The state a hash asks for; anything malformed falls back to the default. */
  decode(hash, defaults) {
    const p = new URLSearchParams(hash.replace(/^#/, ''));
    const zoom = Number(p.get('zoom') || 0);
    return {
      view: ['flame', 'sandwich', 'top'].includes(p.get('view')) ? p.get('view') : 'flame',
      zoom: Number.isInteger(zoom) && zoom > 0 ? zoom : 0,
      search: p.get('search') || '',
      ci: p.get('ci') === '1',
      inverted: p.has('inverted') ? p.get('inverted') === '1' : defaults.inverted,
      heavy: p.get('heavy') === '1',
      fn: p.get('fn'),
      transforms: UrlState.transforms(p.get('tx')),
    };
  },

  /** Valid hide/focus steps of a `tx` value. */
  transforms(json) {
    let list;
    try {
      list = JSON.parse(json || '[]');
    } catch (e) {
      return [];
    }
    if (!Array.isArray(list)) return [];
    return list.filter((t) => t && (t.kind === 'hide' || t.kind === 'focus') && typeof t.value === 'string')
      .map((t) => ({ kind: t.kind, how: t.how === 'name' ? 'name' : 'regex', value: t.value, ci: !!t.ci }));
  },
};

export { el, TopTable, UrlState };
