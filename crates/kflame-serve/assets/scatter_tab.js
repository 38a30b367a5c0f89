/* kflame serve, latency scatter tab: the captures that stored per-event records, and the
 * scatter view (the shared /viewer/scatter.js, which the offline `kflame scatter` page
 * inlines) of the one chosen (?capture=ID). Every piece of data reaches the DOM as text. */
import { startScatter } from '/viewer/scatter.js';
import { el } from '/viewer/ui.js';

const root = document.getElementById('scatter-tab');

async function api(path) {
  const r = await fetch(path, { credentials: 'same-origin' });
  const body = await r.json().catch(() => ({ error: 'HTTP ' + r.status + ' ' + r.statusText }));
  if (!r.ok) throw new Error(body.error || 'HTTP ' + r.status);
  return body;
}

const fmtTime = (ns) => new Date(Number(BigInt(ns) / 1000000n)).toISOString().replace('T', ' ').replace('Z', ' UTC');

async function main() {
  const chosen = new URLSearchParams(location.search).get('capture');
  const list = el('table', { class: 'sc-captures' }, el('thead', {}, el('tr', {},
    ...['capture', 'host', 'kind', 'start', 'events', ''].map((h) => el('th', { text: h })))));
  const body = el('tbody', {});
  list.append(body);
  const view = el('div', { class: 'sc-scatter-view' });
  root.replaceChildren(el('header', { class: 'sc-header' }, el('h1', { text: 'kflame serve: latency scatter' }), ' ',
    el('a', { href: '/', text: '← metrics and flame graphs' })), list, view);
  const { captures } = await api('/api/scatter/captures');
  for (const c of captures) {
    const open = c.events > 0
      ? el('a', { href: '/scatter?capture=' + c.id, class: 'sc-open', 'data-capture': String(c.id), text: 'open' })
      : el('span', { text: 'no per-event records' });
    const row = el('tr', {}, el('td', { text: String(c.id) }), el('td', { text: c.host }), el('td', { text: c.kind }),
      el('td', { text: fmtTime(c.time) }), el('td', { class: 'sc-events', text: String(c.events) }), el('td', {}, open));
    if (String(c.id) === chosen) row.setAttribute('aria-current', 'true');
    body.append(row);
  }
  if (!captures.length) view.textContent = 'No captures in this history: kflame watch stores them when a trigger rule fires.';
  if (chosen === null) return;
  view.textContent = 'Loading capture ' + chosen + '…';
  const data = await api('/api/scatter?capture=' + encodeURIComponent(chosen));
  startScatter(view, data.meta, data.columns);
}

main().catch((e) => {
  root.append(el('p', { class: 'sc-error', text: 'Cannot load: ' + e.message }));
});
