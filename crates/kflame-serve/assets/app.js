/* kflame serve: the page. Metric charts on one time axis with a range brush, the flame graph
 * of the selected range below (the shared viewer modules, /viewer/*.js: the same files the
 * offline page inlines), event markers, comparison of two ranges, a sub-second heat map, a
 * latency heat map (latency.js).
 * Everything comes from the JSON API; every piece of data reaches the DOM as text.
 *
 * URL: ?from&to (the selection, ms since the epoch), vfrom&vto (the charts' span), kind,
 * cpu, cgroup (only that cgroup's samples), bfrom&bto (the comparison base) and bhosts (its
 * hosts, when they differ from the selection's: `*` every host), norm (1: the base scaled to the
 * selection's total, 0: not; by default when the base has hosts of its own), mode (flame |
 * diff | heat | latency | reports), report&rhost (the kernel report open: its time in ns and
 * host), lkind&llabel (the latency heat map's family and label), charts (only these charts: cpu,mem,io,...), open (the charts drawn, the
 * others being one click away under "More charts"; default: CPU, memory, IO and pressure),
 * capture (the capture shown, whose range is the selection), hosts (only these hosts, comma-
 * separated; none: every host merged, the fleet); the viewer keeps its own state (search,
 * zoom, hide/focus) in the hash.
 *
 * Kernel reports (reports.js): a report's marker opens its panel (the analyzer's answer,
 * the same bug seen before, the flame graphs of the minute before it); the Reports view lists
 * the range's reports grouped by signature.
 *
 * Hosts: with more than one host in the history, the header offers all of them (merged) or
 * a subset, chosen by name or by label (`role=db`); the choice narrows charts, events, flame
 * graph, heat map and comparison. "Hosts with this frame" breaks the frame selected in the
 * flame graph down by host (/api/frame_hosts).
 *
 * First paint: the charts are asked for first, at one point per pixel; the flame graph of
 * the selection is asked for once they are drawn, pruned to what its width can show. */
import { FlameViewer } from '/viewer/viewer.js';
import { decodeTree } from '/viewer/model.js';
import { Brush, Chart, drawAxis, fmtSpan, fmtTime, groupMetrics, PAD_LEFT, PAD_RIGHT, useCatalog } from '/assets/charts.js';
import { api, button, el } from '/assets/common.js';
import { HeatMap } from '/assets/heatmap.js';
import { LatencyPanel } from '/assets/latency.js';
import { ReportPanel, ReportsView } from '/assets/reports.js';

const root = document.getElementById('app');
const MS = 1e6;
const KIND_NAMES = { cpu: 'CPU', offcpu: 'Off-CPU', mem: 'Memory bytes', syscalls: 'Syscalls', blocked: 'Blocked tasks', locks: 'Lock waits' };
const PRESETS = [['15 min', 15 * 60e3], ['1 h', 3600e3], ['24 h', 86400e3]];
const HEAT_MAX_MS = 6 * 3600e3;
/** The charts drawn when the URL names none: the rest wait under "More charts", so that the
 * flame graph is on the first screen. */
const DEFAULT_OPEN = ['cpu', 'mem', 'io', 'psi'];

/** ms → the API's ns, exactly (ms are whole). */
const ns = (ms) => (BigInt(Math.round(ms)) * 1000000n).toString();


const S = {
  info: null, bounds: null, view: null, range: null, base: null, kind: 'cpu', cpu: '', cgroup: '', mode: 'flame',
  event: null, seq: 0, loaded: 0, last: null, follow: false, hosts: [], frame: null,
};
const D = {};

/** The page's state from the URL, within the history's bounds. */
function readUrl() {
  const p = new URLSearchParams(location.search), num = (k) => (p.has(k) && Number.isFinite(+p.get(k)) ? +p.get(k) : null);
  const b = S.bounds, span = b.to - b.from;
  const vfrom = num('vfrom'), vto = num('vto');
  S.view = vfrom !== null && vto !== null && vfrom < vto ? { from: vfrom, to: vto } : { from: Math.max(b.from, b.to - 86400e3), to: b.to };
  const from = num('from'), to = num('to');
  const vspan = S.view.to - S.view.from;
  // By default the last 15 minutes (or the last quarter of a shorter view): a flame graph of
  // a whole day of a busy machine is a large tree to send and draw before anything is chosen.
  S.range = from !== null && to !== null && from < to ? { from, to } : { from: S.view.to - Math.max(1000, Math.min(vspan / 4, 15 * 60e3)), to: S.view.to };
  const bfrom = num('bfrom'), bto = num('bto');
  S.base = bfrom !== null && bto !== null && bfrom < bto ? { from: bfrom, to: bto } : null;
  S.norm = p.has('norm') ? p.get('norm') === '1' : null;
  if (S.base && p.has('bhosts')) {
    const known = S.info.hosts, b = p.get('bhosts');
    S.base.hosts = b === '*' ? [] : [...new Set(b.split(',').filter((h) => known.includes(h)))].sort();
  }
  S.kind = KIND_NAMES[p.get('kind')] ? p.get('kind') : 'cpu';
  S.cpu = p.get('cpu') || '';
  S.cgroup = (p.get('cgroup') || '').startsWith('/') ? p.get('cgroup') : '';
  S.mode = ['flame', 'diff', 'heat', 'latency', 'reports'].includes(p.get('mode')) ? p.get('mode') : 'flame';
  S.report = /^\d+$/.test(p.get('report') || '') && p.get('rhost') ? { ns: p.get('report'), host: p.get('rhost') } : null;
  S.latChoice = { kind: p.get('lkind') || '', label: p.get('llabel') || '' };
  S.capture = num('capture');
  const keys = S.groups.map((g) => g.key);
  const open = p.has('open') ? p.get('open').split(',') : DEFAULT_OPEN;
  S.open = new Set(keys.filter((k) => open.includes(k)));
  if (!p.has('open') && S.open.size === 0) keys.slice(0, 2).forEach((k) => S.open.add(k));
  const known = S.info.hosts, chosen = (p.get('hosts') || '').split(',').filter((h) => known.includes(h));
  S.hosts = chosen.length < known.length ? [...new Set(chosen)].sort() : [];
  if (S.mode === 'diff' && !S.base) S.mode = 'flame';
}

function writeUrl() {
  const p = new URLSearchParams();
  const r = (v) => String(Math.round(v));
  p.set('from', r(S.range.from));
  p.set('to', r(S.range.to));
  p.set('vfrom', r(S.view.from));
  p.set('vto', r(S.view.to));
  if (S.kind !== 'cpu') p.set('kind', S.kind);
  if (S.cpu) p.set('cpu', S.cpu);
  if (S.cgroup) p.set('cgroup', S.cgroup);
  if (S.hosts.length) p.set('hosts', S.hosts.join(','));
  if (S.base) { p.set('bfrom', r(S.base.from)); p.set('bto', r(S.base.to)); }
  if (S.base && S.base.hosts) p.set('bhosts', S.base.hosts.length ? S.base.hosts.join(',') : '*');
  if (S.norm !== null) p.set('norm', S.norm ? '1' : '0');
  if (S.mode !== 'flame') p.set('mode', S.mode);
  if (S.capture !== null) p.set('capture', String(S.capture));
  if (S.report) { p.set('report', S.report.ns); p.set('rhost', S.report.host); }
  const lat = S.latency ? S.latency.choice : S.latChoice;
  if (lat && lat.kind) { p.set('lkind', lat.kind); if (lat.label) p.set('llabel', lat.label); }
  const open = S.groups.map((g) => g.key).filter((k) => S.open.has(k));
  if (open.join(',') !== S.groups.map((g) => g.key).filter((k) => DEFAULT_OPEN.includes(k)).join(',')) p.set('open', open.join(','));
  const charts = new URLSearchParams(location.search).get('charts');
  if (charts) p.set('charts', charts);
  history.replaceState(null, '', location.pathname + '?' + p.toString() + location.hash);
}

function buildDom() {
  D.kind = el('select', { class: 'ks-kind', title: 'Profile kind' },
    ...S.info.kinds.map((k) => el('option', { value: k, text: KIND_NAMES[k] || k })));
  D.kind.value = S.kind;
  D.kind.addEventListener('change', () => { S.kind = D.kind.value; changed(true); });
  const cpus = (S.groups.find((g) => g.key === 'cpu') || { labels: [] }).labels.filter((l) => l);
  D.cpu = el('select', { class: 'ks-cpu', title: 'CPU shown in the CPU chart' },
    el('option', { value: '', text: 'all CPUs' }), ...cpus.map((l) => el('option', { value: l, text: l })));
  D.cpu.value = S.cpu;
  D.cpu.addEventListener('change', () => { S.cpu = D.cpu.value; writeUrl(); loadCharts(); });
  D.cgroup = el('input', { class: 'ks-cgroup', type: 'text', spellcheck: 'false',
    placeholder: 'cgroup (all)', size: '14', title: 'Only the samples of this cgroup and below it, e.g. /system.slice/foo.service; empty: all' });
  D.cgroup.value = S.cgroup;
  D.cgroup.addEventListener('change', () => {
    const v = D.cgroup.value.trim();
    if (v && !v.startsWith('/')) { D.status.textContent = 'A cgroup is a path from the root of the hierarchy: /system.slice/foo.service'; return; }
    S.cgroup = v;
    changed(true);
  });
  D.rangeText = el('span', { class: 'ks-range' });
  D.downloads = el('span', { class: 'ks-downloads' }, 'Download: ',
    ...['folded', 'svg', 'html'].map((f) => el('a', { 'data-format': f, text: f === 'html' ? 'HTML' : f === 'svg' ? 'SVG' : 'folded', download: '' })));
  D.compare = button('Compare with base', 'Differential flame graph: the selection against the base range', () => { S.mode = 'diff'; changed(true); }, { class: 'ks-compare' });
  D.norm = el('input', { type: 'checkbox', class: 'ks-norm' });
  D.norm.addEventListener('change', () => { S.norm = D.norm.checked; if (S.mode === 'diff') changed(true); else writeUrl(); });
  D.normLabel = el('label', { class: 'ks-norm-label', title: 'Scale the base to the selection\'s total, so that two host sets or ranges of different sizes compare by share' },
    D.norm, ' by share');
  const toolbar = el('div', { class: 'ks-toolbar' },
    ...PRESETS.map(([name, span]) => button('Last ' + name, 'Show and select the last ' + name, () => preset(span), { class: 'ks-preset' })),
    button('All', 'The whole history', () => preset(S.bounds.to - S.bounds.from), { class: 'ks-preset' }),
    el('span', { class: 'ks-sep' }),
    button('Zoom in', 'Zoom the charts into the selection', zoomIn, { class: 'ks-zoom-in' }),
    button('Zoom out', 'Show three times as much time', zoomOut, { class: 'ks-zoom-out' }),
    el('span', { class: 'ks-sep' }), D.kind, D.cpu, D.cgroup, el('span', { class: 'ks-sep' }),
    button('Set base', 'Remember the selection as the comparison base', setBase, { class: 'ks-set-base' }),
    D.compare, D.normLabel,
    button('Heat map', 'Samples per second and offset within it (rows of at least two sampling periods)', () => { S.mode = S.mode === 'heat' ? 'flame' : 'heat'; changed(true); }, { class: 'ks-heat' }),
    button('Latency', 'Latency heat map: system calls, IO, run queue, off-CPU and lock waits per second and latency, from the stored histograms',
      () => { S.mode = S.mode === 'latency' ? 'flame' : 'latency'; changed(true); }, { class: 'ks-latency' }),
    button('Reports', 'The kernel reports of the selection, grouped by bug (the analyzer\'s signature)',
      () => { S.mode = S.mode === 'reports' ? 'flame' : 'reports'; changed(true); }, { class: 'ks-reports' }),
    button('Flame graph', 'The flame graph of the selection', () => { S.mode = 'flame'; S.event = null; changed(true); }, { class: 'ks-flame' }),
  );
  D.charts = el('div', { class: 'ks-charts' });
  D.overlay = el('div', { class: 'ks-overlay' });
  D.axis = el('canvas', { class: 'ks-axis' });
  D.events = el('div', { class: 'ks-events' });
  D.more = el('div', { class: 'ks-more' });
  D.values = el('div', { class: 'ks-values', hidden: '' });
  D.chartArea = el('div', { class: 'ks-chart-area' }, D.charts, D.overlay);
  D.panelTitle = el('h2', { class: 'ks-panel-title' });
  D.panelNote = el('div', { class: 'ks-panel-note' });
  D.report = el('section', { class: 'ks-rp-panel', hidden: '' });
  D.reports = el('section', { class: 'ks-rv-panel', hidden: '' });
  D.heat = el('div', { class: 'ks-heat-panel', hidden: '' });
  D.lat = el('section', { class: 'ks-lat-panel', hidden: '' });
  D.viewer = el('div', { class: 'ks-viewer' });
  D.status = el('div', { class: 'ks-status', role: 'status' });
  D.frameHosts = button('Hosts with this frame', 'Click a frame in the flame graph first', frameHosts, { class: 'ks-frame-hosts' });
  D.frameHosts.disabled = true;
  D.fhPanel = el('section', { class: 'ks-fh-panel', hidden: '' });
  const fleet = S.info.hosts.length > 1;
  if (!fleet) D.frameHosts.hidden = true;
  const hostsEl = fleet ? buildHostPicker() : el('span', { class: 'ks-hosts', text: S.info.hosts.join(', ') });
  root.replaceChildren(
    el('header', { class: 'ks-header' }, el('h1', { text: 'kflame serve' }), hostsEl, D.rangeText, el('a', { href: '/scatter', class: 'ks-tab-scatter', text: 'Latency scatter' })),
    toolbar, D.chartArea, D.axis, D.events, D.more, D.values, D.lat, D.reports,
    el('div', { class: 'ks-panel-head' }, D.panelTitle, D.downloads, D.frameHosts), D.panelNote, D.status, D.fhPanel, D.report, D.heat, D.viewer);
  S.charts = S.groups.map((g) => new Chart(g));
  for (const c of S.charts) c.title.addEventListener('click', () => openChart(c.group.key, false));
  D.charts.replaceChildren(...S.charts.map((c) => c.element));
  showOpen();
  D.brush = new Brush(D.overlay, (r, final) => { S.range = r; S.follow = false; changed(false, final); }, cursor);
  S.heatmap = new HeatMap(D.heat, heatSelect);
  S.reportPanel = new ReportPanel(D.report, {
    show: (data, title, note) => { show(data, title, note, true); D.downloads.hidden = true; },
    open: (ns, host) => openReport(ns, host),
    status: (text) => { D.status.textContent = text; },
  });
  S.reportsView = new ReportsView(D.reports, { open: (ns, host) => openReport(ns, host) });
  S.latency = new LatencyPanel(D.lat, {
    hosts: hq,
    kinds: S.info.kinds,
    kind: () => S.kind,
    kindName: (k) => KIND_NAMES[k || S.kind] || k,
    setKind: (k) => { S.kind = k; changed(true); },
    setRange: latencyRange,
    showProfile: showOutliers,
    changed: writeUrl,
  }, S.latChoice);
  window.addEventListener('resize', () => { drawCharts(); });
  document.addEventListener('click', (e) => {
    if (D.hostMenu && !D.hostMenu.hidden && !D.hostPicker.contains(e.target)) D.hostMenu.hidden = true;
  });
}

/** Shows the open charts and, under "More charts", a button for each other one. */
function showOpen() {
  for (const c of S.charts) c.element.hidden = !S.open.has(c.group.key);
  const closed = S.charts.filter((c) => !S.open.has(c.group.key));
  D.more.replaceChildren(...(closed.length ? [el('span', { class: 'ks-more-label', text: 'More charts:' }),
    ...closed.map((c) => button(c.group.title, 'Show the ' + c.group.title + ' chart', () => openChart(c.group.key, true),
      { class: 'ks-more-chart', 'data-chart': c.group.key }))] : []));
}

/** Opens or closes chart `key`. */
function openChart(key, open) {
  if (open) S.open.add(key);
  else S.open.delete(key);
  showOpen();
  writeUrl();
  drawCharts();
}

// ---- hosts ----------------------------------------------------------------------------------

/** A host's labels, `key=value` each (the store keeps them as `k=v,k2=v2`). */
const labelsOf = (host) => ((S.info.host_labels || {})[host] || '').split(',').map((l) => l.trim()).filter((l) => l);

/** The header's host picker: a button naming the selection and a menu with every host (a
 * checkbox each), "All hosts", and a label filter with a chip per label. */
function buildHostPicker() {
  D.hostButton = button('', 'Which hosts the charts, events and flame graph show', () => {
    D.hostMenu.hidden = !D.hostMenu.hidden;
  }, { class: 'ks-host-button', 'aria-haspopup': 'true' });
  D.hostChecks = S.info.hosts.map((h) => {
    const box = el('input', { type: 'checkbox', class: 'ks-host', value: h });
    box.addEventListener('change', hostsChecked);
    const labels = labelsOf(h);
    return el('label', { class: 'ks-host-row' }, box, ' ', el('span', { class: 'ks-host-name', text: h }),
      ...(labels.length ? [' ', el('span', { class: 'ks-host-labels', text: labels.join(', ') })] : []));
  });
  D.labelFilter = el('input', { type: 'text', class: 'ks-host-label', spellcheck: 'false', size: '16',
    placeholder: 'label: role=db', title: 'Only the hosts with every label given (key=value, space-separated); Enter applies' });
  D.labelFilter.addEventListener('change', () => chooseByLabels(D.labelFilter.value));
  const all = [...new Set(S.info.hosts.flatMap(labelsOf))].sort();
  const chips = all.map((l) => button(l, 'Only the hosts labelled ' + l, () => { D.labelFilter.value = l; chooseByLabels(l); },
    { class: 'ks-label-chip' }));
  D.hostMenu = el('div', { class: 'ks-host-menu', hidden: '' },
    el('div', { class: 'ks-host-tools' },
      button('All hosts', 'Every host, merged (the fleet)', () => chooseHosts([]), { class: 'ks-hosts-all' }), D.labelFilter),
    ...(chips.length ? [el('div', { class: 'ks-label-chips' }, ...chips)] : []),
    el('div', { class: 'ks-host-list' }, ...D.hostChecks));
  D.hostPicker = el('span', { class: 'ks-host-picker' }, D.hostButton, D.hostMenu);
  showHosts();
  return D.hostPicker;
}

/** The picker shows `S.hosts`. */
function showHosts() {
  if (!D.hostButton) return;
  const n = S.info.hosts.length, k = S.hosts.length;
  D.hostButton.textContent = k === 0 ? `All ${n} hosts ▾` : k === 1 ? `Host ${S.hosts[0]} ▾` : `${k} of ${n} hosts: ${S.hosts.join(', ')} ▾`;
  for (const row of D.hostChecks) {
    const box = row.querySelector('input');
    box.checked = k === 0 || S.hosts.includes(box.value);
  }
}

/** Shows `hosts` (none: every host) everywhere. */
function chooseHosts(hosts) {
  const set = [...new Set(hosts)].filter((h) => S.info.hosts.includes(h)).sort();
  S.hosts = set.length === S.info.hosts.length ? [] : set;
  showHosts();
  changed(true);
  loadCharts();
}

function hostsChecked() {
  const on = D.hostChecks.map((r) => r.querySelector('input')).filter((b) => b.checked).map((b) => b.value);
  if (on.length === 0) {
    D.status.textContent = 'Choose at least one host (or All hosts).';
    showHosts();
    return;
  }
  chooseHosts(on);
}

/** The hosts with every label of `text` (`role=db zone=a`); empty: every host. */
function chooseByLabels(text) {
  const want = text.split(/[\s,]+/).filter((w) => w);
  if (want.some((w) => !w.includes('='))) { D.status.textContent = 'A label is key=value, like role=db.'; return; }
  const hosts = S.info.hosts.filter((h) => want.every((w) => labelsOf(h).includes(w)));
  if (hosts.length === 0) { D.status.textContent = 'No host has the labels ' + want.join(' ') + '.'; return; }
  D.status.textContent = '';
  chooseHosts(want.length ? hosts : []);
}

/** The host selection as a query parameter. */
const hq = () => (S.hosts.length ? '&hosts=' + encodeURIComponent(S.hosts.join(',')) : '');

/** The flame graph's selected frame changed (the viewer's `kf-select`). */
function frameSelected(name) {
  // The frame the server made of narrow stacks it merged (`(12 stacks below 0.005% merged)`)
  // is in no stored stack: no host has it.
  const merged = !!name && /^\(\d+ stacks? below .* merged\)$/.test(name);
  S.frame = merged ? null : name;
  D.frameHosts.disabled = !S.frame || S.frameOff;
  D.frameHosts.title = S.frameOff ? 'Outliers: the range’s flame graph breaks its frames down by host'
    : S.frame ? 'Which hosts spend time in ' + name
    : merged ? 'Narrow stacks merged by the server: no stored stack has this frame' : 'Click a frame in the flame graph first';
}

/** The per-host breakdown of the selected frame over the selection's range and hosts: a
 * table, the hosts with most in the frame first; a host's name selects that host alone. */
async function frameHosts() {
  const frame = S.frame, r = S.range;
  if (!frame) return;
  const seq = (S.fhSeq = (S.fhSeq || 0) + 1);
  try {
    const a = await api(`/api/frame_hosts?frame=${encodeURIComponent(frame)}&kind=${S.kind}&from=${ns(r.from)}&to=${ns(r.to)}${hq()}${cgq()}`);
    if (seq !== S.fhSeq) return;
    const num = (v) => Number(v).toLocaleString('en-US');
    const pct = (v) => (v >= 10 ? v.toFixed(1) : v.toPrecision(2)) + ' %';
    const rows = a.hosts.map((h) => {
      const pick = button(h.host, 'Show ' + h.host + ' alone', () => { chooseHosts([h.host]); markHost(h.host); }, { class: 'ks-fh-host' });
      const bar = el('span', { class: 'ks-fh-bar' }, el('i', { style: `width:${Math.min(100, h.percent).toFixed(2)}%` }));
      return el('tr', { 'data-host': h.host }, el('td', {}, pick), el('td', { class: 'ks-num', text: num(h.in_frame) }),
        el('td', { class: 'ks-num', text: num(h.total) }), el('td', { class: 'ks-num' }, bar, pct(h.percent)));
    });
    const inHosts = a.hosts.filter((h) => Number(h.in_frame) > 0).length;
    const close = button('×', 'Close', () => { D.fhPanel.hidden = true; }, { class: 'ks-fh-close' });
    D.fhPanel.replaceChildren(
      el('div', { class: 'ks-fh-head' }, el('span', {},
        el('b', { text: 'Hosts with ' }), el('code', { class: 'ks-fh-frame', text: frame }),
        el('span', { class: 'ks-fh-note', text: `: ${inHosts} of ${a.hosts.length} hosts, ${num(a.in_frame)} of ${num(a.total)} (${pct(a.percent)}), ` +
          `${KIND_NAMES[a.kind] || a.kind}, ${fmtTime(a.from / MS, true)} – ${fmtTime(a.to / MS)} UTC` })), close),
      el('table', { class: 'ks-fh-table' },
        el('thead', {}, el('tr', {}, ...['Host', 'In frame', 'Total', 'Share'].map((t) => el('th', { text: t })))),
        el('tbody', {}, ...rows)));
    D.fhPanel.hidden = false;
    markHost(S.hosts.length === 1 ? S.hosts[0] : null);
  } catch (e) {
    D.status.textContent = 'Cannot break the frame down by host: ' + e.message;
  }
}

/** Marks the breakdown's row of the host shown alone. */
function markHost(host) {
  for (const tr of D.fhPanel.querySelectorAll('tbody tr')) tr.classList.toggle('ks-fh-on', tr.dataset.host === host);
}

/** The shared cursor: time and every chart's values there. */
function cursor(ms) {
  S.cursorAt = ms;
  if (ms === null) { D.values.hidden = true; return; }
  D.values.hidden = false;
  const rows = [el('b', { text: fmtTime(ms, true) + ' UTC' })];
  for (const c of S.charts.filter((c) => S.open.has(c.group.key))) {
    for (const [name, text, color] of c.valuesAt(ms)) {
      rows.push(el('span', { class: 'ks-val' }, el('i', { style: 'background:' + color }), name + ' ' + text));
    }
  }
  D.values.replaceChildren(...rows);
}

/** The selection becomes the comparison base (the panel stays as it is): its range and, in a
 * fleet, its hosts, so that choosing other hosts (another kernel's: `kernel=6.8...`) and
 * comparing sets one host set against the other. */
function setBase() {
  S.base = { ...S.range };
  if (S.info.hosts.length > 1) S.base.hosts = S.hosts.slice();
  D.brush.set(S.view, S.range, S.base);
  D.compare.disabled = false;
  writeUrl();
}

function preset(span) {
  const end = S.bounds.to;
  S.view = { from: Math.max(S.bounds.from, end - span), to: end };
  S.range = { ...S.view };
  S.follow = true;
  changed(true, true);
  loadCharts();
}

function zoomIn() {
  const pad = (S.range.to - S.range.from) * 0.1;
  S.view = { from: S.range.from - pad, to: S.range.to + pad };
  writeUrl();
  loadCharts();
}

function zoomOut() {
  const mid = (S.view.from + S.view.to) / 2, span = (S.view.to - S.view.from) * 3;
  S.view = { from: Math.max(S.bounds.from - span * 0.05, mid - span / 2), to: Math.min(S.bounds.to + span * 0.05, mid + span / 2) };
  writeUrl();
  loadCharts();
}

/** Asks for the charts of the view at `width` points: the events, the CPU chart's series (of
 * the CPU chosen) and the other charts' series (every label). A browser opens six
 * connections to a server at most: those series go in four requests of about as many series
 * each, side by side. */
function askCharts(width) {
  const q = `from=${ns(S.view.from)}&to=${ns(S.view.to)}&points=${Math.round(Math.max(100, Math.min(4000, width)))}&layout=columns`;
  const ask = (groups, label) => groups.length === 0 ? Promise.resolve({ series: [] }) :
    api(`/api/series?names=${encodeURIComponent(groups.flatMap((g) => g.names).join(','))}${label}&${q}${hq()}`);
  const bins = [[], [], [], []], sizes = [0, 0, 0, 0];
  for (const g of S.groups.filter((g) => g.key !== 'cpu')) {
    const k = sizes.indexOf(Math.min(...sizes));
    bins[k].push(g);
    sizes[k] += g.names.length;
  }
  return Promise.all([
    api(`/api/events?from=${ns(S.view.from)}&to=${ns(S.view.to)}${hq()}`),
    ask(S.groups.filter((g) => g.key === 'cpu'), '&label=' + encodeURIComponent(S.cpu)),
    ...bins.map((b) => ask(b, '')),
  ]);
}

/** Draws the charts of the view; `pending` is their answers when they were asked for already
 * (the first paint asks before the page is built). */
async function loadCharts(pending) {
  const seq = (S.chartSeq = (S.chartSeq || 0) + 1);
  D.brush.set(S.view, S.range, S.base);
  drawAxis(D.axis, S.view);
  try {
    const [events, ...answers] = await (pending || askCharts(D.charts.clientWidth - PAD_LEFT - PAD_RIGHT));
    if (seq !== S.chartSeq) return;
    const series = answers.flatMap((a) => a.series);
    // The answer keeps the order of the names asked: each chart takes its own, in order.
    S.groups.forEach((g, k) => S.charts[k].setData(series.filter((s) => g.names.includes(s.name))));
    drawCanvases();
    // The values under the cursor are the new series' (other hosts, another CPU).
    if (S.cursorAt !== null && S.cursorAt !== undefined) cursor(S.cursorAt);
    S.events = events.events;
    drawEvents();
    S.chartsLoaded = (S.chartsLoaded || 0) + 1;
    painted('chartsAt');
  } catch (e) {
    D.status.textContent = 'Cannot load the charts: ' + e.message;
  }
}

/** Every chart over the view, at the width read once (not after each other's changes). */
function drawCanvases() {
  const width = D.charts.clientWidth;
  for (const c of S.charts) if (S.open.has(c.group.key)) c.draw(S.view, width);
}

function drawCharts() {
  drawCanvases();
  drawAxis(D.axis, S.view);
  D.brush.set(S.view, S.range, S.base);
  drawEvents();
}

const EVENT_TEXT = {
  trigger: (e) => `trigger ${e.rule} (${e.metric} = ${e.value}, threshold ${e.threshold})`,
  capture: (e) => `capture #${e.id}: ${e.kind}${e.note ? ', ' + e.note : ''}`,
  report: (e) => `${e.kind}: ${e.title}`,
};

function drawEvents() {
  const w = D.events.clientWidth - PAD_LEFT - PAD_RIGHT, span = S.view.to - S.view.from;
  const X = (ms) => PAD_LEFT + ((ms - S.view.from) / span) * w;
  // A capture's time span, under its marker.
  const spans = (S.events || []).filter((e) => e.type === 'capture').flatMap((e) => {
    const a = Math.max(PAD_LEFT, X(e.time / MS)), b = Math.min(PAD_LEFT + w, X(e.end !== null ? e.end / MS : S.bounds.to));
    return b < a ? [] : [el('div', { class: 'ks-capture-span', style: `left:${a}px;width:${Math.max(1, b - a)}px` })];
  });
  let prev = -Infinity;
  D.events.replaceChildren(el('span', { class: 'ks-events-label', text: 'Events' }), ...spans, ...(S.events || []).map((e, k) => {
    // Events at the same place sit side by side.
    const x = Math.max(X(e.time / MS), prev + 14);
    prev = x;
    const m = button('', fmtTime(e.time / MS, true) + ' UTC ' + e.host + ': ' + EVENT_TEXT[e.type](e), () => openEvent(e),
      { class: 'ks-marker ks-m-' + e.type, 'data-k': String(k), 'data-type': e.type, style: `left:${x - 6}px` });
    return m;
  }));
}

async function openEvent(e) {
  S.mode = 'flame';
  if (e.type !== 'report') {
    const id = e.type === 'capture' ? e.id : ((S.events || []).find((c) => c.type === 'capture' && c.trigger === e.id) || {}).id;
    if (id === undefined) { D.status.textContent = 'Cannot open the event: this trigger started no capture'; return; }
    return openCapture(id, e);
  }
  return openReport(e.ns, e.host);
}

/** Opens the panel of the report of `host` at `ns` (ns since the epoch, as text): its
 * analysis, the same bug seen before, the flame graph of the seconds before it. */
async function openReport(ns, host) {
  S.mode = 'flame';
  S.capture = null;
  S.report = { ns, host };
  S.event = (S.events || []).find((x) => x.type === 'report' && x.ns === ns && x.host === host) || { type: 'report', ns, host };
  writeUrl();
  const seq = ++S.seq;
  D.heat.hidden = D.lat.hidden = true;
  S.reportsView.hide();
  try {
    await S.reportPanel.load(ns, host);
    if (seq === S.seq) D.report.scrollIntoView({ block: 'nearest' });
  } catch (err) {
    if (seq === S.seq) D.status.textContent = 'Cannot open the report: ' + err.message;
  }
}

/** Shows capture `id` (its marker `e`, or the trigger that started it, when known): its
 * flame graph, and its range as the selection, as if brushed: header, brush and URL. */
async function openCapture(id, e) {
  S.mode = 'flame';
  S.report = null;
  S.reportPanel.hide();
  S.reportsView.hide();
  const seq = ++S.seq;
  D.heat.hidden = D.lat.hidden = true;
  try {
    const p = await api(`/api/profile?capture=${id}&prune=${prune()}`);
    if (seq !== S.seq) return;
    // A running capture's end is open: the newest data.
    const from = Math.floor(p.info.from / MS), to = Math.max(from + 1, Math.min(Math.ceil(p.info.to / MS), S.bounds.to));
    S.range = { from, to };
    S.follow = false;
    if (from < S.view.from || to > S.view.to) {
      const pad = (to - from) * 0.1;
      S.view = { from: Math.min(S.view.from, from - pad), to: Math.max(S.view.to, to + pad) };
      loadCharts();
    }
    changed(false, false, false);
    S.capture = id;
    S.event = e || { type: 'capture', id };
    writeUrl();
    const what = e ? EVENT_TEXT[e.type](e) : `capture #${id}: ${p.info.kind}`;
    show(p, `Capture #${id} (${KIND_NAMES[p.info.kind] || p.info.kind}), ${fmtTime(from, true)} – ${fmtTime(to)} UTC (${fmtSpan(to - from)})`,
      `${what}: ${p.samples} samples at the capture's own rate` + prunedNote(p) + ' ');
    D.panelNote.append(button('Compare the selection with this capture', 'Differential flame graph: the selection against the capture',
      () => compareCapture(id), { class: 'ks-compare-capture' }));
    setDownloads(`capture=${id}`);
  } catch (err) {
    if (seq === S.seq) D.status.textContent = 'Cannot open capture #' + id + ': ' + err.message;
  }
}

/** The differential graph of the selection against capture `id`. */
async function compareCapture(id) {
  const seq = ++S.seq, r = S.range;
  try {
    const d = await api(`/api/diff?from=${ns(r.from)}&to=${ns(r.to)}&base_capture=${id}${cgq()}${hq()}`);
    if (seq !== S.seq) return;
    show(d, `Compared: ${fmtTime(r.from, true)} – ${fmtTime(r.to)} UTC against capture #${id}`,
      `${d.info.base_total} in the capture, ${d.total} in the selection; red grew, blue shrank`);
    noteChanged(d.info.changed);
  } catch (e) {
    D.status.textContent = 'Cannot compare: ' + e.message;
  }
}

/** Draws viewer data in the panel, replacing the viewer shown before; the report panel stays
 * when `report` (the flame graph is one of the report's). */
function show(data, title, note, report = false) {
  D.panelTitle.textContent = title;
  D.panelNote.textContent = note || '';
  if (!report) { S.reportPanel.hide(); S.report = null; }
  D.downloads.hidden = false;
  D.status.textContent = '';
  S.frameOff = false;
  if (S.viewer) S.viewer.destroy();
  // The viewer's zoom is a node of the tree it drew; another profile's tree has other nodes.
  // Its search and hide/focus steps are names: they stay.
  const h = new URLSearchParams(location.hash.slice(1));
  if (S.loaded > 0 && h.has('zoom')) {
    h.delete('zoom');
    history.replaceState(null, '', location.pathname + location.search + (h.toString() ? '#' + h : ''));
  }
  const box = el('div');
  D.viewer.replaceChildren(box);
  S.viewer = new FlameViewer(box, decodeTree(data.profile, data.nodes), data.profile);
  globalThis.kflameViewer = S.viewer;
  box.addEventListener('kf-select', (e) => frameSelected(e.detail.name));
  const sel = S.viewer.state.selected;
  frameSelected(sel >= 0 ? S.viewer.tree.names[sel] : null);
  S.last = { total: data.total, samples: data.samples, info: data.info };
  S.loaded++;
  painted('flameAt');
}

/** Records in `S[key]`, the first time only, when the frame drawn now is on the screen (a
 * task after the next animation frame: the canvases are rasterized by then). */
function painted(key) {
  if (S[key] !== undefined) return;
  S[key] = null;
  requestAnimationFrame(() => setTimeout(() => { S[key] = performance.now(); }, 0));
}

/** ", 1234 of 56789 stacks below 0.0083 % merged" when the server merged narrow stacks. */
function prunedNote(p) {
  const x = p.info && p.info.pruned;
  return x ? `; ${x.stacks} of ${x.of} stacks narrower than ${x.below_pct} % of the total merged into the frame above them (the folded download has them all)` : '';
}

function setDownloads(query) {
  for (const a of D.downloads.querySelectorAll('a')) {
    a.href = `/api/profile?${query}&format=${a.dataset.format}`;
  }
}

/** The state changed: URL, range text, and (debounced while dragging) the panel, unless
 * `panel` is false (the caller fills it). */
function changed(now, final, panel = true) {
  S.capture = null;
  if (S.report && S.reportPanel) { S.report = null; S.reportPanel.hide(); }
  writeUrl();
  D.kind.value = S.kind;
  D.brush.set(S.view, S.range, S.base);
  D.compare.disabled = !S.base;
  D.norm.checked = normalized();
  D.rangeText.textContent = `${fmtTime(S.range.from, true)} – ${fmtTime(S.range.to)} UTC (${fmtSpan(S.range.to - S.range.from)})`;
  const rq = `kind=${S.kind}&from=${ns(S.range.from)}&to=${ns(S.range.to)}${cgq()}${hq()}`;
  setDownloads(rq);
  clearTimeout(S.timer);
  S.event = null;
  if (!S.ready || !panel) return; // the first flame graph waits for the charts (main)
  if (now || final) loadPanel();
  else S.timer = setTimeout(loadPanel, 120);
}

/** ", hosts a, b" for a title when some hosts are chosen; ", all N hosts" in a fleet. */
function hostsText() {
  if (S.hosts.length) return (S.hosts.length === 1 ? ', host ' : ', hosts ') + S.hosts.join(', ');
  return S.info.hosts.length > 1 ? `, all ${S.info.hosts.length} hosts` : '';
}

/** Whether the base is scaled to the selection's total: as the box says, by default when the
 * base has hosts of its own. */
function normalized() {
  return S.norm !== null ? S.norm : baseHosts() !== null;
}

/** The base's hosts when they differ from the selection's (`[]`: every host), else null. */
function baseHosts() {
  const b = S.base && S.base.hosts;
  if (!b || b.join(',') === S.hosts.join(',')) return null;
  return b;
}

/** `host a` or `hosts a, b`, with the labels they share (`kernel=6.1.0-13-amd64`). */
function hostSetText(hosts) {
  const shared = labelsOf(hosts[0]).filter((l) => hosts.every((h) => labelsOf(h).includes(l)));
  return (hosts.length === 1 ? 'host ' : 'hosts ') + hosts.join(', ') + (shared.length ? ` (${shared.join(', ')})` : '');
}

/** The cgroup filter as a query parameter. */
const cgq = () => (S.cgroup ? '&cgroup=' + encodeURIComponent(S.cgroup) : '');

/** What the flame graph can show: frames under a tenth of a pixel of its width are merged by
 * the server (the viewer draws runs under a pixel as one block anyway). */
function prune() {
  const w = Math.max(200, D.viewer.clientWidth || 1000);
  return (100 / (10 * w)).toPrecision(2);
}

async function loadPanel() {
  const seq = ++S.seq, r = S.range, rq = `kind=${S.kind}&from=${ns(r.from)}&to=${ns(r.to)}${cgq()}${hq()}`;
  const what = `${KIND_NAMES[S.kind]}, ${fmtTime(r.from, true)} – ${fmtTime(r.to)} UTC (${fmtSpan(r.to - r.from)})` +
    (S.cgroup ? ', cgroup ' + S.cgroup : '') + hostsText();
  try {
    D.lat.hidden = S.mode !== 'latency';
    if (S.mode === 'latency') S.latency.load({ ...r });
    if (S.mode === 'reports') S.reportsView.load({ ...r }, hq());
    else S.reportsView.hide();
    if (S.mode === 'diff' && S.base) {
      D.heat.hidden = true;
      const bh = baseHosts(), norm = normalized();
      const d = await api(`/api/diff?${rq}&base_from=${ns(S.base.from)}&base_to=${ns(S.base.to)}` +
        (bh === null ? '' : '&base_hosts=' + encodeURIComponent(bh.join(','))) + (norm ? '&normalize=1' : ''));
      if (seq !== S.seq) return;
      const hostsNote = bh === null ? '' : ' on ' + (bh.length ? hostSetText(bh) : `all ${S.info.hosts.length} hosts`);
      show(d, 'Compared: ' + what, `against ${fmtTime(S.base.from, true)} – ${fmtTime(S.base.to)} UTC${hostsNote}: ` +
        `${d.info.base_total} before, ${d.total} after` + (norm ? ', the base scaled to the selection\'s total (by share)' : '') +
        '; red grew, blue shrank');
      noteChanged(d.info.changed);
      return;
    }
    if (S.mode === 'heat') {
      D.heat.hidden = false;
      if (r.to - r.from > HEAT_MAX_MS) {
        S.heatmap.info.textContent = 'Select at most 6 h for the heat map.';
      } else {
        const h = await api(`/api/heatmap?${rq}&row_ms=auto`);
        if (seq !== S.seq) return;
        S.heatmap.set(h);
        S.heat = h;
      }
    } else {
      D.heat.hidden = true;
    }
    const p = await api(`/api/profile?${rq}&prune=${prune()}`);
    if (seq !== S.seq) return;
    show(p, 'Flame graph: ' + what, `${p.samples} samples` + prunedNote(p));
    noteCapturesApart(p.info.captures_apart || []);
  } catch (e) {
    if (seq === S.seq) D.status.textContent = 'Cannot load the flame graph: ' + e.message;
  }
}

/** A search for one function's frames, with or without perf's `_[k]` annotations. */
const nameRegex = (name) => '^' + name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '(_\\[[kjiuw]\\])?$';

/** Under a comparison: the functions whose share changed most (as `kflame query
 * --base-label` prints them), with both sides' kernels; where each side runs one kernel and
 * the server has their git history, the commits between the two releases that changed each.
 * A click on a function finds it in the flame graph. */
function noteChanged(c) {
  if (!c || !(c.grew.length || c.shrank.length)) return;
  const k = c.kernels || { before: [], after: [] };
  const kernels = (l) => (l.length ? l.join(', ') : 'no kernel label');
  const box = el('div', { class: 'ks-changed' },
    el('div', { class: 'ks-changed-head' },
      `Changed most (share of each side): before ${kernels(k.before)}, after ${kernels(k.after)}; ` +
      `the kernel's share ${c.kernel_before.toFixed(1)}% → ${c.kernel_after.toFixed(1)}%`));
  for (const [what, list] of [['grew', c.grew], ['shrank', c.shrank]]) {
    for (const f of list) {
      const row = el('div', { class: 'ks-changed-fn', 'data-kind': what, 'data-function': f.function },
        button(f.function, 'Find it in the flame graph', () => S.viewer && S.viewer.search(nameRegex(f.function)), { class: 'ks-changed-name' }),
        ` ${what} ${f.delta > 0 ? '+' : ''}${f.delta.toFixed(2)} points (${f.total_before.toFixed(2)}% → ${f.total_after.toFixed(2)}%)`);
      const cm = f.commits;
      if (cm) {
        row.append(el('div', { class: 'ks-changed-commits' },
          `${cm.total} commit${cm.total === 1 ? '' : 's'} of ${cm.from}..${cm.to} changed it` +
          (cm.total > cm.commits.length ? `, the newest ${cm.commits.length}` : '') + (cm.total ? ':' : '')));
        for (const h of cm.commits) {
          row.append(el('div', { class: 'ks-changed-commit' }, `${h.id.slice(0, 12)} ${h.date.slice(0, 10)} ${h.subject}`));
        }
      }
      box.append(row);
    }
  }
  if (c.commits_error) box.append(el('div', { class: 'ks-changed-commits' }, 'Commits: ' + c.commits_error));
  D.panelNote.append(box);
}

/** A range's CPU profile is the always-on one: the captures of the range (their own,
 * higher rate over the same seconds) are left out. Says so, with a button for each. */
function noteCapturesApart(list) {
  if (!list.length) return;
  const ids = list.map((c) => '#' + c.id).join(', ');
  const shown = list.slice(0, 5);
  D.panelNote.append(el('div', { class: 'ks-apart' },
    `The always-on ${KIND_NAMES[S.kind]} profile; ${list.length === 1 ? '1 capture' : list.length + ' captures'} of this range (${ids}) ` +
    `sampled at ${list.length === 1 ? 'its' : 'their'} own rate and ${list.length === 1 ? 'is' : 'are'} kept apart: `,
    ...shown.map((c) => button(`Open capture #${c.id}`,
      `${fmtTime(c.start / MS, true)} – ${c.end === null ? 'running' : fmtTime(c.end / MS)} UTC on ${c.host}: its flame graph, its range selected`,
      () => openCapture(c.id, (S.events || []).find((e) => e.type === 'capture' && e.id === c.id)),
      { class: 'ks-open-capture', 'data-capture': String(c.id) })),
    list.length > shown.length ? ` and ${list.length - shown.length} more (their markers under the charts)` : ''));
}

/** The flame graph of a latency selection's outliers (viewer data of their stacks weighted by
 * duration, `title` and `note` saying so) in the panel instead of the range's, with a way
 * back. Not in the URL, as the selection is not: a reload shows the range's flame graph. */
function showOutliers(data, title, note) {
  ++S.seq; // a flame graph of the range still on its way is not drawn over it
  S.event = null;
  show({ ...data, profile: { ...data.profile, title: 'Outliers of the selection, weighted by duration', subtitle: '' } }, title, note);
  D.downloads.hidden = true; // they are the range's profile
  S.frameOff = true;
  frameSelected(null);
  D.panelNote.append(button('Back to the range’s flame graph', 'The flame graph of the selected range', () => loadPanel(),
    { class: 'ks-outliers-back' }));
  // The button was under the map: the flame graph it drew is below, maybe out of sight.
  D.panelTitle.scrollIntoView({ block: 'start' });
}

/** Cells of the latency heat map selected: their seconds become the selection, as if
 * brushed (the view widened when they leave it). */
function latencyRange(from, to) {
  S.range = { from, to };
  S.follow = false;
  if (from < S.view.from || to > S.view.to) {
    const pad = (to - from) * 0.1;
    S.view = { from: Math.min(S.view.from, from - pad), to: Math.max(S.view.to, to + pad) };
    loadCharts();
  }
  changed(true);
}

/** A heat map rectangle: the flame graph of exactly those samples. */
async function heatSelect({ c0, c1, r0, r1 }) {
  const h = S.heat, seq = ++S.seq;
  if (!h) return;
  const from = BigInt(h.start) + BigInt(c0) * 1000000000n, to = BigInt(h.start) + BigInt(c1 + 1) * 1000000000n;
  const offs = `offset_from_ms=${r0 * h.row_ms}&offset_to_ms=${(r1 + 1) * h.row_ms}`;
  const q = `kind=${S.kind}&from=${from}&to=${to}&${offs}${cgq()}${hq()}`;
  try {
    const p = await api(`/api/profile?${q}`);
    if (seq !== S.seq) return;
    show(p, `Heat map cells: seconds ${c0}–${c1}, ${r0 * h.row_ms}–${(r1 + 1) * h.row_ms} ms`, `${p.samples} samples`);
    setDownloads(q);
  } catch (e) {
    D.status.textContent = 'Cannot load the cells: ' + e.message;
  }
}

/** --live: every second the newest time and the history's version. Following the present,
 * the view and the selection move with the newest time; data written inside them without
 * moving it (a bucket is stored after its end) is reloaded at most every 5 s. */
function live() {
  const src = new EventSource('/api/live');
  src.addEventListener('tick', (m) => {
    const { to, version } = JSON.parse(m.data);
    if (to === null) return;
    const end = Math.floor(to / MS) + 1, shift = end - S.bounds.to;
    const written = S.version !== undefined && version !== S.version;
    S.version = version;
    if (shift > 0) S.bounds.to = end;
    if (!S.follow || !(shift > 0 || written)) return;
    const now = performance.now();
    if (shift <= 0 && now - (S.liveAt || 0) < 5000) { S.version = ''; return; }
    S.liveAt = now;
    if (shift > 0) {
      S.view = { from: S.view.from + shift, to: S.view.to + shift };
      S.range = { from: S.range.from + shift, to: S.range.to + shift };
    }
    changed(false);
    loadCharts();
  });
}

async function main() {
  // The token came in the address; the server set its cookie and redirected. If a proxy
  // kept it in the address, drop it from the history.
  const p = new URLSearchParams(location.search);
  if (p.has('token')) { p.delete('token'); history.replaceState(null, '', location.pathname + '?' + p + location.hash); }
  S.info = await api('/api/info');
  if (S.info.from === null) { root.textContent = 'The history is empty: nothing was recorded yet.'; return; }
  S.bounds = { from: Math.floor(S.info.from / MS), to: Math.floor(S.info.to / MS) + 1 };
  useCatalog(S.info);
  S.groups = groupMetrics(S.info.metrics);
  const only = (new URLSearchParams(location.search).get('charts') || '').split(',').filter((k) => k);
  if (only.length) S.groups = S.groups.filter((g) => only.includes(g.key));
  readUrl();
  S.follow = S.info.live && S.range.to >= S.bounds.to;
  // The charts are asked for before the page is built (its first layout takes a while in a
  // fresh browser): as wide as the window less the page's padding, which is what they get.
  const first = askCharts(window.innerWidth - 24 - PAD_LEFT - PAD_RIGHT);
  first.catch(() => {}); // reported by loadCharts
  const capture = S.capture, report = S.report;
  buildDom();
  changed(true);
  await loadCharts(first);
  S.ready = true;
  if (capture !== null) openCapture(capture, (S.events || []).find((e) => e.type === 'capture' && e.id === capture));
  else if (report) openReport(report.ns, report.host);
  else loadPanel();
  if (S.info.live) live();
}

globalThis.kflameServe = { S, D, ns };
main().catch((e) => { root.textContent = 'kflame serve: ' + e.message; });
