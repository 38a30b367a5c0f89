// The scatter page of 1M events in headless Chromium (Debian's, through tests/browser's
// playwright-core): first paint (navigation to the first frame showing the points), pan and
// zoom frames per second (each frame moves or scales the view and redraws every point, 120
// frames on requestAnimationFrame), and a box selection's flame graphs (the selection's and
// that of every visible event, both built and drawn), median of 5.
// Usage: node scatter.mjs PAGE.html
import { pathToFileURL } from 'node:url';
import { chromium } from '../tests/browser/node_modules/playwright-core/index.mjs';

const [file] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: process.env.KFLAME_CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu'] });
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
const errors = [];
page.on('pageerror', (e) => errors.push(e.message));
const paints = [];
for (let k = 0; k < 3; k++) {
  await page.goto(pathToFileURL(file).href, { timeout: 120000 });
  await page.waitForFunction(() => globalThis.kflameScatter && kflameScatter.timings.painted, null, { timeout: 120000 });
  paints.push(await page.evaluate(() => kflameScatter.timings));
}
paints.sort((a, b) => a.painted - b.painted);
const n = await page.evaluate(() => kflameScatter.n);
const frames = await page.evaluate(() => new Promise((done) => {
  const v = kflameScatter, base = { ...v.view }, w = base.x1 - base.x0, draws = [];
  let k = 0;
  const t0 = performance.now();
  const step = () => {
    const f = k % 40 < 20 ? 1 - 0.02 * (k % 20) : 0.6 + 0.02 * (k % 20), shift = (k % 7) * 0.01 * w;
    const c = (base.x0 + base.x1) / 2 + shift;
    v.state.view = { ...base, x0: c - (w / 2) * f, x1: c + (w / 2) * f };
    const s = performance.now();
    v.draw();
    draws.push(performance.now() - s);
    if (++k < 120) requestAnimationFrame(step);
    else done({ fps: (120 * 1000) / (performance.now() - t0), drawMs: draws.sort((a, b) => a - b)[60] });
  };
  requestAnimationFrame(step);
}));
const sel = [];
for (let k = 0; k < 5; k++) {
  sel.push(await page.evaluate(() => {
    const v = kflameScatter, b = v.fullView();
    v.clearSelection();
    v.select({ box: [b.x0 + (b.x1 - b.x0) * 0.2, b.x0 + (b.x1 - b.x0) * 0.7, b.y0, b.y1] });
    return { ms: v.timings.selection, count: v.selection.count };
  }));
}
sel.sort((a, b) => a.ms - b.ms);
await browser.close();
const p = paints[1];
console.log(`${n} points: first paint ${p.painted.toFixed(0)} ms after navigation (target <= 1500 ms; data decoded in ${p.decode.toFixed(0)} ms, first draw done ${p.firstDraw.toFixed(0)} ms after the script started), median of 3`);
console.log(`pan/zoom: ${frames.fps.toFixed(1)} frames/s over 120 frames redrawing every point (target >= 30), median frame drawn in ${frames.drawMs.toFixed(1)} ms`);
console.log(`box selection of ${sel[2].count} events: both flame graphs built and drawn in ${sel[2].ms.toFixed(0)} ms median of 5 (target <= 300 ms)`);
if (errors.length) { console.log('page errors: ' + errors.join('; ')); process.exit(1); }
