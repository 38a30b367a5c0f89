// The picture of docs/serve.png (see serve-screenshot.sh): the page of a kflame serve on
// loopback showing its whole history (the CPU, memory, IO and PSI charts), with seconds
// FROM..TO after the history's start selected (default: the minute around the first CPU
// capture), and the flame graph of that selection below, as a PNG.
// Usage: node docs/serve-screenshot.mjs BASE TOKEN OUT.png [FROM TO]
import { chromium } from '../tests/browser/node_modules/playwright-core/index.mjs';

const [base, token, out, selFrom, selTo] = process.argv.slice(2);
if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(base)) throw new Error('loopback only: ' + base);
const browser = await chromium.launch({ executablePath: process.env.KFLAME_CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu'] });
const page = await browser.newPage({ viewport: { width: 1280, height: 1180 } });
const errors = [];
page.on('pageerror', (e) => errors.push(e.message));
const ready = () => page.waitForFunction(() => globalThis.kflameServe && kflameServe.S.loaded > 0 &&
  kflameServe.S.chartsLoaded > 0, null, { timeout: 60000 });
await page.goto(`${base}/?token=${token}`);
await ready();
const { from, to, sel } = await page.evaluate(async (given) => {
  const { S } = kflameServe, b = S.bounds;
  // The first metric read: the history's own start may be a block boundary before it.
  const first = (await (await fetch('/api/series?names=cpu.usr&label=&points=1')).json()).series[0].points[0][0] / 1e6;
  if (given) return { from: b.from, to: b.to, sel: { from: first + given[0] * 1e3, to: first + given[1] * 1e3 } };
  const ev = (await (await fetch(`/api/events`)).json()).events;
  const cap = ev.find((e) => e.type === 'capture' && e.kind === 'cpu');
  const at = cap ? cap.time / 1e6 : (b.from + b.to) / 2;
  return { from: b.from, to: b.to, sel: { from: at - 30e3, to: at + 30e3 } };
}, selFrom !== undefined ? [+selFrom, +selTo] : null);
const charts = 'cpu,mem,mem-util,io,io-util,psi';
await page.goto(`${base}/?vfrom=${Math.round(from)}&vto=${Math.round(to)}&from=${Math.round(sel.from)}&to=${Math.round(sel.to)}&charts=${charts}`);
await ready();
// Roots at the top (icicle), so that the widest frames show under the charts.
await page.getByRole('button', { name: 'Icicle' }).click();
// The cursor on the selection, so that the values at that instant show.
const box = await page.locator('.ks-chart[data-chart="cpu"]').boundingBox();
const x = await page.evaluate((t) => {
  const b = kflameServe.D.brush, r = b.overlay.getBoundingClientRect();
  return r.left + b.toX(t);
}, (sel.from + sel.to) / 2);
await page.mouse.move(x, box.y + box.height / 2);
await page.screenshot({ path: out });
if (errors.length) { console.error('page errors: ' + errors.join('; ')); process.exitCode = 1; }
await browser.close();
