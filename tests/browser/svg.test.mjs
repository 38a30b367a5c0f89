// The interactive SVG of `kflame flamegraph` in headless Chromium: zoom, tooltips with
// percentages of the total and of the zoomed frame, regex search with "Matched", URL state,
// and hostile symbols that stay text.
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, test } from "node:test";
import { ROOT, kflame, launchBrowser, scratch, screenshot, writeText } from "./lib.mjs";

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

const dir = scratch();

/** A fixture of the library's rendering test data. */
function fixture(...parts) {
  return join(ROOT, "crates", "kflame", "tests", "data", "render", ...parts);
}

/** Renders with `kflame flamegraph ARGS` into the scratch directory; returns the file URL. */
function renderTo(name, args) {
  const file = join(dir, name);
  kflame(["flamegraph", ...args, "-o", file]);
  return pathToFileURL(file).href;
}

/** A new page that records page errors, console errors and dialogs (none expected, unless
 * the test sets `page.expectDialog` to answer one). */
async function watchedPage() {
  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
  page.on("dialog", (d) => {
    if (page.expectDialog) return page.expectDialog(d);
    problems.push(`unexpected dialog: ${d.type()} ${d.message()}`);
    return d.dismiss();
  });
  return { page, problems };
}

// Frames as the page holds them: name, exact x/w (weight units), depth from y.
async function readFrames(page) {
  return page.evaluate(() => {
    const NS = "urn:kflame:flamegraph";
    const groups = [...document.querySelectorAll("#frames > g")];
    const raw = groups.map((g) => {
      const r = g.querySelector("rect");
      const t = g.querySelector("title").textContent;
      return { name: t.substring(0, t.lastIndexOf(" (")), title: t,
        x: +r.getAttributeNS(NS, "x"), w: +r.getAttributeNS(NS, "w"), y: +r.getAttribute("y") };
    });
    const rootY = Math.max(...raw.map((f) => f.y));
    raw.forEach((f, i) => { f.depth = Math.round((rootY - f.y) / 16); f.index = i; });
    return raw;
  });
}

// Sizes the viewport to the whole SVG (full-page capture does not work on SVG documents).
async function fitViewport(page) {
  const size = await page.evaluate(() => {
    const vb = document.documentElement.viewBox.baseVal;
    return { width: Math.ceil(vb.width), height: Math.ceil(vb.height) };
  });
  await page.setViewportSize(size);
}

const shoot = screenshot;

function pct(part, whole) { return (100 * part / whole).toFixed(2); }

// Share of [lo, hi) covered by frames whose name matches, nested matches counted once.
function matchedShare(frames, re, lo, hi) {
  const spans = frames.filter((f) => re.test(f.name)).map((f) => [f.x, f.x + f.w]).sort((a, b) => a[0] - b[0]);
  let covered = 0, end = lo;
  for (const [a0, b0] of spans) {
    const a = Math.max(a0, end), b = Math.min(b0, hi);
    if (b > a) { covered += b - a; end = b; }
  }
  return pct(covered, hi - lo);
}

const frameSel = (i) => `#frames > g:nth-of-type(${i + 1}) > rect`;

test("zoom, tooltips, search and URL state on a real capture", async () => {
  const url = renderTo("cpu.svg", ["--colors", "kernel", fixture("perf-sys-cpuclock.folded")]);
  const { page, problems } = await watchedPage();
  await page.goto(url);
  await fitViewport(page);
  const frames = await readFrames(page);
  const root = frames.find((f) => f.depth === 0);
  assert.ok(frames.length > 100, `a real graph has many frames, got ${frames.length}`);

  // The widest frame two levels down, and its widest child.
  const target = frames.filter((f) => f.depth === 2).sort((a, b) => b.w - a.w)[0];
  const child = frames.filter((f) => f.depth === 3 && f.x >= target.x && f.x + f.w <= target.x + target.w)
    .sort((a, b) => b.w - a.w)[0];
  assert.ok(target && child, "a frame with a child");

  await page.click(frameSel(target.index));
  assert.equal(await page.getAttribute(frameSel(target.index), "width"), "100.0000%");
  assert.equal(await page.getAttribute("#unzoom", "class"), "");
  const hidden = await page.$$eval("#frames > g.hide", (g) => g.length);
  assert.ok(hidden > 0, "frames outside the zoomed one are hidden");
  assert.match(page.url(), /#zoom=/);

  await page.hover(frameSel(child.index));
  const details = await page.textContent("#details");
  assert.ok(details.includes(`${pct(child.w, root.w)}% of total`), details);
  assert.ok(details.includes(`${pct(child.w, target.w)}% of zoomed`), details);
  const tip = await page.textContent("#tooltip text");
  assert.ok(tip.includes(`${pct(child.w, target.w)}% of zoomed`) && tip.includes(child.name), tip);
  assert.equal(await page.getAttribute("#tooltip", "class"), "");

  // Search by regex inside the zoom; "Matched" is relative to the zoomed frame.
  page.expectDialog = (d) => d.accept("^(entry_SYSCALL|do_syscall)");
  await page.click("#search");
  const re = /^(entry_SYSCALL|do_syscall)/;
  const matched = await page.textContent("#matched");
  assert.equal(matched, `Matched: ${matchedShare(frames, re, target.x, target.x + target.w)}%`);

  // Case-insensitive toggle: an upper-case pattern matches only with it.
  await page.click("#search"); // reset
  page.expectDialog = (d) => d.accept("^LEAF_");
  await page.click("#search");
  assert.equal(await page.textContent("#matched"), "Matched: 0.00%");
  await page.click("#ignorecase");
  const ci = matchedShare(frames, /^LEAF_/i, target.x, target.x + target.w);
  assert.notEqual(ci, "0.00", "the case-insensitive pattern matches");
  assert.equal(await page.textContent("#matched"), `Matched: ${ci}%`);
  assert.match(page.url(), /#zoom=[^&]+&s=%5ELEAF_&i=1$/);
  await page.hover(frameSel(child.index));
  await shoot(page, "svg-zoom-search");

  // The URL alone restores zoom and search.
  const saved = page.url();
  const fresh = await browser.newPage();
  await fresh.goto(saved);
  assert.equal(await fresh.getAttribute(frameSel(target.index), "width"), "100.0000%");
  assert.equal(await fresh.textContent("#matched"), `Matched: ${ci}%`);
  await fresh.close();

  // Clicking the root resets the zoom.
  await page.click(frameSel(root.index));
  assert.equal(await page.getAttribute("#unzoom", "class"), "hide");
  const rootTip = await page.textContent("#details");
  assert.ok(rootTip.includes("100.00% of total") && !rootTip.includes("of zoomed"), rootTip);
  assert.equal(await page.getAttribute(frameSel(target.index), "width"), `${(100 * target.w / root.w).toFixed(4)}%`);
  await shoot(page, "svg-full");
  assert.deepEqual(problems, []);
  await page.close();
});

test("weights in bytes are shown as KiB", async () => {
  const url = renderTo("bytes.svg", [fixture("bad-lines.folded")]);
  const { page, problems } = await watchedPage();
  await page.goto(url);
  await fitViewport(page);
  const frames = await readFrames(page);
  const alloc = frames.find((f) => f.name === "__alloc_pages");
  await page.hover(frameSel(alloc.index));
  assert.match(await page.textContent("#details"), /^Function: __alloc_pages \(4\.00 KiB, 99\.88% of total\)$/);
  assert.deepEqual(problems, []);
  await page.close();
});

test("hostile symbols render as text and run nothing", async () => {
  const url = renderTo("hostile.svg", ["--title", "<script>alert(3)</script>", fixture("hostile.folded")]);
  const { page, problems } = await watchedPage();
  await page.goto(url);
  await fitViewport(page);
  const frames = await readFrames(page);
  assert.ok(frames.some((f) => f.name === "</text><script>alert(1)</script>"), "the symbol is a title text");
  assert.equal(await page.textContent("#title"), "<script>alert(3)</script>");
  assert.equal(await page.$$eval("script", (s) => s.length), 1, "only kflame's script element");
  for (const f of frames) await page.hover(frameSel(f.index));
  await page.waitForTimeout(200);
  assert.deepEqual(problems, [], "no alert dialog, no error");
  await shoot(page, "svg-hostile");
  await page.close();
});

test("differential graph: red grows, blue shrinks, change in the tooltip", async () => {
  const diff = kflame(["diff", fixture("diff", "before.txt"), fixture("diff", "after.txt")]);
  const file = writeText(dir, "diff.folded", diff);
  const url = renderTo("diff.svg", ["--title", "before -> after", file]);
  const { page, problems } = await watchedPage();
  await page.goto(url);
  await fitViewport(page);
  const frames = await readFrames(page);
  const grew = frames.find((f) => f.name === "__fget_light");
  const fill = await page.getAttribute(frameSel(grew.index), "fill");
  assert.equal(fill, "rgb(255,0,0)", "the largest growth is pure red");
  await page.hover(frameSel(grew.index));
  assert.match(await page.textContent("#details"), /__fget_light \(12 samples, 15\.00% of total, \+15\.00% change\)/);
  await shoot(page, "svg-differential");
  assert.deepEqual(problems, []);
  await page.close();
});

test("icicle graph zooms the same way", async () => {
  const url = renderTo("icicle.svg", ["--inverted", fixture("perf-sys-cpuclock.folded")]);
  const { page, problems } = await watchedPage();
  await page.goto(url);
  await fitViewport(page);
  const frames = await page.evaluate(() => {
    const NS = "urn:kflame:flamegraph";
    const raw = [...document.querySelectorAll("#frames > g")].map((g, index) => {
      const r = g.querySelector("rect");
      return { index, x: +r.getAttributeNS(NS, "x"), w: +r.getAttributeNS(NS, "w"), y: +r.getAttribute("y") };
    });
    const rootY = Math.min(...raw.map((f) => f.y));
    raw.forEach((f) => { f.depth = Math.round((f.y - rootY) / 16); });
    return raw;
  });
  const target = frames.filter((f) => f.depth === 2).sort((a, b) => b.w - a.w)[0];
  const parent = frames.find((f) => f.depth === 1 && f.x <= target.x && f.x + f.w >= target.x + target.w);
  await page.click(frameSel(target.index));
  assert.equal(await page.getAttribute(frameSel(target.index), "width"), "100.0000%");
  assert.equal(await page.getAttribute(`#frames > g:nth-of-type(${parent.index + 1})`, "class"), "parent");
  await shoot(page, "svg-icicle-zoom");
  assert.deepEqual(problems, []);
  await page.close();
});
