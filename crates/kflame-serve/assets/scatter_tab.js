/* kflame serve, latency scatter tab: the captures that stored per-event records, and the
 * scatter view (the shared /viewer/scatter.js, which the offline `kflame scatter` page
 * inlines) of the one chosen (?capture=ID). Every piece of data reaches the DOM as text. */
import { startScatter } from '/viewer/scatter.js';
import { api, el } from '/assets/common.js';

const root = document.getElementById('scatter-tab');

const fmtTime = (ns) => new Date(Number(BigInt(ns) / 1000000n)).toISOString().replace('T', ' ').replace('Z', ' UTC');

/** `09:43:25.125405824` (UTC) of a time in seconds since the epoch with 9 decimals (the
 * scatter's `meta.t0` and its events' start), exactly; null for anything else. */
function clockOf(seconds) {
  const m = /^(\d+)\.(\d{9})$/.exec(seconds);
  if (!m) return null;
  const iso = new Date(Number(m[1]) * 1000).toISOString();
  return { date: iso.slice(0, 10), clock: iso.slice(11, 19) + '.' + m[2] };
}

/** The scatter view counts time in seconds after the capture's first event, and names an
 * event's start in seconds since the epoch: here, where times are UTC, the first event's
 * date and clock time are said above the plot, and an event's start is shown as a UTC
 * clock time (the offset kept beside it). */
function readableTimes(view, meta) {
  const first = clockOf(meta.t0 || '');
  if (!first) return;
  view.before(el('p', { class: 'sc-time-origin', style: 'margin: 6px 10px; color: #444',
    text: `Times: seconds after the first event, ${first.date} ${first.clock} UTC (the plot's 0 s).` }));
  const fix = () => {
    for (const dd of view.querySelectorAll('dd.sc-start:not([data-utc])')) {
      const m = /^(\d+\.\d{9}) s \((.*) after the first event\)$/.exec(dd.textContent);
      const t = m && clockOf(m[1]);
      if (!t) continue;
      dd.dataset.utc = m[1];
      dd.textContent = `${t.clock} UTC, ${t.date} (${m[2]} after the first event)`;
    }
  };
  new MutationObserver(fix).observe(view, { childList: true, subtree: true });
}

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
  if (data.meta.timed) readableTimes(view, data.meta);
}

main().catch((e) => {
  root.append(el('p', { class: 'sc-error', text: 'Cannot load: ' + e.message }));
});
