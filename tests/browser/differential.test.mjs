// Differential input (`stack BEFORE AFTER`, from `kflame diff`) in the HTML viewer: drawn red
// where a frame's own weight grew and blue where it shrank, as the SVG and flamegraph.pl do,
// with before/after/change in the tooltip and a legend saying what the colors mean. Expected
// figures are computed here from the diff output.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, kflame, launchBrowser, scratch, screenshot, writeText } from './lib.mjs';

const DIFF = join(ROOT, 'crates/kflame/tests/data/render/diff');
const PERF = join(ROOT, 'crates/kflame/tests/data/html/perf-script-report-stackcollapse.folded');

let browser, dir, diffText;

before(async () => {
  dir = scratch();
  diffText = kflame(['diff', join(DIFF, 'before.txt'), join(DIFF, 'after.txt')]);
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
});

/** Lines of a differential folded text: [{frames, before, after}]. */
function diffLines(text) {
  return text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => {
    const [b, a] = l.split(' ').slice(-2).map(Number);
    return { frames: l.split(' ').slice(0, -2).join(' ').split(';'), before: b, after: a };
  });
}

/** Every node of the merged stacks: path → {self and total, before and after}. */
function nodes(lines) {
  const out = new Map();
  for (const l of lines) {
    for (let d = 1; d <= l.frames.length; d++) {
      const key = l.frames.slice(0, d).join(';');
      const n = out.get(key) || { selfBefore: 0, selfAfter: 0, before: 0, after: 0 };
      n.before += l.before;
      n.after += l.after;
      if (d === l.frames.length) {
        n.selfBefore += l.before;
        n.selfAfter += l.after;
      }
      out.set(key, n);
    }
  }
  return out;
}

/** flamegraph.pl's differential scale: red for growth, blue for shrinkage, relative to the
 * largest change of a frame's own weight. */
function expectedColor(delta, max) {
  if (max === 0 || delta === 0) return 'rgb(255,255,255)';
  const fade = Math.floor(210 * (1 - Math.abs(delta) / max));
  return delta > 0 ? `rgb(255,${fade},${fade})` : `rgb(${fade},${fade},255)`;
}

const pct = (part, whole) => ((100 * part) / whole).toFixed(2) + '%';

async function open(path) {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  await page.goto(pathToFileURL(path).href);
  await page.waitForFunction(() => globalThis.kflameViewer);
  return { page, problems };
}

function page(name, args, input) {
  const html = join(dir, name);
  kflame(['flamegraph', '--format', 'html', ...args, input, '-o', html]);
  return html;
}

/** Colors of every node of the shown tree, by path. */
function colors(page) {
  return page.evaluate(() => {
    const v = kflameViewer, t = v.tree, out = {};
    for (let i = 1; i < t.n; i++) out[t.pathTo(i).slice(1).map((k) => t.label(k)).join(';')] = v.colorOf(i);
    return out;
  });
}

async function tooltip(page, frames) {
  const p = await page.evaluate((f) => kflameViewer.pointOf(kflameViewer.nodeByPath(f)), frames);
  assert.ok(p, frames.join(';') + ' is drawn');
  await page.mouse.move(p.x, p.y);
  return (await page.locator('.kf-tooltip').innerText()).split('\n');
}

test('red grew, blue shrank: every frame colored by the change of its own weight', async () => {
  const lines = diffLines(diffText), all = nodes(lines);
  const max = Math.max(...[...all.values()].map((n) => Math.abs(n.selfAfter - n.selfBefore)));
  const input = writeText(dir, 'diff.folded', diffText);
  const { page: p, problems } = await open(page('diff.html', [], input));
  const got = await colors(p);
  assert.deepEqual(Object.keys(got).sort(), [...all.keys()].sort());
  for (const [path, n] of all) assert.equal(got[path], expectedColor(n.selfAfter - n.selfBefore, max), path);
  assert.ok(Object.values(got).includes('rgb(255,0,0)') || Object.values(got).includes('rgb(0,0,255)'));

  const legend = await p.locator('.kf-legend').innerText();
  assert.match(legend, /grew/);
  assert.match(legend, /shrank/);
  assert.match(legend, /Differential graph: widths are the second column \(after\)/);

  // The frame that grew most, and one that shrank.
  const totalAfter = lines.reduce((a, l) => a + l.after, 0);
  const grown = [...all.entries()].sort((a, b) => (b[1].selfAfter - b[1].selfBefore) - (a[1].selfAfter - a[1].selfBefore))[0];
  const [path, n] = grown;
  let tip = await tooltip(p, path.split(';'));
  assert.ok(tip.includes(`before: ${n.before} samples → after: ${n.after} samples`), tip.join(' | '));
  const d = n.selfAfter - n.selfBefore;
  assert.ok(tip.includes(`self change: +${d} samples, +${pct(d, totalAfter)} of total`), tip.join(' | '));
  await screenshot(p, 'html-differential');
  const shrunk = [...all.entries()].find(([, m]) => m.after < m.before && m.after > 0);
  tip = await tooltip(p, shrunk[0].split(';'));
  const change = shrunk[1].after - shrunk[1].before;
  assert.ok(tip.includes(`change: ${change} samples (${pct(change, shrunk[1].before)})`), tip.join(' | '));

  // Focus, hide and the sandwich keep both columns.
  const kept = await p.evaluate(() => {
    const v = kflameViewer;
    v.transform('focus', 'name', 'write');
    const focused = [v.tree.total[0], v.tree.totalBefore[0]];
    v.undo();
    v.sandwich(v.tree.names.indexOf('fsnotify_[k]'));
    return { focused, callers: [v.callersTree.total[0], v.callersTree.totalBefore[0]] };
  });
  const through = (name) => lines.filter((l) => l.frames.includes(name));
  const sum = (ls, k) => ls.reduce((a, l) => a + l[k], 0);
  assert.deepEqual(kept.focused, [sum(through('write'), 'after'), sum(through('write'), 'before')]);
  assert.deepEqual(kept.callers, [sum(through('fsnotify_[k]'), 'after'), sum(through('fsnotify_[k]'), 'before')]);
  assert.deepEqual(problems, []);
  await p.close();
});

test('--negate swaps the hues and what is before and after', async () => {
  const lines = diffLines(diffText), all = nodes(lines);
  const max = Math.max(...[...all.values()].map((n) => Math.abs(n.selfAfter - n.selfBefore)));
  const input = writeText(dir, 'diff-neg.folded', diffText);
  const { page: p, problems } = await open(page('diff-neg.html', ['--negate'], input));
  const got = await colors(p);
  for (const [path, n] of all) assert.equal(got[path], expectedColor(n.selfBefore - n.selfAfter, max), path);
  assert.match(await p.locator('.kf-legend').innerText(), /negated/);
  const [path, n] = [...all.entries()].find(([, m]) => m.before > 0 && m.after > 0 && m.before !== m.after);
  const tip = await tooltip(p, path.split(';'));
  assert.ok(tip.includes(`before: ${n.after} samples → after: ${n.before} samples`), tip.join(' | '));
  assert.deepEqual(problems, []);
  await p.close();
});

test('a normalized differential (decimal weights) adds up', async () => {
  const text = kflame(['diff', '-n', join(DIFF, 'before.txt'), join(DIFF, 'after.txt')]);
  const lines = diffLines(text);
  const input = writeText(dir, 'diff-n.folded', text);
  const { page: p, problems } = await open(page('diff-n.html', [], input));
  const [after, beforeTotal] = await p.evaluate(() => [kflameViewer.tree.total[0], kflameViewer.tree.totalBefore[0]]);
  const sum = (k) => lines.reduce((a, l) => a + l[k], 0);
  assert.equal(after, sum('after'));
  assert.ok(Math.abs(beforeTotal - sum('before')) < 1e-6 && Math.abs(beforeTotal - after) < 1e-6, `${beforeTotal} vs ${after}`);
  assert.deepEqual(problems, []);
  await p.close();
});

test('plain input has no differential legend or change lines', async () => {
  const { page: p, problems } = await open(page('plain.html', [], PERF));
  assert.equal(await p.evaluate(() => kflameViewer.tree.before), null);
  assert.ok(await p.locator('.kf-legend').isHidden());
  const root = await p.evaluate(() => {
    const t = kflameViewer.tree;
    return t.label(t.kids[t.kidOff[0]]);
  });
  const tip = await tooltip(p, [root]);
  assert.ok(!tip.some((l) => l.startsWith('before:') || l.startsWith('change:')), tip.join(' | '));
  assert.deepEqual(problems, []);
  await p.close();
});
