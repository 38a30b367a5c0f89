// The served viewer: a page that loads the viewer's ES modules from a server and fetches its
// data as JSON (`render::html::served_page` + `encode`, written by the `viewer_site` example)
// draws the same frames, in the same pixels, as the self-contained page of the same profile.
// The server is a minimal static file server on the loopback interface, closed after the tests.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { extname, join, normalize } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, kflame, launchBrowser, scratch } from './lib.mjs';

const PERF = join(ROOT, 'crates/kflame/tests/data/html/perf-script-report-stackcollapse.folded');
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json' };

let browser, server, base, dir, offline;

before(async () => {
  dir = scratch();
  const site = join(dir, 'site');
  execFileSync('cargo', ['build', '-q', '-p', 'kflame', '--example', 'viewer_site'], { cwd: ROOT, stdio: 'inherit' });
  execFileSync(join(ROOT, 'target/debug/examples/viewer_site'), [PERF, site]);
  offline = join(dir, 'offline.html');
  kflame(['flamegraph', '--format', 'html', PERF, '-o', offline]);
  server = createServer(async (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname));
    const file = join(site, path.endsWith('/') ? path + 'index.html' : path);
    try {
      if (!file.startsWith(site + '/')) throw new Error('outside the site');
      const body = await readFile(file);
      res.writeHead(200, { 'Content-Type': TYPES[extname(file)] || 'application/octet-stream' });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  server.requestTimeout = 10000;
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${server.address().port}/`;
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    server.closeAllConnections();
    await new Promise((ok) => server.close(ok));
  }
});

/** Opens a page, waits for the viewer; no error may occur. */
async function open(url) {
  const page = await browser.newPage();
  const problems = [];
  const requests = [];
  page.on('pageerror', (e) => problems.push('error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  page.on('request', (r) => requests.push(r.url()));
  await page.goto(url);
  await page.waitForFunction(() => globalThis.kflameViewer, null, { timeout: 10000 });
  return { page, problems, requests };
}

/** Every drawn frame (node, position, width, row, dimmed, colour) and the canvas pixels. */
function drawn(page) {
  return page.evaluate(() => {
    const v = kflameViewer, f = v.flame, t = v.tree, items = f.items;
    const frames = [];
    for (let k = 0; k < items.node.length; k++) {
      frames.push([items.node[k], items.x[k], items.w[k], items.row[k], items.dim[k], f.colorOf(items.node[k])]);
    }
    return { frames, total: t.total, names: t.names, count: t.name.length, pixels: f.canvas.toDataURL() };
  });
}

test('a page that fetches its data draws the same frames as the self-contained page', async () => {
  const served = await open(base);
  const local = await open(pathToFileURL(offline).href);
  assert.deepEqual(served.problems, []);
  assert.deepEqual(local.problems, []);
  // The served page loaded the viewer's modules and the data from the server.
  for (const f of ['viewer/served.js', 'viewer/viewer.js', 'viewer/model.js', 'viewer/palette.js',
    'viewer/render.js', 'viewer/ui.js', 'viewer/viewer.css', 'profile.json']) {
    assert.ok(served.requests.includes(base + f), f + ' requested: ' + served.requests.join(' '));
  }
  const a = await drawn(served.page), b = await drawn(local.page);
  assert.ok(a.frames.length > 100, 'frames drawn: ' + a.frames.length);
  assert.deepEqual(a.total, b.total);
  assert.deepEqual(a.names, b.names);
  assert.equal(a.count, b.count);
  assert.deepEqual(a.frames, b.frames);
  assert.ok(a.pixels === b.pixels, 'the canvases differ');
  // Same interaction, same result: a search matches the same weight.
  for (const { page } of [served, local]) {
    await page.fill('.kf-search', 'vfs_');
    await page.press('.kf-search', 'Enter');
  }
  assert.equal(await served.page.locator('.kf-matched').innerText(), await local.page.locator('.kf-matched').innerText());
  await served.page.close();
  await local.page.close();
});

test('a served page whose data cannot be fetched says so', async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const html = (await readFile(join(dir, 'site/index.html'), 'utf8')).replace('profile.json', 'missing.json');
  await page.route(base + 'broken.html', (route) => route.fulfill({ contentType: 'text/html', body: html }));
  await page.goto(base + 'broken.html');
  await page.waitForFunction(() => document.getElementById('kflame').textContent.includes('Cannot load'), null, { timeout: 10000 });
  assert.match(await page.locator('#kflame').innerText(), /Cannot load the profile from missing\.json: HTTP 404/);
  assert.deepEqual(errors, []);
  await page.close();
});
