// How long headless Chromium takes to open an SVG written by kflame: navigation until the
// load event (parsing, layout, the embedded script's init) plus the first painted frame.
// Usage: node bench/svg-open.mjs FILE.svg [RUNS]   (prints one line per run and the median)
import path from "node:path";
import { pathToFileURL } from "node:url";
import { launchBrowser } from "../tests/browser/lib.mjs";

const file = process.argv[2];
const runs = Number(process.argv[3] || 5);
if (!file) {
  console.error("usage: node bench/svg-open.mjs FILE.svg [RUNS]");
  process.exit(2);
}
const url = pathToFileURL(path.resolve(file)).href;
const browser = await launchBrowser();
const times = [];
try {
  for (let i = 0; i < runs; i++) {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    const t0 = performance.now();
    await page.goto(url, { waitUntil: "load", timeout: 120000 });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const ms = performance.now() - t0;
    const frames = await page.$$eval("#frames > g", (g) => g.length);
    if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
    console.log(`run ${i + 1}: ${(ms / 1000).toFixed(3)} s (${frames} frames)`);
    times.push(ms);
    await page.close();
  }
} finally {
  await browser.close();
}
times.sort((a, b) => a - b);
console.log(`median: ${(times[Math.floor(times.length / 2)] / 1000).toFixed(3)} s over ${runs} runs`);
