// `kflame mcp` driven by the MCP inspector's CLI (npm @modelcontextprotocol/inspector --cli)
// over stdio and HTTP, checked by the MCP conformance suite's server scenarios (npm
// @modelcontextprotocol/conformance, its reference-tool scenarios in mcp-conformance-baseline.yml
// with a reason each), and its MCP Apps view (ui://kflame/flamegraph) shown in headless
// Chromium inside a host page that speaks the MCP Apps protocol to it, as an assistant's
// host does. Inputs are real: a syzkaller report and a perf capture of the project's test data.
// Expectations come from `kflame analyze --json` and `kflame collapse` on the same files.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BIN, ROOT, kflame, launchBrowser, scratch, screenshot } from './lib.mjs';

const run = promisify(execFile);
const DATA = join(ROOT, 'crates/kflame/tests/data');
const REPORT = join(DATA, 'kernel-log/syzkaller/report/106');
const PERF = join(DATA, 'perf/captures/perf-sys-cpuclock.script.txt');
const BASELINE = join(ROOT, 'tests/browser/mcp-conformance-baseline.yml');
const INSPECTOR = join(ROOT, 'tests/browser/node_modules/.bin/mcp-inspector');
const CONFORMANCE = join(ROOT, 'tests/browser/node_modules/.bin/conformance');
const TOKEN = 'inspector-token-7';
let dir, http;

/** Starts `kflame mcp --http 127.0.0.1:0` and waits, 20 s at most, for its URL. */
async function startHttp() {
  writeFileSync(join(dir, 'token'), TOKEN);
  const server = spawn(BIN, ['mcp', '--allow', DATA, '--cache-dir', join(dir, 'cache'), '--http', '127.0.0.1:0',
    '--token-file', join(dir, 'token')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((ok) => server.on('exit', (code, signal) => ok({ code, signal })));
  const url = await new Promise((ok, fail) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/(http:\/\/127\.0\.0\.1:\d+\/mcp)/);
      if (m) ok(m[1]);
    });
    setTimeout(() => fail(new Error('kflame mcp printed no URL: ' + out)), 20000);
  });
  return { server, exited, url };
}

before(async () => {
  dir = scratch();
  http = await startHttp();
});

after(async () => {
  if (!http) return;
  http.server.kill('SIGTERM');
  const how = await Promise.race([http.exited, new Promise((ok) => setTimeout(() => ok('timeout'), 10000))]);
  assert.deepEqual(how, { code: 0, signal: null }, 'kflame mcp --http exits 0 on SIGTERM');
});

/** The inspector's CLI against the stdio server; returns [parsed stdout, stderr]. */
async function inspect(args) {
  const server = [BIN, 'mcp', '--allow', DATA, '--cache-dir', join(dir, 'cache')];
  const { stdout, stderr } = await run(INSPECTOR, ['--cli', ...server, ...args], { timeout: 120000, maxBuffer: 64 << 20 });
  return [stdout.trim().startsWith('{') ? JSON.parse(stdout) : stdout, stderr];
}

test('inspector: tools/list is portable (--strict) and every profile tool has the view', async () => {
  const [list, stderr] = await inspect(['--method', 'tools/list', '--strict']);
  assert.equal(list.tools.length, 10);
  assert.doesNotMatch(stderr, /Warning|Error/, stderr);
  for (const t of list.tools) {
    assert.equal(t.inputSchema.type, 'object', t.name);
    assert.equal(t.annotations.readOnlyHint, true, t.name);
  }
  const [app] = await inspect(['--method', 'tools/call', '--tool-name', 'summarize_profile', '--app-info',
    '--advertise-apps']);
  assert.equal(app.hasApp, true);
  assert.equal(app.resourceUri, 'ui://kflame/flamegraph');
  assert.equal(app.resourceMimeType, 'text/html;profile=mcp-app');
});

test('inspector: analyze_kernel_log over stdio gives the culprit of kflame analyze --json', async () => {
  const [r] = await inspect(['--method', 'tools/call', '--tool-name', 'analyze_kernel_log',
    '--tool-arg', `path=${REPORT}`]);
  assert.equal(r.isError, false, JSON.stringify(r.content));
  const want = JSON.parse(kflame(['analyze', '--json', REPORT]));
  assert.deepEqual(r.structuredContent.groups.map((g) => g.error.culprit), want.groups.map((g) => g.error.culprit));
});

test('inspector: over HTTP with the token; without it, 401', async () => {
  const args = ['--cli', http.url, '--transport', 'http', '--header', `Authorization: Bearer ${TOKEN}`,
    '--method', 'tools/call', '--tool-name', 'summarize_profile', '--tool-arg', `path=${PERF}`, '--tool-arg', 'limit=3'];
  const { stdout } = await run(INSPECTOR, args, { timeout: 120000, maxBuffer: 64 << 20 });
  const r = JSON.parse(stdout);
  assert.equal(r.isError, false);
  const total = kflame(['collapse', PERF]).split('\n').filter((l) => l && !l.startsWith('#'))
    .reduce((s, l) => s + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  assert.equal(Number(r.structuredContent.total.weight), total);
  assert.equal(r.structuredContent.by_self.length, 3);
  const denied = await run(INSPECTOR, ['--cli', http.url, '--transport', 'http', '--method', 'tools/list'],
    { timeout: 60000 }).then(() => null, (e) => e);
  assert.ok(denied, 'tools/list without the token fails');
  // The inspector takes the 401 as a request to authorize (OAuth), which it cannot do here.
  assert.match(denied.stdout + denied.stderr, /401|auth_required/);
});

test('conformance suite: server scenarios pass, reference-tool scenarios are the baseline', async () => {
  const { stdout } = await run(CONFORMANCE, ['server', '--url', `${http.url}?token=${TOKEN}`,
    '--expected-failures', BASELINE, '-o', join(dir, 'conformance')], { timeout: 600000, maxBuffer: 64 << 20 })
    .catch((e) => assert.fail(`conformance exited ${e.code}:\n${e.stdout}\n${e.stderr}`));
  for (const s of ['server-initialize', 'ping', 'tools-list', 'resources-list', 'prompts-list', 'dns-rebinding-protection']) {
    assert.match(stdout, new RegExp(`✓ ${s}: \\d+ passed, 0 failed`), s);
  }
});

test('the MCP Apps view draws the flame graph of a tool result inside a host page', async () => {
  // The resource and a real tool result, through the inspector (a real MCP client).
  const [res] = await inspect(['--method', 'resources/read', '--uri', 'ui://kflame/flamegraph']);
  const html = res.contents[0].text;
  const [result] = await inspect(['--method', 'tools/call', '--tool-name', 'summarize_profile', '--tool-arg', `path=${PERF}`]);
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.setContent('<!DOCTYPE html><html><body style="margin:0"><iframe id="app" sandbox="allow-scripts" ' +
      'style="width:1200px;height:800px;border:0"></iframe></body></html>');
    // The host: answers ui/initialize, then sends the tool result; records what the view says.
    await page.evaluate(([html, result]) => {
      const frame = document.getElementById('app');
      globalThis.seen = [];
      window.addEventListener('message', (ev) => {
        if (ev.source !== frame.contentWindow) return;
        const m = ev.data;
        seen.push(m.method || 'response');
        if (m.method === 'ui/initialize') {
          frame.contentWindow.postMessage({ jsonrpc: '2.0', id: m.id, result: {
            protocolVersion: '2026-01-26', hostInfo: { name: 'test-host', version: '1' },
            hostCapabilities: {}, hostContext: { theme: 'light', displayMode: 'inline' } } }, '*');
        } else if (m.method === 'ui/notifications/initialized') {
          frame.contentWindow.postMessage({ jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: result }, '*');
        }
      });
      frame.srcdoc = html;
    }, [html, result]);
    await page.waitForFunction(() => seen.includes('ui/notifications/size-changed'), null, { timeout: 20000 });
    const frame = page.frames().find((f) => f !== page.mainFrame());
    const shown = await frame.evaluate(() => ({ total: kflameViewer.tree.total[0], canvases: document.querySelectorAll('canvas').length }));
    assert.equal(shown.total, Number(result._meta['kflame/view'].profile.total));
    assert.equal(String(shown.total), result.structuredContent.total.weight);
    assert.ok(shown.canvases > 0);
    const seen = await page.evaluate(() => globalThis.seen);
    assert.deepEqual(seen.slice(0, 2), ['ui/initialize', 'ui/notifications/initialized']);
    assert.deepEqual(errors, []);
    await screenshot(page, 'mcp-app-view');
  } finally {
    await browser.close();
  }
});
