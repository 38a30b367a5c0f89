// The report panel of a kflame serve in headless Chromium (Debian's, through tests/browser's
// playwright-core): the time from a click on a kernel report's marker to its panel drawn with
// its analysis, "seen before" and the flame graph of the minute before it (the viewer's
// redraw), for ROUNDS reports of the view, median and worst; and the Reports view of the
// whole history from its button to its table. Usage: node serve-report-page.mjs BASE TOKEN [ROUNDS]
import { chromium } from '../tests/browser/node_modules/playwright-core/index.mjs';

const [base, token, roundsArg] = process.argv.slice(2);
if (!base.startsWith('http://127.')) throw new Error('loopback only: ' + base);
const rounds = Number(roundsArg || 9);
const browser = await chromium.launch({ executablePath: process.env.KFLAME_CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu'] });
const errors = [];
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
page.on('pageerror', (e) => errors.push(e.message));
await page.goto(`${base}/?token=${token}`);
await page.waitForFunction(() => globalThis.kflameServe && kflameServe.S.loaded > 0 && kflameServe.S.chartsLoaded > 0, null, { timeout: 30000 });
// The whole history in view, so that every report has a marker.
const { from, to } = await page.evaluate(() => kflameServe.S.bounds);
await page.goto(`${base}/?vfrom=${from}&vto=${to}&from=${to - 3600e3}&to=${to}`);
await page.waitForFunction(() => globalThis.kflameServe && kflameServe.S.loaded > 0 && kflameServe.S.chartsLoaded > 0, null, { timeout: 30000 });
const markers = await page.locator('.ks-m-report').count();
if (markers === 0) throw new Error('no report markers in the view');
const times = [];
for (let k = 0; k < rounds; k++) {
  const i = Math.floor(((k + 0.5) * markers) / rounds);
  const n = await page.evaluate(() => kflameServe.S.loaded);
  const marker = page.locator('.ks-m-report').nth(i);
  const ns = await marker.evaluate((m) => kflameServe.S.events[+m.dataset.k].ns);
  const t0 = await page.evaluate(() => performance.now());
  await marker.click();
  await page.waitForFunction(([m, want]) => {
    const { S, D } = kflameServe;
    return S.loaded > m && S.reportPanel.report && S.reportPanel.report.ns === want && !D.report.hidden;
  }, [n, ns], { timeout: 30000 });
  // The frame that shows it: a task after the next animation frame.
  const t1 = await page.evaluate(() => new Promise((ok) => requestAnimationFrame(() => setTimeout(() => ok(performance.now()), 0))));
  times.push(t1 - t0);
}
times.sort((a, b) => a - b);
const analysed = await page.evaluate(() => !!kflameServe.S.reportPanel.report.analysis);
console.log(`report panel after a click (${markers} reports in view): median ${times[Math.floor(times.length / 2)].toFixed(0)} ms, ` +
  `min ${times[0].toFixed(0)}, max ${times[times.length - 1].toFixed(0)} over ${rounds} reports; analysis shown: ${analysed} (target <= 300 ms)`);
// The Reports view of the whole history.
await page.goto(`${base}/?vfrom=${from}&vto=${to}&from=${from}&to=${to}`);
await page.waitForFunction(() => globalThis.kflameServe && kflameServe.S.chartsLoaded > 0, null, { timeout: 30000 });
const t0 = await page.evaluate(() => performance.now());
await page.click('.ks-reports');
await page.waitForSelector('.ks-rv-group', { timeout: 30000 });
const t1 = await page.evaluate(() => performance.now());
const groups = await page.locator('.ks-rv-group').count();
console.log(`Reports view of the whole history: ${groups} groups drawn ${(t1 - t0).toFixed(0)} ms after the click`);
if (errors.length) { console.log('page errors: ' + errors.join('; ')); process.exitCode = 1; }
await browser.close();
