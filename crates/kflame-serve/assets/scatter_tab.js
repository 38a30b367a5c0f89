/* kflame serve, latency scatter tab: the system-call outliers the watcher keeps (always on)
 * over a range of the history, the captures that stored per-event records, and the scatter
 * view (the shared /viewer/scatter.js, which the offline `kflame scatter` page inlines) of
 * the one chosen (?kind=syscall&from=T&to=T[&host=H], or ?capture=ID). Every piece of data
 * reaches the DOM as text. */
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

/** The outliers' entry: a range (the URL's, else the last hour) and a button that opens
 * their scatter; the range goes into the URL (`form-action 'none'`: no form is submitted). */
/** The families whose outliers the watcher keeps: `kind=` and what the page calls them. */
const FAMILIES = [['syscall', 'system calls'], ['lock', 'kernel lock waits'], ['offcpu', 'blocks in D'],
  ['runq', 'run-queue waits'], ['bio', 'block IOs']];

function outliersEntry(params, chosen) {
  const kind = el('select', { name: 'kind', class: 'sc-kind' },
    ...FAMILIES.map(([k, name]) => el('option', { value: k, text: name })));
  kind.value = FAMILIES.some(([k]) => k === params.get('kind')) ? params.get('kind') : 'syscall';
  const from = el('input', { name: 'from', class: 'sc-from', size: '26', value: params.get('from') || '-1h' });
  const to = el('input', { name: 'to', class: 'sc-to', size: '26', value: params.get('to') || 'now' });
  const host = params.get('host') || '';
  const form = el('form', { class: 'sc-range', style: 'margin: 4px 0' },
    el('label', { text: 'of ' }, kind), ' ', el('label', { text: 'from ' }, from), ' ', el('label', { text: 'to ' }, to), ' ',
    el('button', { type: 'submit', class: 'sc-open-outliers', text: 'open' }));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams({ kind: kind.value, from: from.value.trim(), to: to.value.trim() });
    if (host) q.set('host', host);
    location.assign('/scatter?' + q);
  });
  const section = el('section', { class: 'sc-history-outliers', style: 'margin: 6px 10px' },
    el('h2', { style: 'font-size: 1.1em; margin: 6px 0', text: 'Outliers' + (host ? ' on ' + host : '') }),
    el('p', { style: 'margin: 2px 0; color: #444', text: 'The system calls and waits over their threshold that ' +
      'kflame watch keeps with their stacks, always on, over any range (RFC 3339 times, now, or relative: -1h, -10m).' }),
    form);
  if (chosen) section.setAttribute('aria-current', 'true');
  return section;
}

async function main() {
  const params = new URLSearchParams(location.search);
  const chosen = params.get('capture');
  const family = FAMILIES.find(([k]) => k === params.get('kind'));
  const outliers = chosen === null && family !== undefined;
  const list = el('table', { class: 'sc-captures' }, el('thead', {}, el('tr', {},
    ...['capture', 'host', 'kind', 'start', 'events', ''].map((h) => el('th', { text: h })))));
  const body = el('tbody', {});
  list.append(body);
  const view = el('div', { class: 'sc-scatter-view' });
  root.replaceChildren(el('header', { class: 'sc-header' }, el('h1', { text: 'kflame serve: latency scatter' }), ' ',
    el('a', { href: '/', text: '← metrics and flame graphs' })), outliersEntry(params, outliers),
    el('h2', { style: 'font-size: 1.1em; margin: 10px 10px 4px', text: 'Captures' }), list, view);
  if (outliers) {
    const q = new URLSearchParams({ kind: family[0], from: params.get('from') || '-1h', to: params.get('to') || 'now' });
    if (params.get('host')) q.set('host', params.get('host'));
    view.textContent = 'Loading the outliers…';
    const data = await api('/api/scatter?' + q);
    if (!data.meta.count) {
      view.textContent = `No outliers of ${family[1]} in this range.`;
      return;
    }
    startScatter(view, data.meta, data.columns);
    if (data.meta.timed) readableTimes(view, data.meta);
  }
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
  if (!captures.length && !outliers) view.textContent = 'No captures in this history: kflame watch stores them when a trigger rule fires.';
  if (chosen === null) return;
  view.textContent = 'Loading capture ' + chosen + '…';
  const data = await api('/api/scatter?capture=' + encodeURIComponent(chosen));
  startScatter(view, data.meta, data.columns);
  if (data.meta.timed) readableTimes(view, data.meta);
}

main().catch((e) => {
  root.append(el('p', { class: 'sc-error', text: 'Cannot load: ' + e.message }));
});
