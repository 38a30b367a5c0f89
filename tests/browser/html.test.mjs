// Browser tests of the self-contained HTML page (`kflame html`), in headless Chromium.
// Expected figures are computed here from the folded fixtures, independently of the viewer.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, kflame, launchBrowser, scratch, screenshot, writeText, folded, pct, sum } from './lib.mjs';

const FIXTURES = join(ROOT, 'crates/kflame/tests/data/html');
const PERF = join(FIXTURES, 'perf-script-report-stackcollapse.folded');
const BYTES = join(FIXTURES, 'bpftrace-mm_page_alloc-bytes.folded');
const HOSTILE = '</text><script>alert(1)</script>';
const HOSTILE2 = '</script><script>window.__pwned=1</script>';

let browser, dir, perfPage;

before(async () => {
  dir = scratch();
  perfPage = join(dir, 'perf.html');
  kflame(['flamegraph', '--format', 'html', '--colors', 'kernel', PERF, '-o', perfPage]);
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
});

const group = (v) => v.toLocaleString('en-US');

/** Weight of each distinct value of key(stack), heaviest first. */
function heaviest(stacks, key) {
  const m = new Map();
  for (const s of stacks) if (key(s) !== undefined) m.set(key(s), (m.get(key(s)) || 0) + s.w);
  return [...m.entries()].sort((a, b) => b[1] - a[1]);
}

/** Opens a page file; collects errors and dialogs (none may occur). */
async function open(path, hash = '') {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  page.on('dialog', (d) => { problems.push('dialog: ' + d.message()); d.dismiss(); });
  await page.goto(pathToFileURL(path).href + hash);
  await page.waitForFunction(() => globalThis.kflameViewer);
  return { page, problems };
}

/** Moves the mouse onto the frame at `frames` and returns the tooltip text. */
async function hover(page, frames) {
  const p = await page.evaluate((f) => kflameViewer.pointOf(kflameViewer.nodeByPath(f)), frames);
  assert.ok(p, 'frame ' + frames.join(';') + ' is drawn');
  await page.mouse.move(p.x, p.y);
  return page.locator('.kf-tooltip').innerText();
}

async function click(page, frames) {
  const p = await page.evaluate((f) => kflameViewer.pointOf(kflameViewer.nodeByPath(f)), frames);
  assert.ok(p, 'frame ' + frames.join(';') + ' is drawn');
  await page.mouse.click(p.x, p.y);
}

async function searchFor(page, text) {
  await page.fill('.kf-search', text);
  await page.press('.kf-search', 'Enter');
  return page.locator('.kf-matched').innerText();
}

test('a click zooms; the tooltip gives the weight and both percentages', async () => {
  const stacks = folded(PERF), total = sum(stacks);
  const [root, rootW] = heaviest(stacks, (s) => s.frames[0])[0];
  const under = stacks.filter((s) => s.frames[0] === root);
  const [child, childW] = heaviest(under, (s) => s.frames[1])[0];
  const { page, problems } = await open(perfPage);
  const tip = await hover(page, [root]);
  assert.match(tip, new RegExp(group(rootW) + ' samples'));
  assert.ok(tip.includes(pct(rootW, total) + ' of total'), tip);
  await click(page, [root]);
  const zoom = await page.evaluate(() => kflameViewer.state.zoom);
  assert.equal(zoom, await page.evaluate((r) => kflameViewer.nodeByPath([r]), root));
  assert.match(page.url(), /#.*zoom=\d+/);
  const childTip = await hover(page, [root, child]);
  assert.ok(childTip.includes(pct(childW, total) + ' of total'), childTip);
  assert.ok(childTip.includes(pct(childW, rootW) + ' of zoomed frame'), childTip);
  await screenshot(page, 'html-zoomed');
  await page.keyboard.press('Escape');
  assert.equal(await page.evaluate(() => kflameViewer.state.zoom), 0);
  assert.deepEqual(problems, []);
  await page.close();
});

test('a click zooms in place: the canvas keeps its size and the frame stays under the pointer', async () => {
  const stacks = folded(PERF);
  // A frame two levels up in the heaviest tower: its subtree is shallower than the graph.
  const [root] = heaviest(stacks, (s) => s.frames[0])[0];
  const under = stacks.filter((s) => s.frames[0] === root);
  const [child] = heaviest(under, (s) => s.frames[1])[0];
  const { page, problems } = await open(perfPage);
  const size = () => page.evaluate(() => {
    const r = document.querySelector('.kf-flame canvas').getBoundingClientRect();
    const box = document.querySelector('.kf-scroll');
    return { width: Math.round(r.width), scrollHeight: box.scrollHeight, scrollTop: box.scrollTop };
  });
  const p = await page.evaluate((f) => kflameViewer.pointOf(kflameViewer.nodeByPath(f)), [root, child]);
  const before = await size();
  await page.mouse.click(p.x, p.y);
  const node = await page.evaluate((f) => kflameViewer.nodeByPath(f), [root, child]);
  assert.equal(await page.evaluate(() => kflameViewer.state.zoom), node);
  assert.deepEqual(await size(), before, 'the graph keeps its width, height and scroll position');
  // What is under the pointer now is the zoomed frame itself.
  const tip = await hover(page, [root, child]);
  const again = await page.evaluate((f) => kflameViewer.pointOf(kflameViewer.nodeByPath(f)), [root, child]);
  assert.equal(Math.round(again.y), Math.round(p.y), tip);
  assert.deepEqual(problems, []);
  await page.close();
});

test('regex search highlights and reports Matched, with the ignore-case toggle', async () => {
  const stacks = folded(PERF), total = sum(stacks);
  const expected = sum(stacks.filter((s) => s.frames.includes('do_syscall_64')));
  assert.ok(expected > 0);
  const { page, problems } = await open(perfPage);
  const matched = 'Matched: ' + pct(expected, total) + ' (' + group(expected) + ' samples)';
  assert.equal(await searchFor(page, '^do_syscall_64$'), matched);
  await screenshot(page, 'html-search');
  assert.equal(await searchFor(page, '^DO_SYSCALL_64$'), 'Matched: 0.00% (0 samples)');
  await page.check('.kf-ci');
  await page.waitForFunction(() => kflameViewer.state.ci);
  assert.equal(await page.locator('.kf-matched').innerText(), matched);
  assert.match(await searchFor(page, '(['), /^Bad regex/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('focus and hide change the graph and undo restores it', async () => {
  const stacks = folded(PERF), total = sum(stacks);
  const through = sum(stacks.filter((s) => s.frames.includes('do_syscall_64')));
  const { page, problems } = await open(perfPage);
  const treeTotal = () => page.evaluate(() => kflameViewer.tree.total[0]);
  await searchFor(page, '^do_syscall_64$');
  await page.click('button[data-act=focus-matches]');
  assert.equal(await treeTotal(), through);
  const roots = await page.evaluate(() => {
    const t = kflameViewer.tree, out = new Set();
    for (let k = t.kidOff[0]; k < t.kidOff[1]; k++) out.add(t.label(t.kids[k]));
    return [...out];
  });
  assert.deepEqual(roots, ['do_syscall_64']);
  const focusedTip = await hover(page, ['do_syscall_64']);
  assert.ok(focusedTip.includes(pct(through, total) + ' of total'), focusedTip);
  assert.ok(focusedTip.includes('100.00% of the focused view'), focusedTip);
  assert.match(await page.locator('.kf-transforms').innerText(), /focus: \/\^do_syscall_64\$\//);
  await screenshot(page, 'html-focus');
  await page.click('button[data-act=undo]');
  assert.equal(await treeTotal(), total);

  const [root] = heaviest(stacks, (s) => s.frames[0])[0];
  const [child] = heaviest(stacks.filter((s) => s.frames[0] === root), (s) => s.frames[1])[0];
  await click(page, [root]);
  await page.click('button[data-act=hide]');
  assert.equal(await treeTotal(), total, 'hiding a frame keeps its weight (moved to its caller)');
  assert.equal(await page.evaluate((r) => kflameViewer.nodeByPath([r]), root), -1);
  assert.ok((await page.evaluate((c) => kflameViewer.nodeByPath([c]), child)) > 0);
  await page.keyboard.press('u');
  assert.ok((await page.evaluate((r) => kflameViewer.nodeByPath([r]), root)) > 0);
  assert.deepEqual(problems, []);
  await page.close();
});

test('top functions table by self weight, and a row opens the sandwich view', async () => {
  const stacks = folded(PERF), total = sum(stacks);
  const selfBy = heaviest(stacks, (s) => s.frames[s.frames.length - 1]);
  const [, maxSelf] = selfBy[0];
  const { page, problems } = await open(perfPage);
  await page.click('button[data-view=top]');
  const first = page.locator('.kf-top tbody tr').first();
  const cells = await first.locator('td').allInnerTexts();
  assert.equal(cells[1], group(maxSelf) + ' samples');
  assert.equal(cells[2], pct(maxSelf, total));
  const name = cells[0];
  assert.equal(selfBy.find(([n]) => n === name)[1], maxSelf);
  const nameTotal = sum(stacks.filter((s) => s.frames.includes(name)));
  assert.equal(cells[3], group(nameTotal) + ' samples');
  await screenshot(page, 'html-top');
  await first.click();
  assert.equal(await page.evaluate(() => kflameViewer.state.view), 'sandwich');
  assert.equal(await page.locator('.kf-sandwich h2').first().innerText(), 'Callers of ' + name);
  const totals = await page.evaluate(() => [kflameViewer.callersTree.total[0], kflameViewer.calleesTree.total[0]]);
  assert.deepEqual(totals, [nameTotal, nameTotal]);
  // Callers: the first level above the function is every distinct caller of it.
  const callers = new Set(stacks.flatMap((s) => s.frames.flatMap((f, i) => (f === name && i > 0 ? [s.frames[i - 1]] : []))));
  const drawnCallers = await page.evaluate(() => {
    const t = kflameViewer.callersTree, out = [];
    for (let k = t.kidOff[0]; k < t.kidOff[1]; k++) out.push(t.label(t.kids[k]));
    return out.sort();
  });
  assert.deepEqual(drawnCallers, [...callers].sort());
  await screenshot(page, 'html-sandwich');
  await page.reload();
  await page.waitForFunction(() => globalThis.kflameViewer);
  assert.equal(await page.evaluate(() => kflameViewer.state.view), 'sandwich');
  assert.equal(await page.locator('.kf-sandwich h2').first().innerText(), 'Callers of ' + name);
  assert.deepEqual(problems, []);
  await page.close();
});

test('zoom, search, view options and hide/focus survive a reload through the URL', async () => {
  const stacks = folded(PERF);
  const [root] = heaviest(stacks, (s) => s.frames[0])[0];
  const { page, problems } = await open(perfPage);
  await searchFor(page, 'write');
  await page.click('button[data-act=hide-matches]');
  await searchFor(page, 'ksys');
  await page.keyboard.press('Escape'); // leaves the search box
  await page.keyboard.press('l');
  await click(page, [root]);
  const before = await page.evaluate(() => ({ ...kflameViewer.state, total: kflameViewer.tree.total[0], tx: kflameViewer.transforms }));
  const matched = await page.locator('.kf-matched').innerText();
  await page.reload();
  await page.waitForFunction(() => globalThis.kflameViewer);
  const after = await page.evaluate(() => ({ ...kflameViewer.state, total: kflameViewer.tree.total[0], tx: kflameViewer.transforms }));
  for (const k of ['zoom', 'search', 'heavy', 'inverted', 'view', 'total']) assert.equal(after[k], before[k], k);
  assert.deepEqual(after.tx, before.tx);
  assert.equal(await page.inputValue('.kf-search'), 'ksys');
  assert.equal(await page.locator('.kf-matched').innerText(), matched);
  assert.deepEqual(problems, []);
  await page.close();
});

test('icicle toggle and keyboard shortcuts', async () => {
  const { page, problems } = await open(perfPage);
  await page.keyboard.press('i');
  assert.equal(await page.evaluate(() => kflameViewer.state.inverted), true);
  assert.match(page.url(), /inverted=1/);
  await screenshot(page, 'html-icicle');
  await page.keyboard.press('t');
  assert.equal(await page.evaluate(() => kflameViewer.state.view), 'top');
  await page.keyboard.press('g');
  await page.keyboard.press('/');
  assert.equal(await page.evaluate(() => document.activeElement.className), 'kf-search');
  assert.match(await page.locator('.kf-help').innerText(), /Esc: reset zoom/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('left-heavy puts the heaviest frame first', async () => {
  const stacks = folded(PERF);
  const roots = heaviest(stacks, (s) => s.frames[0]);
  const { page, problems } = await open(perfPage);
  const xOf = (name) => page.evaluate((n) => kflameViewer.flame.rectOf(kflameViewer.nodeByPath([n])), name);
  const alphabeticalFirst = roots.map(([n]) => n).sort()[0];
  assert.ok((await xOf(alphabeticalFirst)).x < 1, 'by default children are in name order');
  await page.keyboard.press('l');
  assert.ok((await xOf(roots[0][0])).x < 1, 'left-heavy: ' + roots[0][0] + ' first');
  assert.ok((await xOf(roots[1][0])).x > (await xOf(roots[0][0])).x);
  await screenshot(page, 'html-left-heavy');
  assert.deepEqual(problems, []);
  await page.close();
});

test('a flame chart keeps input order and merges only consecutive stacks', async () => {
  const input = writeText(dir, 'chart.folded', 'main;read 2\nmain;compute 5\nmain;read 1\nidle 3\n');
  const html = join(dir, 'chart.html');
  kflame(['flamegraph', '--format', 'html', '--flamechart', input, '-o', html]);
  const { page, problems } = await open(html);
  const drawn = await page.evaluate(() => {
    const v = kflameViewer, t = v.tree, out = [];
    for (let i = 1; i < t.n; i++) out.push([t.pathTo(i).slice(1).map((k) => t.label(k)).join(';'), t.total[i], Math.round(v.flame.rectOf(i).x)]);
    return out.sort((a, b) => a[2] - b[2] || a[0].length - b[0].length);
  });
  const w = await page.evaluate(() => kflameViewer.flame.width / kflameViewer.tree.total[0]);
  assert.deepEqual(drawn.map(([p, t]) => [p, t]),
    [['main', 8], ['main;read', 2], ['main;compute', 5], ['main;read', 1], ['idle', 3]]);
  assert.equal(drawn[2][2], Math.round(2 * w));
  assert.equal(await page.title(), 'Flame Chart');
  assert.deepEqual(problems, []);
  await page.close();
});

test('frames narrower than a pixel are drawn merged, with their weight in the tooltip', async () => {
  const lines = ['main;big 6000'];
  for (let i = 0; i < 2000; i++) lines.push(`main;tiny_${String(i).padStart(4, '0')} 1`);
  const input = writeText(dir, 'tiny.folded', lines.join('\n') + '\n');
  const html = join(dir, 'tiny.html');
  kflame(['flamegraph', '--format', 'html', input, '-o', html]);
  const { page, problems } = await open(html);
  const drawn = await page.evaluate(() => kflameViewer.flame.items.node.length);
  assert.equal(drawn, 3, 'all, main and big are drawn; the 2000 tiny frames are not');
  const big = await page.evaluate(() => kflameViewer.flame.rectOf(kflameViewer.nodeByPath(['main', 'big'])));
  const box = await page.locator('.kf-flame canvas').boundingBox();
  // big is drawn first (name order); the merged run of tiny frames follows it.
  await page.mouse.move(box.x + big.x + big.w + 40, box.y + big.y + big.h / 2);
  const tip = await page.locator('.kf-tooltip').innerText();
  assert.match(tip, /^2000 frames too narrow to draw/);
  assert.ok(tip.includes('2,000 samples') && tip.includes(pct(2000, 8000) + ' of total'), tip);
  assert.deepEqual(problems, []);
  await page.close();
});

test('a bytes profile shows KiB and MiB', async () => {
  const stacks = folded(BYTES), total = sum(stacks);
  const html = join(dir, 'bytes.html');
  kflame(['flamegraph', '--format', 'html', BYTES, '-o', html]);
  const { page, problems } = await open(html);
  const tip = await hover(page, []);
  assert.ok(tip.includes('MiB (' + group(total) + ' bytes)'), tip);
  assert.ok(tip.includes('100.00% of total'), tip);
  await page.click('button[data-view=top]');
  const text = await page.locator('.kf-top tbody').innerText();
  assert.match(text, /4\.00 KiB/);
  assert.match(text, /MiB/);
  await screenshot(page, 'html-bytes');
  assert.deepEqual(problems, []);
  await page.close();
});

test('hostile symbols, title and notes stay text and run no script', async () => {
  const input = writeText(dir, 'hostile.folded', `main;${HOSTILE};leaf 3\nmain;${HOSTILE2} 2\n`);
  const html = join(dir, 'hostile.html');
  kflame(['flamegraph', '--format', 'html', input, '--title', HOSTILE, '--notes', HOSTILE2, '-o', html]);
  const { page, problems } = await open(html);
  assert.equal(await page.locator('.kf-title').innerText(), HOSTILE);
  assert.equal(await page.locator('.kf-notes').innerText(), HOSTILE2);
  assert.equal(await page.title(), HOSTILE);
  const tip = await hover(page, ['main', HOSTILE]);
  assert.equal(tip.split('\n')[0], HOSTILE);
  await click(page, ['main', HOSTILE2]);
  assert.equal(await page.locator('.kf-sel-name').innerText(), HOSTILE2);
  await page.click('button[data-view=top]');
  const names = await page.locator('.kf-top td.kf-fn').allInnerTexts();
  assert.ok(names.includes(HOSTILE) && names.includes(HOSTILE2), names.join(' | '));
  await page.locator('.kf-top tbody tr', { hasText: HOSTILE }).first().click();
  assert.equal(await page.locator('.kf-sandwich h2').first().innerText(), 'Callers of ' + HOSTILE);
  await screenshot(page, 'html-hostile');
  assert.equal(await page.evaluate(() => document.scripts.length), 3);
  assert.equal(await page.evaluate(() => globalThis.__pwned), undefined);
  assert.deepEqual(problems, []);
  await page.close();
});

test('an empty input gives a page that says so', async () => {
  const input = writeText(dir, 'empty.folded', '');
  const html = join(dir, 'empty.html');
  kflame(['flamegraph', '--format', 'html', input, '-o', html]);
  const { page, problems } = await open(html);
  assert.match(await page.locator('.kf-empty').innerText(), /No samples/);
  assert.deepEqual(problems, []);
  await page.close();
});
