// Off-wake flame graphs in the HTML viewer: stacks of `kflame record --off-cpu --wakers` in
// bcc offwaketime's layout (the blocked task's stack root first, a `--` frame, then the
// waker's stack leaf first), real captures of `crates/kflame/tests/data/render/`. Expected
// weights and shares are computed here from the folded files.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, kflame, launchBrowser, scratch, screenshot, folded, pct, sum } from './lib.mjs';

const DATA = join(ROOT, 'crates/kflame/tests/data/render');
const WORKLOAD = join(DATA, 'wakers-kfwork.folded');
const SYSTEM = join(DATA, 'wakers-system.folded');
const ABOVE = "-- (waker's stack above, blocked stack below)";
const BELOW = "-- (waker's stack below, blocked stack above)";

let browser, dir;

before(async () => {
  dir = scratch();
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
});

const sep = (s) => s.frames.indexOf('--');
/** Whether `name` is in the waker's part (after `--`) or the blocked part of stack s. */
const inWaker = (s, name) => sep(s) >= 0 && s.frames.indexOf(name, sep(s) + 1) > 0;
const inBlocked = (s, name) => { const i = s.frames.indexOf(name); return i >= 0 && (sep(s) < 0 || i < sep(s)); };

/** The heaviest blocked stack prefix up to and including `--`. */
function heaviestSeparator(stacks) {
  const m = new Map();
  for (const s of stacks) {
    if (sep(s) < 0) continue;
    const k = s.frames.slice(0, sep(s) + 1).join(';');
    m.set(k, (m.get(k) || 0) + s.w);
  }
  const [k, w] = [...m.entries()].sort((a, b) => b[1] - a[1])[0];
  return [k.split(';'), w];
}

async function open(path) {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  await page.goto(pathToFileURL(path).href);
  await page.waitForFunction(() => globalThis.kflameViewer);
  return { page, problems };
}

async function page(input, name) {
  const out = join(dir, name + '.html');
  kflame(['flamegraph', '--format', 'html', input, '-o', out]);
  return open(out);
}

/** Hovers the frame at `frames` of the main view: [tooltip lines, canvas pixel [r, g, b]]. */
async function hoverFrame(page, frames) {
  const p = await page.evaluate((f) => kflameViewer.pointOf(kflameViewer.nodeByPath(f)), frames);
  assert.ok(p, 'frame ' + frames.join(';') + ' is drawn');
  const pixel = await page.evaluate(({ x, y }) => {
    const c = document.querySelector('.kf-flame canvas'), r = c.getBoundingClientRect();
    const sx = c.width / r.width, sy = c.height / r.height;
    // Two pixels above the centre line: clear of the label's glyphs.
    const d = c.getContext('2d').getImageData(Math.round((x - r.left) * sx), Math.round((y - 4 - r.top) * sy), 1, 1).data;
    return [d[0], d[1], d[2]];
  }, p);
  await page.mouse.move(p.x, p.y);
  return [(await page.locator('.kf-tooltip').innerText()).split('\n'), pixel];
}

async function searchFor(page, text) {
  await page.fill('.kf-search', text);
  await page.press('.kf-search', 'Enter');
  return page.locator('.kf-matched').innerText();
}

test('the separator is grey and says which side is which; the waker\'s frames are aqua', async () => {
  const stacks = folded(WORKLOAD), total = sum(stacks);
  const [blocked, w] = heaviestSeparator(stacks);
  const { page: p, problems } = await page(WORKLOAD, 'wakers');
  const [tip, pixel] = await hoverFrame(p, blocked);
  await screenshot(p, 'wakers-html');
  assert.equal(tip[0], ABOVE);
  assert.ok(tip.includes(pct(w, total) + ' of total'), tip.join(' | '));
  assert.deepEqual(pixel, [160, 160, 160]);
  assert.equal(await p.evaluate((f) => kflameViewer.colorOf(kflameViewer.nodeByPath(f)), blocked), 'rgb(160,160,160)');
  // The first frame of the waker's stack: aqua (blue and green high, red low).
  const next = stacks.find((s) => s.frames.slice(0, blocked.length).join(';') === blocked.join(';')).frames[blocked.length];
  const [wtip, wpixel] = await hoverFrame(p, [...blocked, next]);
  assert.equal(wtip[0], next);
  assert.ok(wtip.includes("in the waker's stack (leaf first from --)"), wtip.join(' | '));
  assert.ok(wpixel[2] >= 165 && wpixel[1] >= 165 && wpixel[0] <= 110, 'waker frame ' + wpixel);
  // The frame below it, the blocked task's last: hot (red high, blue low).
  const [btip, bpixel] = await hoverFrame(p, blocked.slice(0, -1));
  assert.ok(!btip.some((l) => l.includes('waker')), btip.join(' | '));
  assert.ok(bpixel[0] >= 205 && bpixel[2] <= 55, 'blocked frame ' + bpixel);
  // Every node's colour: grey separators, the waker's frames aqua, the others not.
  const colours = await p.evaluate(() => {
    const v = kflameViewer, t = v.tree, out = [];
    for (let i = 1; i < t.n; i++) out.push([t.label(i), t.waker[i], v.colorOf(i)]);
    return out;
  });
  for (const [name, waker, c] of colours) {
    const [r, g, b] = c.match(/\d+/g).map(Number);
    if (name === '--') assert.equal(c, 'rgb(160,160,160)');
    else if (waker) assert.ok(b >= 165 && g >= 165 && r <= 110, name + ' ' + c);
    else assert.ok(r >= 205 && b <= 55, name + ' ' + c);
  }
  // As an icicle graph the waker's stack hangs below the separator.
  await p.keyboard.press('i');
  await p.waitForFunction(() => kflameViewer.state.inverted);
  const [itip] = await hoverFrame(p, blocked);
  assert.equal(itip[0], BELOW);
  assert.deepEqual(problems, []);
  await p.close();
});

const group = (v) => v.toLocaleString('en-US');

/** The nodes of the main view named `name`: [{path, waker, total}]. */
function nodesNamed(p, name) {
  return p.evaluate((nm) => {
    const t = kflameViewer.tree, out = [];
    for (let i = 1; i < t.n; i++) {
      if (t.label(i) === nm) out.push({ path: t.pathTo(i).slice(1).map((k) => t.label(k)), waker: t.waker[i], total: t.total[i] });
    }
    return out;
  }, name);
}

test('search finds the waker\'s frames above the separator, with their share of the total', async () => {
  const stacks = folded(WORKLOAD), total = sum(stacks);
  const { page: p, problems } = await page(WORKLOAD, 'wakers-search');
  // anon_pipe_write is only ever the waker's (the writer's write woke the reader).
  const write = sum(stacks.filter((s) => s.frames.includes('anon_pipe_write')));
  assert.ok(write > 0 && stacks.every((s) => !s.frames.includes('anon_pipe_write') || inWaker(s, 'anon_pipe_write')));
  let matched = await searchFor(p, '^anon_pipe_write$');
  assert.ok(matched.startsWith('Matched: ' + pct(write, total) + ' ('), matched);
  assert.ok(matched.includes(group(write) + ' ns'), matched);
  // kf_pipe_writer both blocks (its own naps) and wakes (the reader): the match counts every
  // stack through it once, and the frames above the separator hold the waker's share.
  const all = sum(stacks.filter((s) => s.frames.includes('kf_pipe_writer')));
  const asWaker = sum(stacks.filter((s) => inWaker(s, 'kf_pipe_writer')));
  const asBlocked = sum(stacks.filter((s) => inBlocked(s, 'kf_pipe_writer')));
  assert.ok(asWaker > 0 && asBlocked > 0);
  matched = await searchFor(p, 'kf_pipe_writer');
  assert.ok(matched.startsWith('Matched: ' + pct(all, total) + ' ('), matched);
  const nodes = await nodesNamed(p, 'kf_pipe_writer');
  assert.equal(nodes.filter((n) => n.waker).reduce((a, n) => a + n.total, 0), asWaker);
  assert.equal(nodes.filter((n) => !n.waker).reduce((a, n) => a + n.total, 0), asBlocked);
  // The widest waker's kf_pipe_writer is highlighted, and its tooltip gives its share.
  const widest = nodes.filter((n) => n.waker).sort((a, b) => b.total - a.total)[0];
  const expected = sum(stacks.filter((s) => s.frames.slice(0, widest.path.length).join(';') === widest.path.join(';')));
  assert.equal(widest.total, expected);
  const [tip, pixel] = await hoverFrame(p, widest.path);
  assert.equal(tip[0], 'kf_pipe_writer');
  assert.ok(tip.includes(pct(expected, total) + ' of total'), tip.join(' | '));
  assert.ok(tip.includes("in the waker's stack (leaf first from --)"), tip.join(' | '));
  // Drawn in the search highlight (render.js's magenta), not in its aqua.
  assert.deepEqual(pixel, [230, 0, 230]);
  await screenshot(p, 'wakers-html-search');
  assert.deepEqual(problems, []);
  await p.close();
});

test('the sandwich goes through the separator: a waker frame\'s callers reach the blocked stack', async () => {
  const stacks = folded(WORKLOAD);
  const { page: p, problems } = await page(WORKLOAD, 'wakers-sandwich');
  const name = 'anon_pipe_write';
  await p.evaluate((n) => kflameViewer.sandwich(kflameViewer.tree.names.indexOf(n)), name);
  const titles = await p.locator('.kf-sandwich h2').allInnerTexts();
  assert.deepEqual(titles, ['Callers of ' + name + " (in the waker's stack, read leaf first)",
    'Callees of ' + name + " (in the waker's stack, read leaf first)"]);
  // Expected chains: below it in each stack (down to the root) and above it (to the leaf).
  const chains = (side) => {
    const m = new Map();
    for (const s of stacks) {
      const i = s.frames.indexOf(name);
      if (i < 0) continue;
      const c = side === 'callers' ? s.frames.slice(0, i).reverse() : s.frames.slice(i + 1);
      for (let k = 1; k <= c.length; k++) {
        const key = c.slice(0, k).join(';');
        m.set(key, (m.get(key) || 0) + s.w);
      }
    }
    return [...m.entries()].map(([k, w]) => k + '=' + w).sort();
  };
  const drawn = await p.evaluate(() => {
    const paths = (t) => {
      const out = [];
      for (let i = 1; i < t.n; i++) out.push(t.pathTo(i).slice(1).map((k) => t.label(k)).join(';') + '=' + t.total[i]);
      return out.sort();
    };
    const v = kflameViewer;
    const colours = (t, view) => {
      const out = [];
      for (let i = 1; i < t.n; i++) out.push([t.label(i), t.pathTo(i).slice(1).some((k) => t.label(k) === '--' && k !== i), view.colorOf(i)]);
      return out;
    };
    return { callers: paths(v.callersTree), callees: paths(v.calleesTree),
      callerColours: colours(v.callersTree, v.callersView) };
  });
  assert.deepEqual(drawn.callers, chains('callers'));
  assert.deepEqual(drawn.callees, chains('callees'));
  assert.ok(drawn.callers.some((c) => c.includes(';--;kf_pipe_reader') || c.includes(';--;__schedule')), drawn.callers.join('\n'));
  // In the callers: the waker's frames down to `--` aqua, then grey, then the blocked stack's.
  for (const [label, past, c] of drawn.callerColours) {
    const [r, g, b] = c.match(/\d+/g).map(Number);
    if (label === '--') assert.equal(c, 'rgb(160,160,160)');
    else if (past) assert.ok(r >= 205 && b <= 55, 'blocked ' + label + ' ' + c);
    else assert.ok(b >= 165 && r <= 110, 'waker ' + label + ' ' + c);
  }
  await screenshot(p, 'wakers-html-sandwich');
  // A blocked frame's callees go up through `--` into the waker's stacks; no note.
  await p.evaluate(() => kflameViewer.sandwich(kflameViewer.tree.names.indexOf('anon_pipe_read')));
  assert.equal(await p.locator('.kf-sandwich h2').first().innerText(), 'Callers of anon_pipe_read');
  const callees = await p.evaluate(() => {
    const t = kflameViewer.calleesTree, out = [];
    for (let i = 1; i < t.n; i++) out.push(t.pathTo(i).slice(1).map((k) => t.label(k)).join(';'));
    return out;
  });
  assert.ok(callees.includes('schedule;__schedule;--;try_to_wake_up;autoremove_wake_function'), callees.join('\n'));
  assert.deepEqual(problems, []);
  await p.close();
});

test('a system-wide capture: every separator grey, every waker frame in the waker\'s colours', async () => {
  const stacks = folded(SYSTEM), total = sum(stacks);
  const { page: p, problems } = await page(SYSTEM, 'wakers-system');
  const seen = await p.evaluate(() => {
    const v = kflameViewer, t = v.tree;
    let seps = 0, wakers = 0, bad = [];
    for (let i = 1; i < t.n; i++) {
      const c = v.colorOf(i), [r, g, b] = c.match(/\d+/g).map(Number);
      if (t.label(i) === '--') { seps++; if (c !== 'rgb(160,160,160)') bad.push(t.label(i) + ' ' + c); }
      else if (t.waker[i]) { wakers++; if (!(b >= 165 && g >= 165 && r <= 110)) bad.push(t.label(i) + ' ' + c); }
      else if (!(r >= 205 && b <= 55)) bad.push(t.label(i) + ' ' + c);
    }
    return { seps, wakers, bad };
  });
  assert.ok(seen.seps > 0 && seen.wakers > 0, JSON.stringify(seen));
  assert.deepEqual(seen.bad, []);
  // Searching the separator gives the share of blocked time whose waker was recorded.
  const woken = sum(stacks.filter((s) => s.frames.includes('--')));
  const matched = await searchFor(p, '^--$');
  assert.ok(matched.startsWith('Matched: ' + pct(woken, total) + ' ('), matched);
  await screenshot(p, 'wakers-html-system');
  assert.deepEqual(problems, []);
  await p.close();
});

test('the SVG: grey separator with its note in the tooltip, search across it', async () => {
  const stacks = folded(WORKLOAD), total = sum(stacks);
  const file = join(dir, 'wakers.svg');
  kflame(['flamegraph', WORKLOAD, '-o', file]);
  const p = await browser.newPage();
  const problems = [];
  p.on('pageerror', (e) => problems.push('error: ' + e.message));
  p.on('dialog', (d) => (p.answer ? d.accept(p.answer) : (problems.push('dialog ' + d.message()), d.dismiss())));
  await p.goto(pathToFileURL(file).href);
  const [blocked, w] = heaviestSeparator(stacks);
  // The widest `--` rectangle is the heaviest blocked stack's.
  const sepIndex = await p.evaluate(() => {
    const gs = [...document.querySelectorAll('#frames > g')];
    let best = -1, bw = -1;
    gs.forEach((g, i) => {
      const r = g.querySelector('rect'), t = g.querySelector('title').textContent;
      const w = +r.getAttributeNS('urn:kflame:flamegraph', 'w');
      if (t.startsWith('-- (') && w > bw) { best = i; bw = w; }
    });
    return best;
  });
  const rect = `#frames > g:nth-of-type(${sepIndex + 1}) > rect`;
  assert.equal(await p.getAttribute(rect, 'fill'), 'rgb(160,160,160)');
  assert.equal(+(await p.$eval(rect, (r) => r.getAttributeNS('urn:kflame:flamegraph', 'w'))), w);
  await p.hover(rect);
  const tip = await p.textContent('#tooltip text');
  assert.ok(tip.startsWith(ABOVE), tip);
  assert.ok((await p.textContent('#details')).includes(pct(w, total).replace('%', '') + '% of total'));
  assert.ok(blocked.length > 1);
  // Search: a function only the waker runs, then one on both sides (each stack once).
  const share = (name) => pct(sum(stacks.filter((s) => s.frames.includes(name))), total);
  p.answer = '^anon_pipe_write$';
  await p.click('#search');
  assert.equal(await p.textContent('#matched'), 'Matched: ' + share('anon_pipe_write'));
  await p.click('#search'); // reset
  p.answer = '^kf_pipe_writer$';
  await p.click('#search');
  assert.equal(await p.textContent('#matched'), 'Matched: ' + share('kf_pipe_writer'));
  const vb = await p.evaluate(() => {
    const b = document.documentElement.viewBox.baseVal;
    return { width: Math.ceil(b.width), height: Math.ceil(b.height) };
  });
  await p.setViewportSize(vb);
  await screenshot(p, 'wakers-svg-search');
  assert.deepEqual(problems, []);
  await p.close();
});
