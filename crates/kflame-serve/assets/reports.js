/* kflame serve, kernel reports: the panel of one report and the Reports view.
 *
 * The report panel (/api/report) shows what the analyzer makes of the stored text (the
 * culprit with its confidence and doubts, the file to blame, the callers, the summary; the
 * culprit's source, fix candidates and maintainers where the server was given a kernel tree
 * and git history), the reports of the same signature in the whole history (count, hosts,
 * kernels, first and last seen, the latest of them, one click each), the flame graphs of its
 * host in the seconds before it (CPU, off-CPU where stored; the window changeable) or of the
 * report's own stack, drawn in the page's viewer, and the text as the kernel printed it.
 *
 * The Reports view (/api/reports) lists every report of the page's range and hosts grouped by
 * signature (count, hosts, kernels, first and last seen), most frequent first; a group opens
 * to its reports, and a report to its panel.
 *
 * Every piece of data reaches the DOM as text. */
import { api, button, el } from '/assets/common.js';
import { fmtTime } from '/assets/charts.js';

const MS = 1e6;
/** The windows before a report offered for its flame graphs, seconds (the server's default
 * is 60, its largest 3600). */
const WINDOWS = [10, 30, 60, 300, 900, 3600];
const PROFILE_NAMES = { cpu: 'CPU', offcpu: 'Off-CPU' };

/** `n thing(s)`. */
const count = (n, thing) => `${Number(n).toLocaleString('en-US')} ${thing}${Number(n) === 1 ? '' : 's'}`;

/** A time in ns since the epoch as `YYYY-MM-DD HH:MM:SS` UTC. */
const utc = (ns) => fmtTime(Number(ns) / MS, true);

/** A window in seconds as `60 s`, `5 min`, `1 h`. */
const windowText = (s) => (s < 120 ? s + ' s' : s < 3600 ? s / 60 + ' min' : s / 3600 + ' h');

/** `a, b and c`. */
function list(items) {
  return items.length < 2 ? items.join('') : items.slice(0, -1).join(', ') + ' and ' + items[items.length - 1];
}

/** One element per item of `items` that is not null. */
const some = (...items) => items.filter((x) => x !== null && x !== undefined && x !== false && x !== '' && x !== 0);

/** A titled block of the panel. */
const block = (cls, title, ...children) => el('div', { class: 'ks-rp-block ' + cls }, el('h4', { text: title }), ...children);

/**
 * The panel of one report. `hooks`: `show(data, title, note)` draws viewer data in the page's
 * flame graph; `open(ns, host)` opens another report; `hosts()` the page's host query
 * parameters (for the Reports view's link back); `changed()` the URL follows.
 */
class ReportPanel {
  constructor(root, hooks) {
    this.root = root;
    this.hooks = hooks;
    this.before = 60;
    this.report = null;
    this.graph = null;
    this.seq = 0;
  }

  /** Asks for report (`ns`, `host`) and shows it; resolves with its answer (throws the
   * server's error). */
  async load(ns, host) {
    const seq = ++this.seq;
    const r = await api(`/api/report?time=${ns}&host=${encodeURIComponent(host)}&before=${this.before}`);
    if (seq !== this.seq) return null;
    this.report = r;
    this.draw();
    const pick = this.graph === 'stack' ? 'stack' : this.graph && r.before[this.graph] ? this.graph : r.before.cpu ? 'cpu' : r.before.offcpu ? 'offcpu' : 'stack';
    this.showGraph(pick);
    return r;
  }

  hide() {
    this.root.hidden = true;
    this.report = null;
    ++this.seq;
  }

  /** Draws flame graph `which` (`cpu`, `offcpu` or `stack`) of the report shown. */
  showGraph(which) {
    const r = this.report;
    if (!r) return;
    this.graph = which;
    for (const b of this.root.querySelectorAll('.ks-rp-graph')) b.setAttribute('aria-pressed', String(b.dataset.graph === which));
    const when = `${utc(r.ns)} UTC on ${r.host}`;
    if (which === 'stack') {
      this.hooks.show(r.profile, `${r.kind}: ${r.title}`, `${when}: the report's stack`);
      return;
    }
    const p = r.before[which];
    this.hooks.show(p, `${r.kind}: ${r.title}`,
      `${when}: ${PROFILE_NAMES[which]} of ${r.host} in the ${windowText(r.before.seconds)} before the report, ${count(p.samples, 'sample')}`);
  }

  draw() {
    const r = this.report;
    const a = r.analysis;
    const head = el('div', { class: 'ks-rp-head' },
      el('span', { class: 'ks-rp-kind', text: r.kind }),
      el('span', { class: 'ks-rp-when', text: `${utc(r.ns)} UTC on ${r.host}` + (a && a.error.kernel ? `, kernel ${a.error.kernel}` : '') }),
      ...some(r.signature && el('code', { class: 'ks-rp-signature',
        title: 'The bug, as syzkaller titles it (search syzbot or lore for it): reports with the same one are the same bug', text: r.signature })));
    const graphs = this.graphButtons(r);
    const text = el('details', { class: 'ks-rp-text' },
      el('summary', { text: `The report as printed (${count(r.text.split('\n').length, 'line')})` }),
      el('pre', { class: 'ks-report', text: r.text }));
    if (!a) text.open = true;
    this.root.replaceChildren(head,
      el('div', { class: 'ks-rp-body' }, this.analysis(r), this.similar(r)), graphs, text);
    this.root.hidden = false;
  }

  /** The flame graph choice: CPU and off-CPU before the report (where stored), its stack; the
   * window before it. */
  graphButtons(r) {
    const b = r.before, span = windowText(b.seconds);
    const choices = [['cpu', `CPU, ${span} before`], ['offcpu', `Off-CPU, ${span} before`], ['stack', 'The report\'s stack']];
    const buttons = choices.map(([k, text]) => {
      const have = k === 'stack' || !!b[k];
      const title = k === 'stack' ? 'The call trace of the report as a flame graph'
        : have ? `Where ${r.host} spent its ${k === 'cpu' ? 'CPU time' : 'time off CPU'} in the ${span} before the report (${count(b[k].samples, 'sample')})`
        : `No ${PROFILE_NAMES[k]} profile of ${r.host} is stored for the ${span} before the report`;
      const btn = button(text, title, () => this.showGraph(k), { class: 'ks-rp-graph', 'data-graph': k });
      btn.disabled = !have;
      return btn;
    });
    const sel = el('select', { class: 'ks-rp-window', title: 'How long before the report the flame graphs cover' },
      ...WINDOWS.map((s) => el('option', { value: String(s), text: windowText(s) + ' before' })));
    sel.value = String(this.before);
    sel.addEventListener('change', async () => {
      this.before = +sel.value;
      try { await this.load(r.ns, r.host); } catch (e) { this.hooks.status('Cannot load the report: ' + e.message); }
    });
    return el('div', { class: 'ks-rp-graphs' }, el('span', { class: 'ks-rp-label', text: 'Flame graph:' }), ...buttons, sel);
  }

  /** The analyzer's answer: error, culprit, summary, resolution. */
  analysis(r) {
    const a = r.analysis;
    if (!a) {
      return block('ks-rp-analysis', 'Analysis', el('p', { class: 'ks-rp-none',
        text: r.signature === null && r.similar === null && r.analysis === null
          ? 'The analyzer finds no report it knows in the stored text (or the server explains no reports).'
          : 'No analysis.' }));
    }
    const e = a.error, c = e.culprit;
    const parts = [];
    parts.push(el('p', { class: 'ks-rp-title' }, el('b', { text: e.title })));
    if (c) {
      const where = c.function + (c.offset ? '+' + c.offset : '') + (c.module ? ` [${c.module}]` : '');
      parts.push(el('p', { class: 'ks-rp-culprit' }, 'Culprit: ', el('code', { text: where }),
        el('span', { class: 'ks-rp-conf ks-rp-' + c.level, text: ` ${c.level} confidence (${c.confidence.toFixed(2)})` }),
        ...some(c.demangled && el('span', { class: 'ks-rp-muted', text: ' ' + c.demangled }))));
      if (c.doubts.length) parts.push(el('ul', { class: 'ks-rp-doubts' }, ...c.doubts.map((d) => el('li', { text: d }))));
    } else {
      parts.push(el('p', { class: 'ks-rp-culprit', text: 'No frame of the report could be named the culprit.' }));
    }
    if (e.blame && e.blame.file) {
      parts.push(el('p', { class: 'ks-rp-blame' }, 'File to blame: ', el('code', { text: e.blame.file + (e.blame.function ? ' (' + e.blame.function + ')' : '') })));
    }
    if (e.callers.length) {
      parts.push(el('p', { class: 'ks-rp-callers' }, 'Called from: ', el('code', { text: e.callers.join(' ← ') })));
    }
    const facts = some(e.taint && 'tainted ' + e.taint, e.comm && `task ${e.comm}` + (e.pid !== null ? ` (pid ${e.pid})` : ''),
      e.cpu !== null && 'CPU ' + e.cpu);
    if (facts.length) parts.push(el('p', { class: 'ks-rp-muted', text: facts.join(', ') }));
    // The first sentence counts the reports of the text analyzed (this one): "Seen before"
    // counts the history's.
    const summary = r.similar ? a.summary.slice(1) : a.summary;
    if (summary.length) parts.push(el('ul', { class: 'ks-rp-summary' }, ...summary.map((s) => el('li', { text: s }))));
    parts.push(...this.resolution(a.resolution));
    return block('ks-rp-analysis', 'Analysis', ...parts);
  }

  /** Source, fixes, maintainers and what was not looked at. */
  resolution(res) {
    const out = [];
    const s = res.source;
    if (s) {
      const at = `${s.file}:${s.start}–${s.end}` + (s.line ? `, line ${s.line.line}` : '');
      const callers = s.callers.length
        ? el('p', { class: 'ks-rp-muted', text: `Called by ${list(s.callers.slice(0, 5).map((x) => x.function))}` +
          (s.callers_total > 5 ? ` and ${s.callers_total - 5} more` : '') })
        : null;
      out.push(block('ks-rp-source', 'Source', el('p', {}, el('code', { text: s.function }), ' ' + s.kind + ' at ', el('code', { text: at })),
        el('pre', { class: 'ks-rp-code', text: s.text }), ...some(callers),
        ...some(s.others.length && el('p', { class: 'ks-rp-muted', text: 'Other definitions: ' + s.others.join(', ') }))));
    }
    if (res.fixes) {
      const rows = res.fixes.map((f) => el('tr', {},
        el('td', {}, el('code', { text: f.id.slice(0, 12), title: f.id })),
        el('td', { text: f.date.slice(0, 10) }),
        el('td', {}, f.subject, ...some(f.fixes_trailer && el('span', { class: 'ks-rp-tag', text: 'Fixes:' }))),
        el('td', { class: 'ks-rp-muted', text: f.matched.join(', ') })));
      out.push(block('ks-rp-fixes', 'Fix candidates', rows.length
        ? el('table', { class: 'ks-rp-table' }, el('thead', {}, el('tr', {}, ...['Commit', 'Date', 'Subject', 'Matched'].map((t) => el('th', { text: t })))),
          el('tbody', {}, ...rows))
        : el('p', { class: 'ks-rp-muted', text: 'No commit of the history matches.' })));
    }
    if (res.maintainers.length) {
      out.push(block('ks-rp-maint', 'Maintainers', el('ul', {}, ...res.maintainers.slice(0, 3).map((m) => el('li', {},
        el('b', { text: m.name }), m.status ? ` (${m.status})` : '',
        ...some(m.maintainers.length && ': ' + m.maintainers.join(', '), m.lists.length && '; list ' + m.lists.join(', ')))))));
    }
    if (res.notes.length) out.push(el('ul', { class: 'ks-rp-notes' }, ...res.notes.map((n) => el('li', { text: n }))));
    return out;
  }

  /** The reports of the same signature in the history. */
  similar(r) {
    const g = r.similar;
    if (!g) return block('ks-rp-similar', 'Seen before', el('p', { class: 'ks-rp-muted', text: 'Not grouped: the report has no signature.' }));
    const others = g.count - 1;
    const line = others === 0
      ? `The only report with this signature in the history.`
      : `${count(g.count, 'report')} with this signature on ${count(g.hosts.length, 'host')}` +
        (g.kernels.length ? `, kernel${g.kernels.length === 1 ? '' : 's'} ${g.kernels.join(', ')}` : '') +
        `; first seen ${utc(g.first_seen)}, last seen ${utc(g.last_seen)} UTC.`;
    const rows = g.reports.map((x) => {
      const self = x.ns === r.ns && x.host === r.host;
      const open = button(utc(x.ns), self ? 'This report' : 'Open this report', () => this.hooks.open(x.ns, x.host), { class: 'ks-rp-open' });
      open.disabled = self;
      return el('tr', { class: self ? 'ks-rp-self' : '', 'data-host': x.host }, el('td', {}, open), el('td', { text: x.host }), el('td', { text: x.title }));
    });
    const more = g.count > g.reports.length ? el('p', { class: 'ks-rp-muted', text: `The latest ${g.reports.length} of ${g.count}.` }) : null;
    return block('ks-rp-similar', 'Seen before', el('p', { class: 'ks-rp-count', text: line }),
      el('table', { class: 'ks-rp-table' }, el('tbody', {}, ...rows)), ...some(more));
  }
}

/**
 * The Reports view: the range's reports grouped by signature. `hooks.open(ns, host)` opens a
 * report's panel.
 */
class ReportsView {
  constructor(root, hooks) {
    this.root = root;
    this.hooks = hooks;
    this.seq = 0;
    this.openGroups = new Set();
  }

  /** The groups of `range` (ms) on the hosts of `hostQuery` (`&hosts=...` or ''). */
  async load(range, hostQuery) {
    const seq = ++this.seq;
    const ns = (ms) => (BigInt(Math.round(ms)) * 1000000n).toString();
    this.root.hidden = false;
    try {
      const a = await api(`/api/reports?from=${ns(range.from)}&to=${ns(range.to)}${hostQuery}`);
      if (seq !== this.seq) return;
      this.draw(a, range);
    } catch (e) {
      if (seq === this.seq) this.root.replaceChildren(el('p', { class: 'ks-rp-none', text: 'Cannot load the reports: ' + e.message }));
    }
  }

  draw(a, range) {
    const total = a.groups.reduce((n, g) => n + g.count, 0);
    const head = el('div', { class: 'ks-rv-head' }, el('h3', { text: 'Kernel reports' }),
      el('span', { class: 'ks-rp-muted', text: total === 0
        ? `None between ${fmtTime(range.from, true)} and ${fmtTime(range.to)} UTC.`
        : `${count(total, 'report')} in ${count(a.groups.length, 'group')}, ${fmtTime(range.from, true)} – ${fmtTime(range.to)} UTC` +
          (a.explained ? ', grouped by the analyzer\'s signature' : ', grouped by kind and title') }));
    if (total === 0) { this.root.replaceChildren(head); return; }
    const rows = a.groups.flatMap((g) => {
      const opened = this.openGroups.has(g.signature);
      const toggle = button((opened ? '▾ ' : '▸ ') + g.titles[0], 'Its reports', () => {
        if (this.openGroups.has(g.signature)) this.openGroups.delete(g.signature);
        else this.openGroups.add(g.signature);
        this.draw(a, range);
      }, { class: 'ks-rv-toggle', 'aria-expanded': String(opened) });
      const row = el('tr', { class: 'ks-rv-group', 'data-signature': g.signature },
        el('td', {}, toggle, el('div', { class: 'ks-rv-sig' },
          ...some(g.signature !== g.titles[0] && el('code', { text: g.signature }),
            g.titles.length > 1 && el('span', { class: 'ks-rp-muted', text: ` also titled ${list(g.titles.slice(1))}` })))),
        el('td', { class: 'ks-num', text: String(g.count) }),
        el('td', { text: g.hosts.join(', ') }),
        el('td', { text: g.kernels.join(', ') || '—' }),
        el('td', { text: utc(g.first_seen) }),
        el('td', { text: utc(g.last_seen) }));
      if (!opened) return [row];
      const items = g.reports.map((x) => el('li', {}, button(utc(x.ns) + ' on ' + x.host, 'Open this report', () => this.hooks.open(x.ns, x.host),
        { class: 'ks-rv-report', 'data-host': x.host, 'data-ns': x.ns }), ' ', x.title));
      const more = g.count > g.reports.length ? el('li', { class: 'ks-rp-muted', text: `the latest ${g.reports.length} of ${g.count}` }) : null;
      return [row, el('tr', { class: 'ks-rv-reports' }, el('td', { colspan: '6' }, el('ul', {}, ...items, ...some(more))))];
    });
    this.root.replaceChildren(head, el('table', { class: 'ks-rp-table ks-rv-table' },
      el('thead', {}, el('tr', {}, ...['Bug', 'Count', 'Hosts', 'Kernels', 'First seen (UTC)', 'Last seen (UTC)'].map((t) => el('th', { text: t })))),
      el('tbody', {}, ...rows)));
  }

  hide() {
    ++this.seq;
    this.root.hidden = true;
  }
}

export { ReportPanel, ReportsView };
