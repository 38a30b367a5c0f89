// kflame's interop outputs checked by the tools and specifications they are for:
// - speedscope files against the JSON schema the `speedscope` npm package ships
//   (dist/release/file-format-schema.json, validated with ajv), and opened by speedscope
//   itself (the package's built app on a loopback server, in headless Chromium): the
//   sandwich view lists every frame of the folded input with the self share the test
//   computes from it;
// - Chrome traces against the Trace Event Format as documented (JSON object form, complete
//   `X` events with `ts`/`dur` in microseconds, `pid`/`tid`, `M` metadata events), events of a
//   thread nested, the roots lasting the folded input's total. No package ships Perfetto's
//   JSON importer to run here (its Python package downloads a trace processor at run time),
//   so the trace is checked against the format's documentation only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import Ajv from 'ajv';
import { launchBrowser, kflame, ROOT } from './lib.mjs';

const DATA = join(ROOT, 'crates/kflame/tests/data');
const DIST = join(ROOT, 'tests/browser/node_modules/speedscope/dist/release');
const FOLDED = [
  'render/perf-sys-cpuclock.folded',
  'ftrace/expected/ftrace-dd-mixed.alloc.folded',
  'ftrace/expected/ftrace-dd-mixed.offcpu-comm.folded',
  'ftrace/expected/ftrace-raw_syscalls-write.syscalls.folded',
  'function-graph/raw-basic.total.folded',
];

/** Folded text as [frames, weight] pairs (header lines skipped). */
function parseFolded(text) {
  return text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => {
    const i = l.lastIndexOf(' ');
    return [l.slice(0, i).split(';'), Number(l.slice(i + 1))];
  });
}

test('speedscope files validate against the schema speedscope ships', () => {
  const schema = JSON.parse(readFileSync(join(DIST, 'file-format-schema.json'), 'utf8'));
  const ajv = new Ajv({ strict: false });
  const validate = ajv.compile(schema);
  for (const rel of FOLDED) {
    for (const flags of [[], ['--flamechart']]) {
      const file = JSON.parse(kflame(['flamegraph', '--format', 'speedscope', ...flags, join(DATA, rel)]));
      assert.ok(validate(file), `${rel}: ${ajv.errorsText(validate.errors)}`);
      const folded = parseFolded(kflame(['collapse', ...(flags.length ? ['--time-order'] : []), join(DATA, rel)]));
      const p = file.profiles[0];
      assert.equal(p.samples.length, folded.length, rel);
      const sum = p.weights.reduce((a, b) => a + b, 0);
      assert.equal(sum, folded.reduce((a, [, w]) => a + w, 0), rel);
      assert.equal(p.endValue, sum, rel);
      p.samples.forEach((s, i) => assert.deepEqual(s.map((f) => file.shared.frames[f].name), folded[i][0]));
    }
  }
});

test('speedscope files of one profile per process validate against the schema too', () => {
  const schema = JSON.parse(readFileSync(join(DIST, 'file-format-schema.json'), 'utf8'));
  const ajv = new Ajv({ strict: false });
  const validate = ajv.compile(schema);
  for (const rel of FOLDED) {
    for (const flags of [[], ['--flamechart']]) {
      const file = JSON.parse(kflame(['flamegraph', '--format', 'speedscope', '--per-process', ...flags, join(DATA, rel)]));
      assert.ok(validate(file), `${rel}: ${ajv.errorsText(validate.errors)}`);
      const folded = parseFolded(kflame(['collapse', ...(flags.length ? ['--time-order'] : []), join(DATA, rel)]));
      // Per process (first frame), in order of first appearance: the rest of each stack.
      const byProcess = new Map();
      for (const [frames, w] of folded) {
        if (!byProcess.has(frames[0])) byProcess.set(frames[0], []);
        byProcess.get(frames[0]).push([frames.slice(1), w]);
      }
      assert.deepEqual(file.profiles.map((p) => p.name), [...byProcess.keys()], rel);
      for (const p of file.profiles) {
        const want = byProcess.get(p.name);
        assert.equal(p.samples.length, want.length, `${rel} ${p.name}`);
        const sum = p.weights.reduce((a, b) => a + b, 0);
        assert.equal(sum, want.reduce((a, [, w]) => a + w, 0), `${rel} ${p.name}`);
        assert.equal(p.endValue, sum, `${rel} ${p.name}`);
        p.samples.forEach((s, i) => assert.deepEqual(s.map((f) => file.shared.frames[f].name), want[i][0]));
      }
    }
  }
});

/** A loopback server of speedscope's built app and one profile. */
async function serve(profile) {
  const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
    '.wasm': 'application/wasm', '.png': 'image/png', '.woff2': 'font/woff2' };
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (path === '/profile.speedscope.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(profile);
      return;
    }
    const file = join(DIST, path === '/' ? 'index.html' : path);
    if (!file.startsWith(DIST) || !existsSync(file)) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': types[extname(file)] || 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

test('speedscope opens kflame files and shows every frame with its self share', async () => {
  const rel = 'ftrace/expected/ftrace-dd-mixed.offcpu-comm.folded';
  const profile = kflame(['flamegraph', '--format', 'speedscope', join(DATA, rel)]);
  const folded = parseFolded(kflame(['collapse', join(DATA, rel)]));
  const total = folded.reduce((a, [, w]) => a + w, 0);
  const self = new Map();
  for (const [frames, w] of folded) {
    for (const f of frames) if (!self.has(f)) self.set(f, 0);
    self.set(frames.at(-1), self.get(frames.at(-1)) + w);
  }
  const server = await serve(profile);
  const base = `http://127.0.0.1:${server.address().port}`;
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    const logs = [];
    page.on('console', (m) => logs.push(m.text()));
    await page.goto(`${base}/#profileURL=${encodeURIComponent(base + '/profile.speedscope.json')}&view=sandwich`);
    await page.waitForFunction(() => document.body.innerText.includes('Symbol Name'), null, { timeout: 30000 });
    assert.ok(logs.some((l) => l.includes('Importing as speedscope json file')), logs.join('\n'));
    // The sandwich table: Total, Self, Symbol Name per row; the viewport is tall enough
    // for the whole table, so no row is left out by virtual scrolling.
    await page.setViewportSize({ width: 1280, height: 4000 });
    await page.waitForTimeout(500);
    const text = await page.evaluate(() => document.body.innerText);
    const rows = text.slice(text.indexOf('Symbol Name') + 'Symbol Name'.length).trim().split('\n');
    const shown = new Map();
    for (let i = 0; i + 2 < rows.length; i += 3) {
      shown.set(rows[i + 2].trim(), rows[i + 1].trim());
    }
    assert.deepEqual([...shown.keys()].sort(), [...self.keys()].sort(), 'every frame, and only those');
    for (const [name, cell] of shown) {
      // `1.23ms (45.67%)`, `0ns (<0.01%)`, `12ms (>99%)`
      const pct = cell.match(/\(([<>]?)([\d.]+)%\)$/);
      assert.ok(pct, `${name}: ${cell}`);
      const want = (100 * self.get(name)) / total;
      const got = Number(pct[2]);
      if (pct[1] === '<') assert.ok(want < got, `${name}: ${cell} vs ${want}%`);
      else if (pct[1] === '>') assert.ok(want > got, `${name}: ${cell} vs ${want}%`);
      else assert.ok(Math.abs(want - got) < 0.01, `${name}: ${cell} vs ${want.toFixed(3)}%`);
    }
  } finally {
    await browser.close();
    server.close();
  }
});

test('Chrome traces follow the Trace Event Format', () => {
  for (const rel of FOLDED) {
    const trace = JSON.parse(kflame(['flamegraph', '--format', 'chrome-trace', join(DATA, rel)]));
    assert.ok(Array.isArray(trace.traceEvents), rel);
    const folded = parseFolded(kflame(['collapse', '--time-order', join(DATA, rel)]));
    const ns = trace.otherData.unit === 'ns';
    const total = folded.reduce((a, [, w]) => a + w, 0) * (ns ? 0.001 : 1);
    const x = [];
    for (const e of trace.traceEvents) {
      assert.equal(typeof e.name, 'string');
      assert.ok(Number.isInteger(e.pid) && Number.isInteger(e.tid), JSON.stringify(e));
      assert.ok(typeof e.ts === 'number' && e.ts >= 0, JSON.stringify(e));
      if (e.ph === 'M') {
        assert.ok(['process_name', 'thread_name'].includes(e.name) && typeof e.args.name === 'string');
      } else {
        assert.equal(e.ph, 'X', JSON.stringify(e));
        assert.ok(typeof e.dur === 'number' && e.dur >= 0, JSON.stringify(e));
        x.push(e);
      }
    }
    // Sorted by start, parents first: an event inside the innermost open one is its child;
    // any other starts a new root, so that overlapping events would make the roots last
    // longer than the input weighs.
    const open = [];
    let roots = 0;
    const eps = 1e-6 * Math.max(1, total);
    const contains = (p, e) => p.ts <= e.ts + eps && e.ts + e.dur <= p.ts + p.dur + eps;
    for (const e of x) {
      while (open.length && !contains(open.at(-1), e)) open.pop();
      if (!open.length) roots += e.dur;
      open.push(e);
    }
    assert.ok(Math.abs(roots - total) <= eps, `${rel}: roots last ${roots}, the input weighs ${total}`);
  }
});
