// The HTML viewer on stacks tens of thousands of frames deep (runaway recursion): every walk
// of the tree (layout, colours, search, focus, hide, sandwich, top functions, tooltip) must
// cope without exhausting the JavaScript call stack, as the SVG does.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { kflame, launchBrowser, scratch, screenshot, writeText } from './lib.mjs';

let browser, dir;

before(async () => {
  dir = scratch();
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
});

/** A profile with one stack `depth` frames deep (a function recursing on itself), one half as
 * deep made of distinct functions, and a shallow one. */
function deepProfile(depth) {
  const recursive = ['main', 'run', ...Array(depth - 3).fill('recurse'), 'leaf'];
  const distinct = ['main', ...Array.from({ length: depth / 2 - 1 }, (_, i) => 'level_' + i)];
  const stacks = [
    { frames: recursive, w: 7 },
    { frames: distinct, w: 3 },
    { frames: ['main', 'shallow'], w: 2 },
  ];
  return { stacks, text: stacks.map((s) => s.frames.join(';') + ' ' + s.w).join('\n') + '\n' };
}

/** Frames of the merged stacks (equal prefixes merged), the root included. */
function nodeCount(stacks) {
  const ids = new Map();
  for (const s of stacks) {
    let at = 0;
    for (const f of s.frames) {
      const key = at + '\0' + f;
      if (!ids.has(key)) ids.set(key, ids.size + 1);
      at = ids.get(key);
    }
  }
  return ids.size + 1;
}

const pct = (part, whole) => ((100 * part) / whole).toFixed(2) + '%';

async function open(path) {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  await page.goto(pathToFileURL(path).href);
  await page.waitForFunction(() => globalThis.kflameViewer || document.querySelector('#kflame').childElementCount === 0,
    null, { timeout: 60000 });
  return { page, problems };
}

for (const depth of [10000, 50000]) {
  test(`a stack ${depth} frames deep is drawn and every view works`, { timeout: 240000 }, async () => {
    const { stacks, text } = deepProfile(depth);
    const total = stacks.reduce((a, s) => a + s.w, 0);
    const input = writeText(dir, `deep-${depth}.folded`, text);
    const html = join(dir, `deep-${depth}.html`);
    kflame(['flamegraph', '--format', 'html', '--colors', 'kernel', input, '-o', html]);
    const { page, problems } = await open(html);
    assert.deepEqual(problems, [], 'the page loads without errors');
    assert.ok(await page.evaluate(() => !!globalThis.kflameViewer), 'the viewer started');

    // Layout: every frame of the deep stacks is wide enough to be drawn.
    const shape = await page.evaluate(() => {
      const v = kflameViewer, t = v.tree;
      return { maxDepth: t.maxDepth, drawn: v.flame.items.node.length, total: t.total[0] };
    });
    assert.equal(shape.maxDepth, depth);
    assert.equal(shape.total, total);
    const frames = nodeCount(stacks);
    assert.equal(shape.drawn, frames, 'every frame of the merged stacks, and the root');

    // Sharp at any depth: the canvas covers the rows in view at full resolution, and
    // scrolling paints the rows that come into view.
    const band = () => page.evaluate(() => {
      const box = document.querySelector('.kf-flame'), c = box.querySelector('canvas'), v = kflameViewer.flame;
      return { canvas: c.height, css: parseFloat(c.style.height), dpr: devicePixelRatio, view: box.clientHeight,
        scroll: box.scrollHeight, full: v.height, top: box.scrollTop, painted: v.painted.top };
    });
    let b = await band();
    assert.equal(b.scroll, b.full, 'the box scrolls over the whole graph');
    assert.equal(b.canvas, Math.round(b.css * b.dpr), 'no downscaled canvas');
    assert.ok(b.css <= b.view, 'only the rows in view are painted');
    assert.equal(b.painted, b.top);
    await page.evaluate(() => { document.querySelector('.kf-flame').scrollTop = 0; });
    await page.waitForFunction(() => kflameViewer.flame.painted.top === 0);
    b = await band();
    assert.equal(b.canvas, Math.round(b.css * b.dpr));
    await screenshot(page, `html-deep-${depth}-top`);

    // Tooltip of the deepest frame, after zooming to it (the view scrolls there).
    const leafPath = stacks[0].frames;
    const leaf = await page.evaluate((p) => kflameViewer.nodeByPath(p), leafPath);
    assert.ok(leaf > 0);
    await page.evaluate((i) => kflameViewer.zoom(i), leaf);
    const p = await page.evaluate((i) => kflameViewer.pointOf(i), leaf);
    assert.ok(p && p.y > 0 && p.y < 900, 'the zoomed frame is in view: ' + JSON.stringify(p));
    await page.mouse.move(p.x, p.y);
    const tip = await page.locator('.kf-tooltip').innerText();
    assert.equal(tip.split('\n')[0], 'leaf');
    assert.ok(tip.includes('7 samples') && tip.includes(pct(7, total) + ' of total'), tip);
    await screenshot(page, `html-deep-${depth}-leaf`);
    await page.keyboard.press('Escape');

    // Search: the recursive function is matched once per stack, not once per frame.
    await page.fill('.kf-search', '^recurse$');
    await page.press('.kf-search', 'Enter');
    assert.equal(await page.locator('.kf-matched').innerText(), 'Matched: ' + pct(7, total) + ' (7 samples)');

    // Focus and hide on the recursive function, then undo.
    const after = await page.evaluate(() => {
      const v = kflameViewer, out = {};
      v.transform('focus', 'name', 'recurse');
      out.focused = [v.tree.total[0], v.tree.maxDepth];
      v.undo();
      v.transform('hide', 'name', 'recurse');
      out.hidden = [v.tree.total[0], v.tree.maxDepth];
      v.undo();
      v.transform('hide', 'regex', '^level_');
      out.hiddenLevels = [v.tree.total[0], v.tree.maxDepth];
      v.undo();
      out.restored = [v.tree.total[0], v.tree.maxDepth];
      return out;
    });
    assert.deepEqual(after.focused, [7, depth - 2], 'focus re-roots at the outermost recurse');
    assert.deepEqual(after.hidden, [total, depth / 2], 'main;run;leaf once recurse is hidden: the distinct chain is deepest');
    assert.deepEqual(after.hiddenLevels, [total, depth]);
    assert.deepEqual(after.restored, [total, depth]);

    // Sandwich of the leaf: its callers are the whole chain above it.
    await page.evaluate(() => kflameViewer.sandwich(kflameViewer.tree.names.indexOf('leaf')));
    const sandwich = await page.evaluate(() => {
      const v = kflameViewer;
      return { callers: [v.callersTree.total[0], v.callersTree.maxDepth, v.callersView.items.node.length],
        callees: [v.calleesTree.total[0], v.calleesTree.maxDepth] };
    });
    assert.deepEqual(sandwich.callers.slice(0, 2), [7, depth - 1]);
    assert.equal(sandwich.callers[2], depth, 'the callers view draws the whole chain');
    assert.deepEqual(sandwich.callees, [7, 0]);
    await screenshot(page, `html-deep-${depth}-sandwich`);

    // Top functions: recursion counted once in the total.
    await page.click('button[data-view=top]');
    const rows = await page.locator('.kf-top tbody tr').allInnerTexts();
    const row = (name) => rows.find((r) => r.split('\t')[0] === name).split('\t');
    assert.deepEqual(row('recurse').slice(1), ['0 samples', '0.00%', '7 samples', pct(7, total)]);
    assert.deepEqual(row('leaf').slice(1), ['7 samples', pct(7, total), '7 samples', pct(7, total)]);

    // Icicle and left-heavy redraw the deep graph.
    await page.click('button[data-view=flame]');
    await page.keyboard.press('i');
    await page.keyboard.press('l');
    assert.equal(await page.evaluate(() => kflameViewer.flame.items.node.length), frames);
    assert.deepEqual(problems, []);
    await page.close();
  });
}

test('a deep flame chart is drawn too', { timeout: 120000 }, async () => {
  const { text } = deepProfile(20000);
  const input = writeText(dir, 'deep-chart.folded', text);
  const html = join(dir, 'deep-chart.html');
  kflame(['flamegraph', '--format', 'html', '--flamechart', input, '-o', html]);
  const { page, problems } = await open(html);
  assert.deepEqual(problems, []);
  assert.equal(await page.evaluate(() => kflameViewer.tree.maxDepth), 20000);
  await page.close();
});
