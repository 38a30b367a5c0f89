// Measures (does not assert) how fast the HTML page of a large profile loads and reacts.
// Usage: node tests/browser/measure-large.mjs [FOLDED]   (default: the 287k-stack benchmark
// profile ../shared/bench/large-pid.folded.zst, decompressed with zstd). Set KFLAME_BIN to a
// release build for realistic page-writing times.
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import assert from 'node:assert/strict';
import { ROOT, kflame, launchBrowser, scratch } from './lib.mjs';

const RUNS = 3;
const dir = scratch();
let folded = process.argv[2];
if (!folded) {
  const zst = join(ROOT, '../shared/bench/large-pid.folded.zst');
  if (!existsSync(zst)) {
    console.log('note: ' + zst + ' is absent; pass a folded file');
    process.exit(0);
  }
  folded = join(dir, 'large.folded');
  execFileSync('zstd', ['-dqf', zst, '-o', folded]);
}
const html = join(dir, 'large.html');
let t = performance.now();
kflame(['flamegraph', '--format', 'html', folded, '-o', html]);
console.log(`kflame html: ${(performance.now() - t).toFixed(0)} ms, page ${(statSync(html).size / 1048576).toFixed(1)} MiB`);

const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const browser = await launchBrowser();
const rows = {};
const note = (k, v) => (rows[k] = rows[k] || []).push(v);
for (let run = 0; run < RUNS; run++) {
  const page = await browser.newPage();
  t = performance.now();
  await page.goto(pathToFileURL(html).href);
  await page.waitForFunction(() => globalThis.kflameViewer, null, { timeout: 120000 });
  const painted = await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now())))));
  note('goto until painted (wall, ms)', performance.now() - t);
  note('navigation start to first paint (ms)', painted);
  const tm = await page.evaluate(() => kflameViewer.timings);
  note('decode (ms)', tm.decode);
  note('decode + first draw (ms)', tm.firstDraw);
  const info = await page.evaluate(() => {
    const v = kflameViewer, t = v.tree;
    let best = -1;
    for (let k = t.kidOff[0]; k < t.kidOff[1]; k++) if (best < 0 || t.total[t.kids[k]] > t.total[best]) best = t.kids[k];
    return { nodes: t.n, names: t.names.length, best, path: t.pathTo(best).slice(1).map((i) => t.label(i)) };
  });
  const p = await page.evaluate((b) => kflameViewer.pointOf(b), info.best);
  await page.evaluate(() => {
    globalThis.clickToFrame = null;
    document.addEventListener('click', () => {
      const t0 = performance.now();
      requestAnimationFrame(() => { globalThis.clickToFrame = performance.now() - t0; });
    }, { capture: true, once: true });
  });
  t = performance.now();
  await page.mouse.click(p.x, p.y);
  await page.waitForFunction(() => globalThis.clickToFrame !== null);
  note('zoom click until next frame (wall, through the driver, ms)', performance.now() - t);
  note('zoom click event until next animation frame, in page (ms)', await page.evaluate(() => clickToFrame));
  assert(await page.evaluate((b) => kflameViewer.state.zoom === b, info.best), 'the click zoomed');
  note('zoom redraw in page (ms)', await page.evaluate(() => kflameViewer.timings.lastDraw));
  note('reset zoom in page (ms)', await page.evaluate(() => { const t0 = performance.now(); kflameViewer.zoom(0); return performance.now() - t0; }));
  note('search "ext4" in page (ms)', await page.evaluate(() => { const t0 = performance.now(); kflameViewer.search('ext4'); return performance.now() - t0; }));
  note('focus on a root frame in page (ms)', await page.evaluate((name) => { const t0 = performance.now(); kflameViewer.transform('focus', 'name', name); return performance.now() - t0; }, info.path[0]));
  note('top functions table in page (ms)', await page.evaluate(() => { kflameViewer.undo(); const t0 = performance.now(); kflameViewer.showView('top'); return performance.now() - t0; }));
  if (run === 0) console.log(`tree: ${info.nodes} nodes, ${info.names} names; zoomed on ${info.path.join(';')}`);
  await page.close();
}
await browser.close();
for (const [k, v] of Object.entries(rows)) console.log(`${k}: median ${median(v).toFixed(0)} (runs: ${v.map((x) => x.toFixed(0)).join(', ')})`);
