// Kernel reports in `kflame serve`: the report panel and the Reports view, on a history written
// by the kflame-serve crate's `history` example with `--reports`: 15 minutes of real stacks on
// `testhost`, a report with markup in its title, and a real KernelCI WARNING (`apply_returns`,
// 5.10.219-rc1) stored on `otherhost` at 90 s and on `testhost` at 150 s. What the panel shows
// is checked against `kflame analyze --json` run on the text the page shows, and its flame
// graph against the server's folded profile of the same window.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, kflame, launchBrowser, scratch, screenshot, startServe, stopServe, writeText } from './lib.mjs';

const TOKEN = 'browser-reports-token-7';
const T0 = 1764000000000; // ms: the history's start
const SEC = 1000000000n;
const WARNING_NS = (BigInt(T0) * 1000000n + 150n * SEC).toString();
const EARLIER_NS = (BigInt(T0) * 1000000n + 90n * SEC).toString();
let browser, served, base, dir;

before(async () => {
  dir = scratch();
  execFileSync('cargo', ['build', '-q', '-p', 'kflame-serve', '--example', 'history'], { cwd: ROOT, stdio: 'inherit' });
  const db = join(dir, 'history.db');
  execFileSync(join(ROOT, 'target/debug/examples/history'), ['--reports', db, '900']);
  served = await startServe(['--db', db, '--token-file', writeText(dir, 'token', TOKEN + '\n')]);
  base = served.base;
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  if (served) await stopServe(served, 'kflame serve did not stop cleanly on SIGTERM');
});

async function open(query) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const problems = [];
  page.on('pageerror', (e) => problems.push('error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  await page.goto(base + '?token=' + TOKEN + query);
  await page.waitForFunction(() => globalThis.kflameServe && kflameServe.S.chartsLoaded > 0 && kflameServe.S.loaded > 0, null, { timeout: 15000 });
  return { page, problems };
}

/** Waits until the report panel shows report (`ns`, `host`) and its flame graph is drawn. */
async function panelShows(page, ns, host) {
  await page.waitForFunction(([n, h]) => {
    const p = kflameServe.S.reportPanel;
    return p.report && p.report.ns === n && p.report.host === h && !kflameServe.D.report.hidden;
  }, [ns, host], { timeout: 15000 });
}

/** The total of the server's folded CPU profile of `host` from `fromNs` to `toNs`. */
async function foldedTotal(page, host, fromNs, toNs) {
  const text = await page.evaluate(async (q) => (await fetch('/api/profile?' + q)).text(),
    `kind=cpu&from=${fromNs}&to=${toNs}&host=${host}&format=folded`);
  return text.split('\n').filter((l) => l && !l.startsWith('#')).reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

test('a report\'s panel: the analyzer\'s answer, the same bug seen before, the flame graph of the minute before', async () => {
  const { page, problems } = await open(`&vfrom=${T0}&vto=${T0 + 300000}&from=${T0}&to=${T0 + 200000}`);
  const marker = page.locator('.ks-m-report[title*="apply_returns"][title*="testhost"]');
  assert.equal(await marker.count(), 1);
  await marker.click();
  await panelShows(page, WARNING_NS, 'testhost');

  // The analysis is what `kflame analyze --json` gives for the text the page shows.
  const text = await page.locator('.ks-rp-panel pre.ks-report').textContent();
  const cli = JSON.parse(kflame(['analyze', '--json', writeText(dir, 'warning.txt', text + '\n')]));
  const g = cli.groups[0], c = g.error.culprit;
  assert.equal(c.function, 'apply_returns');
  assert.equal(await page.locator('.ks-rp-signature').textContent(), g.signature);
  assert.equal(await page.locator('.ks-rp-culprit code').textContent(), `${c.function}+${c.offset}`);
  assert.match(await page.locator('.ks-rp-culprit').textContent(), new RegExp(`${c.level} confidence \\(${c.confidence.toFixed(2)}\\)`));
  assert.equal(await page.locator('.ks-rp-blame code').textContent(), g.error.blame.file);
  assert.equal(await page.locator('.ks-rp-callers code').textContent(), g.error.callers.join(' ← '));
  assert.equal(await page.locator('.ks-rp-analysis .ks-rp-title').textContent(), g.error.title);
  assert.equal(await page.locator('.ks-rp-when').textContent(), `2025-11-24 16:02:30 UTC on testhost, kernel ${g.error.kernel}`);
  // The summary's sentences but the first, which counts the reports of the text analyzed
  // (the page counts the history's under "Seen before").
  assert.match(g.summary[0], /was reported once/);
  assert.deepEqual(await page.locator('.ks-rp-summary li').allTextContents(), g.summary.slice(1));
  assert.deepEqual(await page.locator('.ks-rp-notes li').allTextContents(), g.resolution.notes);

  // Seen before: both hosts, the kernel, first and last seen; this report marked.
  assert.equal(await page.locator('.ks-rp-count').textContent(),
    '2 reports with this signature on 2 hosts, kernel 5.10.219-rc1; first seen 2025-11-24 16:01:30, last seen 2025-11-24 16:02:30 UTC.');
  assert.deepEqual(await page.locator('.ks-rp-similar tr').evaluateAll((rs) => rs.map((r) => [r.dataset.host, r.className])),
    [['testhost', 'ks-rp-self'], ['otherhost', '']]);

  // The flame graph is the CPU profile of testhost in the 60 s before the report.
  const cpu60 = await foldedTotal(page, 'testhost', (BigInt(WARNING_NS) - 60n * SEC).toString(), WARNING_NS);
  assert.ok(cpu60 > 0);
  assert.equal(await page.evaluate(() => kflameViewer.tree.total[0]), cpu60);
  assert.equal(await page.locator('.ks-rp-graph[aria-pressed="true"]').getAttribute('data-graph'), 'cpu');
  assert.match(await page.locator('.ks-panel-note').textContent(), /CPU of testhost in the 60 s before the report, [\d,]+ samples/);
  assert.equal(await page.locator('.ks-rp-graph[data-graph="offcpu"]').isDisabled(), true, 'no off-CPU profile is stored');
  await screenshot(page, 'serve-report-panel');

  // Another window: 10 s.
  await page.selectOption('.ks-rp-window', '10');
  const cpu10 = await foldedTotal(page, 'testhost', (BigInt(WARNING_NS) - 10n * SEC).toString(), WARNING_NS);
  await page.waitForFunction((n) => kflameViewer.tree.total[0] === n, cpu10, { timeout: 10000 });
  assert.ok(cpu10 < cpu60);

  // The report's own stack.
  await page.click('.ks-rp-graph[data-graph="stack"]');
  assert.deepEqual(await page.evaluate(() => kflameViewer.tree.names.slice().sort()),
    ['alternative_instructions', 'arch_cpu_finalize_init', 'secondary_startup_64_no_verify', 'start_kernel']);

  // The URL reopens the report.
  const url = new URL(page.url()).searchParams;
  assert.deepEqual([url.get('report'), url.get('rhost')], [WARNING_NS, 'testhost']);
  await page.reload();
  await page.waitForFunction(() => globalThis.kflameServe && kflameServe.S.chartsLoaded > 0, null, { timeout: 15000 });
  await panelShows(page, WARNING_NS, 'testhost');

  // The same bug on the other host, one click away: no profile of otherhost is stored, so its
  // flame graph is the report's stack.
  await page.click('.ks-rp-similar tr[data-host="otherhost"] .ks-rp-open');
  await panelShows(page, EARLIER_NS, 'otherhost');
  assert.equal(await page.locator('.ks-rp-graph[data-graph="cpu"]').isDisabled(), true);
  assert.equal(await page.locator('.ks-rp-graph[aria-pressed="true"]').getAttribute('data-graph'), 'stack');
  assert.deepEqual(await page.locator('.ks-rp-similar tr').evaluateAll((rs) => rs.map((r) => [r.dataset.host, r.className])),
    [['testhost', ''], ['otherhost', 'ks-rp-self']]);

  // Brushing another range closes the panel and shows that range's flame graph.
  await page.click('.ks-flame');
  await page.waitForFunction(() => kflameServe.D.report.hidden && kflameServe.S.last.info.kind !== 'report', null, { timeout: 10000 });
  assert.equal(new URL(page.url()).searchParams.get('report'), null);
  assert.deepEqual(problems, []);
  await page.close();
});

test('the Reports view groups the range\'s reports by bug, one click to each report', async () => {
  const { page, problems } = await open(`&vfrom=${T0}&vto=${T0 + 300000}&from=${T0}&to=${T0 + 200000}&mode=reports`);
  await page.waitForSelector('.ks-rv-group', { timeout: 10000 });
  const groups = await page.locator('.ks-rv-group').evaluateAll((rs) => rs.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)));
  // The WARNING, twice on two hosts, first; the report with markup once.
  assert.equal(groups.length, 2);
  assert.equal(groups[0][0], '▸ WARNING in apply_returns');
  assert.deepEqual(groups[0].slice(1), ['2', 'otherhost, testhost', '5.10.219-rc1', '2025-11-24 16:01:30', '2025-11-24 16:02:30']);
  assert.equal(groups[1][1], '1');
  assert.match(await page.locator('.ks-rv-head').textContent(), /3 reports in 2 groups/);
  // Markup in a title is text.
  assert.equal(await page.locator('.ks-rv-panel script, .ks-rv-panel b b').count(), 0);
  await page.click('.ks-rv-group >> nth=0 >> .ks-rv-toggle');
  const listed = await page.locator('.ks-rv-report').evaluateAll((bs) => bs.map((b) => [b.dataset.ns, b.dataset.host]));
  assert.deepEqual(listed, [[WARNING_NS, 'testhost'], [EARLIER_NS, 'otherhost']]);
  await screenshot(page, 'serve-reports-view');
  await page.click(`.ks-rv-report[data-host="otherhost"]`);
  await panelShows(page, EARLIER_NS, 'otherhost');
  assert.equal(await page.locator('.ks-rv-panel').isHidden(), true);

  // A range without the WARNING: one group; a host chosen: only its reports.
  const a = await page.evaluate(async (q) => (await fetch('/api/reports?' + q)).json(),
    `from=${BigInt(T0) * 1000000n + 100n * SEC}&to=${BigInt(T0) * 1000000n + 140n * SEC}`);
  assert.deepEqual(a.groups.map((g) => g.count), [1]);
  const b = await page.evaluate(async (q) => (await fetch('/api/reports?' + q)).json(),
    `from=${BigInt(T0) * 1000000n}&to=${BigInt(T0) * 1000000n + 200n * SEC}&hosts=otherhost`);
  assert.deepEqual(b.groups.map((g) => [g.signature, g.count]), [['WARNING in apply_returns', 1]]);
  assert.deepEqual(problems, []);
  await page.close();
});
