// The page of a kflame serve in headless Chromium (Debian's, through tests/browser's
// playwright-core): first paint (navigation to the frame that shows the charts, and the flame graph) with the last
// 24 h shown (median of 3 fresh pages), and the time from releasing the brush after moving a 1 h selection to the new
// flame graph drawn, median of 5. Usage: node serve-page.mjs BASE TOKEN
import { chromium } from '../tests/browser/node_modules/playwright-core/index.mjs';

const [base, token] = process.argv.slice(2);
if (!base.startsWith('http://127.')) throw new Error('loopback only: ' + base);
const browser = await chromium.launch({ executablePath: process.env.KFLAME_CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu'] });
const errors = [];
// First paint: three fresh pages (a new context each: no cache, no cookie), the median.
const paints = [];
let page;
for (let k = 0; k < 3; k++) {
  if (page) await page.context().close();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${base}/?token=${token}`);
  // Times of the frames that put the charts and the flame graph on the screen (the page
  // records them a task after the animation frame that follows their drawing).
  await page.waitForFunction(() => globalThis.kflameServe && kflameServe.S.chartsAt && kflameServe.S.flameAt,
    null, { timeout: 30000 });
  paints.push(await page.evaluate(() => ({ charts: kflameServe.S.chartsAt, flame: kflameServe.S.flameAt })));
}
paints.sort((a, b) => a.charts - b.charts);
const paint = paints[1];
const hours = await page.evaluate(() => (kflameServe.S.view.to - kflameServe.S.view.from) / 3600e3);
// A 1 h selection at the end of the view.
const end = await page.evaluate(() => kflameServe.S.view.to);
await page.goto(`${base}/?vfrom=${end - 86400e3}&vto=${end}&from=${end - 3 * 3600e3}&to=${end - 2 * 3600e3}`);
await page.waitForFunction(() => globalThis.kflameServe && kflameServe.S.loaded > 0 && kflameServe.S.chartsLoaded > 0, null, { timeout: 30000 });
const times = [];
for (let k = 0; k < 5; k++) {
  const { x, y, n } = await page.evaluate(() => {
    const { S, D } = kflameServe, r = D.brush.overlay.getBoundingClientRect();
    return { x: r.left + D.brush.toX((S.range.from + S.range.to) / 2), y: r.top + 50, n: S.loaded };
  });
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(x - 10, y, { steps: 2 });
  const t0 = await page.evaluate(() => performance.now());
  await page.mouse.up();
  await page.waitForFunction((m) => kflameServe.S.loaded > m, n, { timeout: 30000 });
  times.push((await page.evaluate(() => performance.now())) - t0);
}
times.sort((a, b) => a - b);
console.log(`first paint with ${hours.toFixed(0)} h of metrics: charts on the screen ${paint.charts.toFixed(0)} ms after navigation, median of 3 fresh pages (runs ${paints.map((p) => p.charts.toFixed(0)).join(', ')}; target <= 1000 ms), ` +
  `flame graph of the default selection (last 15 min) ${paint.flame.toFixed(0)} ms`);
console.log(`brush moved over 1 h: flame graph redrawn in ${times[2].toFixed(0)} ms median (min ${times[0].toFixed(0)}, max ${times[4].toFixed(0)}; target <= 300 ms)`);
if (errors.length) { console.log('page errors: ' + errors.join('; ')); process.exitCode = 1; }
await browser.close();
