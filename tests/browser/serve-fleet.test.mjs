// `kflame serve` on a fleet's history: three hosts (db-1, db-2, web-1) written by the
// kflame-serve crate's `history` example (`--fleet`: each host its own mix and amount of
// real stacks; only web-1 runs nginx's ngx_http_process_request). A subset of hosts narrows
// the flame graph to exactly their samples; a clicked frame's per-host breakdown matches the
// API's; labels (which a SQLite history does not keep: the test adds them to /api/info, as a
// ClickHouse store answers) select hosts too.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, launchBrowser, scratch, screenshot, startServe, stopServe, writeText } from './lib.mjs';

const TOKEN = 'browser-fleet-token-7';
const WEB_FRAME = 'ngx_http_process_request';
const LABELS = { 'db-1': 'role=db,zone=a', 'db-2': 'role=db,zone=b', 'web-1': 'role=web,zone=a' };
let browser, served, base;

before(async () => {
  const dir = scratch();
  execFileSync('cargo', ['build', '-q', '-p', 'kflame-serve', '--example', 'history'], { cwd: ROOT, stdio: 'inherit' });
  const db = join(dir, 'fleet.db');
  execFileSync(join(ROOT, 'target/debug/examples/history'), ['--fleet', db, '120']);
  served = await startServe(['--db', db, '--token-file', writeText(dir, 'token', TOKEN)]);
  base = served.base;
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  if (served) await stopServe(served, 'kflame serve did not stop cleanly on SIGTERM');
});

/** Opens the page; every error and dialog is collected. With `labels`, /api/info answers
 * with the fleet's labels. */
async function open(query = '', labels = false) {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  page.on('dialog', (d) => { problems.push('dialog: ' + d.message()); d.dismiss(); });
  if (labels) {
    await page.route('**/api/info', async (route) => {
      const r = await route.fetch();
      const info = await r.json();
      route.fulfill({ response: r, json: { ...info, host_labels: LABELS } });
    });
  }
  await page.goto(base + '?token=' + TOKEN + query);
  await loadedAfter(page, 0);
  return { page, problems };
}

const loads = (page) => page.evaluate(() => globalThis.kflameServe ? kflameServe.S.loaded : 0);

/** Waits for a flame graph drawn after `n` loads, with the charts there. */
async function loadedAfter(page, n) {
  await page.waitForFunction((m) => globalThis.kflameServe && kflameServe.S.loaded > m && kflameServe.S.chartsLoaded > 0 &&
    globalThis.kflameViewer, n, { timeout: 20000 });
}

/** The API's total of the selected range for `hosts` (none: every host), host by host
 * through `host=` and summed, so that the page's `hosts=` is checked against another path. */
function apiTotal(page, hosts) {
  return page.evaluate(async (hs) => {
    const { S, ns } = kflameServe;
    const q = `kind=cpu&from=${ns(S.range.from)}&to=${ns(S.range.to)}`;
    let sum = 0;
    for (const h of hs.length ? hs : S.info.hosts) {
      sum += (await (await fetch(`/api/profile?${q}&host=${encodeURIComponent(h)}`)).json()).total;
    }
    return sum;
  }, hosts);
}

const viewerTotal = (page) => page.evaluate(() => kflameViewer.tree.total[0]);

test('a subset of hosts narrows the flame graph; a frame\'s hosts come from the breakdown', async () => {
  const { page, problems } = await open();
  // Every host merged: the fleet.
  assert.match(await page.locator('.ks-host-button').innerText(), /^All 3 hosts/);
  const all = await viewerTotal(page);
  assert.equal(all, await apiTotal(page, []));
  assert.match(await page.locator('.ks-panel-title').innerText(), /all 3 hosts$/);
  // db-2 unchecked: db-1 and web-1.
  await page.click('.ks-host-button');
  let n = await loads(page);
  await page.uncheck('.ks-host[value="db-2"]');
  await loadedAfter(page, n);
  const two = await viewerTotal(page);
  assert.equal(two, await apiTotal(page, ['db-1', 'web-1']));
  assert.ok(two < all && two > 0, `${two} of ${all}`);
  assert.equal(new URL(page.url()).searchParams.get('hosts'), 'db-1,web-1');
  assert.match(await page.locator('.ks-host-button').innerText(), /^2 of 3 hosts: db-1, web-1/);
  // The charts show the two hosts' series only.
  const legend = await page.locator('.ks-chart[data-chart="cpu"] .ks-legend').textContent();
  assert.ok(legend.includes('(db-1)') && legend.includes('(web-1)') && !legend.includes('db-2'), legend);
  await page.click('h1'); // closes the menu
  assert.ok(await page.locator('.ks-host-menu').isHidden());

  // Click nginx's frame in the flame graph: the breakdown lists both hosts, web-1 first.
  assert.ok(await page.locator('.ks-frame-hosts').isDisabled());
  // The frame's row scrolled into the window, then clicked where it is drawn.
  const path = ['nginx', 'entry_SYSCALL_64', 'do_syscall_64', WEB_FRAME];
  await page.evaluate((f) => { const p = kflameViewer.pointOf(kflameViewer.nodeByPath(f)); if (p) window.scrollBy(0, p.y - innerHeight / 2); }, path);
  const p = await page.evaluate((f) => kflameViewer.pointOf(kflameViewer.nodeByPath(f)), path);
  assert.ok(p && p.y > 0 && p.y < 900, 'nginx\'s frame is drawn in the window: ' + JSON.stringify(p));
  await page.mouse.click(p.x, p.y);
  assert.equal(await page.locator('.kf-sel-name').innerText(), WEB_FRAME);
  await page.click('.ks-frame-hosts');
  await page.waitForSelector('.ks-fh-panel:not([hidden]) tbody tr');
  const want = await page.evaluate(async (f) => {
    const { S, ns } = kflameServe;
    return (await (await fetch(`/api/frame_hosts?frame=${encodeURIComponent(f)}&kind=cpu&from=${ns(S.range.from)}&to=${ns(S.range.to)}&hosts=db-1,web-1`)).json());
  }, WEB_FRAME);
  const rows = await page.locator('.ks-fh-table tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  const num = (v) => Number(v).toLocaleString('en-US');
  assert.deepEqual(rows.map((r) => r.slice(0, 3)), want.hosts.map((h) => [h.host, num(h.in_frame), num(h.total)]));
  assert.deepEqual(rows.map((r) => r[0]), ['web-1', 'db-1']);
  assert.ok(want.hosts[0].in_frame > 0 && want.hosts[1].in_frame === 0);
  assert.equal(want.hosts[0].total + want.hosts[1].total, two, 'the hosts\' totals are the flame graph\'s');
  const share = (want.hosts[0].in_frame / want.hosts[0].total) * 100;
  assert.ok(rows[0][3].startsWith(share.toFixed(1)), rows[0][3] + ' vs ' + share);
  assert.equal(await page.locator('.ks-fh-frame').innerText(), WEB_FRAME);
  await screenshot(page, 'serve-fleet-frame-hosts');
  // web-1's name selects web-1 alone.
  n = await loads(page);
  await page.click('.ks-fh-host:has-text("web-1")');
  await loadedAfter(page, n);
  assert.equal(await viewerTotal(page), want.hosts[0].total);
  assert.equal(new URL(page.url()).searchParams.get('hosts'), 'web-1');
  assert.match(await page.locator('.ks-host-button').innerText(), /^Host web-1/);
  assert.equal(await page.locator('.ks-fh-table tr.ks-fh-on').getAttribute('data-host'), 'web-1');
  // Events follow the hosts: web-1's report, not db-2's trigger.
  assert.deepEqual(await page.locator('.ks-marker').evaluateAll((ms) => ms.map((m) => m.dataset.type)), ['report']);
  // A reload keeps the choice.
  await page.reload();
  await loadedAfter(page, 0);
  assert.equal(await viewerTotal(page), want.hosts[0].total);
  assert.deepEqual(problems, []);
  await page.close();
});

test('hosts chosen by label, and back to all hosts', async () => {
  const { page, problems } = await open('', true);
  const all = await viewerTotal(page);
  await page.click('.ks-host-button');
  const chips = await page.locator('.ks-label-chip').allInnerTexts();
  assert.deepEqual(chips, ['role=db', 'role=web', 'zone=a', 'zone=b']);
  assert.equal(await page.locator('.ks-host-row:has-text("db-2") .ks-host-labels').innerText(), 'role=db, zone=b');
  let n = await loads(page);
  await page.fill('.ks-host-label', 'role=db');
  await page.press('.ks-host-label', 'Enter');
  await loadedAfter(page, n);
  assert.equal(new URL(page.url()).searchParams.get('hosts'), 'db-1,db-2');
  assert.equal(await viewerTotal(page), await apiTotal(page, ['db-1', 'db-2']));
  await screenshot(page, 'serve-fleet-labels');
  n = await loads(page);
  await page.click('.ks-label-chip:has-text("zone=a")');
  await loadedAfter(page, n);
  assert.equal(new URL(page.url()).searchParams.get('hosts'), 'db-1,web-1');
  // A label no host has: a message, the choice unchanged.
  await page.fill('.ks-host-label', 'role=cache');
  await page.press('.ks-host-label', 'Enter');
  assert.match(await page.locator('.ks-status').innerText(), /No host has the labels role=cache/);
  assert.equal(new URL(page.url()).searchParams.get('hosts'), 'db-1,web-1');
  n = await loads(page);
  await page.click('.ks-hosts-all');
  await loadedAfter(page, n);
  assert.equal(new URL(page.url()).searchParams.get('hosts'), null);
  assert.equal(await viewerTotal(page), all);
  assert.deepEqual(problems, []);
  await page.close();
});

test('two host sets compared: the base remembers its hosts (another kernel\'s), the selection is the other set', async () => {
  const { page, problems } = await open('', true);
  const choose = async (label) => {
    const n = await loads(page);
    if (await page.locator('.ks-host-menu').isHidden()) await page.click('.ks-host-button');
    await page.fill('.ks-host-label', label);
    await page.press('.ks-host-label', 'Enter');
    await loadedAfter(page, n);
  };
  await choose('role=db');
  await page.click('.ks-set-base');
  assert.equal(new URL(page.url()).searchParams.get('bhosts'), 'db-1,db-2');
  await choose('role=web');
  let n = await loads(page);
  await page.click('.ks-compare');
  await loadedAfter(page, n);
  await page.waitForFunction(() => kflameViewer.meta.differential === true, null, { timeout: 10000 });
  // BEFORE is the db hosts over the same range, AFTER web-1 alone; two host sets of other
  // sizes compare by share: the base scaled to the selection's total, by default.
  const [dbTotal, webTotal] = [await apiTotal(page, ['db-1', 'db-2']), await apiTotal(page, ['web-1'])];
  assert.equal(await viewerTotal(page), webTotal);
  assert.equal(await page.locator('.ks-norm').isChecked(), true);
  const scaled = await page.evaluate(() => kflameViewer.tree.totalBefore[0]);
  assert.ok(Math.abs(scaled - webTotal) < 1e-6, `the scaled base sums to ${scaled}, not ${webTotal}`);
  assert.match(await page.locator('.ks-panel-note').innerText(),
    new RegExp(`on hosts db-1, db-2 \\(role=db\\): ${dbTotal} before, ${webTotal} after, the base scaled to the selection’s total|on hosts db-1, db-2 \\(role=db\\): ${dbTotal} before, ${webTotal} after, the base scaled`));
  // Unscaled: the db hosts' own samples.
  n = await loads(page);
  await page.click('.ks-norm');
  await loadedAfter(page, n);
  assert.equal(await page.evaluate(() => kflameViewer.tree.totalBefore[0]), dbTotal);
  assert.equal(new URL(page.url()).searchParams.get('norm'), '0');
  // The frame only web-1 runs is in the comparison (from nothing before).
  assert.ok(await page.evaluate((f) => kflameViewer.tree.names.includes(f), WEB_FRAME));
  const info = await page.evaluate(async () => {
    const { S, ns } = kflameServe;
    return (await (await fetch(`/api/diff?kind=cpu&from=${ns(S.range.from)}&to=${ns(S.range.to)}&hosts=web-1` +
      `&base_from=${ns(S.base.from)}&base_to=${ns(S.base.to)}&base_hosts=db-1,db-2`)).json()).info;
  });
  assert.deepEqual([info.hosts, info.base_hosts], [['web-1'], ['db-1', 'db-2']]);
  // The functions whose share changed most, listed under the comparison: each one's share
  // of each side equals what the sides' folded stacks give (a function counted once per
  // stack, perf's _[k] marks left out), and none grew more than the first, nor shrank more
  // than the first shrunk.
  const shares = await page.evaluate(async () => {
    const { S, ns } = kflameServe;
    const q = `kind=cpu&from=${ns(S.range.from)}&to=${ns(S.range.to)}&format=folded`;
    const side = async (hosts) => {
      const text = await (await fetch(`/api/profile?${q}&hosts=${hosts}`)).text();
      const per = new Map();
      let total = 0;
      for (const line of text.split('\n')) {
        if (!line || line.startsWith('#')) continue;
        const at = line.lastIndexOf(' '), w = Number(line.slice(at + 1));
        total += w;
        const names = new Set(line.slice(0, at).split(';').map((f) => f.replace(/_\[[kjiuw]\]$/, '')));
        for (const n of names) per.set(n, (per.get(n) || 0) + w);
      }
      return Object.fromEntries([...per].map(([n, w]) => [n, Math.round(w / total * 10000) / 100]));
    };
    return { before: await side('db-1,db-2'), after: await side('web-1') };
  });
  const changed = info.changed;
  assert.ok(changed.grew.length > 0 && changed.shrank.length > 0, JSON.stringify(changed));
  const deltas = [...new Set([...Object.keys(shares.before), ...Object.keys(shares.after)])]
    .map((n) => Math.round(((shares.after[n] || 0) - (shares.before[n] || 0)) * 100) / 100);
  for (const f of [...changed.grew, ...changed.shrank]) {
    assert.equal(f.total_before, shares.before[f.function] || 0, f.function);
    assert.equal(f.total_after, shares.after[f.function] || 0, f.function);
  }
  assert.equal(changed.grew[0].delta, Math.max(...deltas));
  assert.equal(changed.shrank[0].delta, Math.min(...deltas));
  assert.ok(changed.grew.some((f) => f.function === WEB_FRAME), 'the frame only web-1 runs grew');
  const rows = await page.locator('.ks-changed-fn').allInnerTexts();
  assert.equal(rows.length, changed.grew.length + changed.shrank.length);
  assert.match(rows[0], new RegExp(`^${changed.grew[0].function} grew \\+${changed.grew[0].delta.toFixed(2)} points`));
  // A click finds the function in the flame graph.
  await page.click(`.ks-changed-fn[data-function="${WEB_FRAME}"] .ks-changed-name`);
  assert.ok(await page.evaluate(() => kflameViewer.state.search.length > 0 && kflameViewer.mask !== null));
  assert.ok(await page.evaluate((f) => new RegExp(kflameViewer.state.search).test(f), WEB_FRAME));
  await screenshot(page, 'serve-fleet-hosts-compared');
  // The address keeps both sets: a reload compares the same.
  const total = await viewerTotal(page);
  await page.reload();
  await loadedAfter(page, 0);
  await page.waitForFunction(() => kflameViewer.meta.differential === true, null, { timeout: 10000 });
  assert.equal(await viewerTotal(page), total);
  assert.deepEqual(problems, []);
  await page.close();
});
