// Shared harness of the browser tests: where things are, running kflame, launching
// Debian's Chromium headless through playwright-core with a fresh profile.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

/** Workspace root (two levels above this file). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The binary under test: $KFLAME_BIN or target/debug/kflame. */
export const KFLAME_BIN = process.env.KFLAME_BIN || path.join(ROOT, "target", "debug", "kflame");

/** The browser: $KFLAME_CHROMIUM or Debian's /usr/bin/chromium. */
export const CHROMIUM = process.env.KFLAME_CHROMIUM || "/usr/bin/chromium";

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A fixture of the library's test data. */
export function fixture(...parts) {
  return path.join(ROOT, "crates", "kflame", "tests", "data", ...parts);
}

/** A fresh directory under target/ for files a test writes. */
export function outDir(name) {
  const dir = path.join(ROOT, "target", name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Where screenshots go (target/browser-screenshots/NAME.png). */
export function screenshotPath(name) {
  return path.join(outDir("browser-screenshots"), `${name}.png`);
}

/** Runs kflame; throws with its stderr when it fails. */
export function kflame(args, input) {
  const r = spawnSync(KFLAME_BIN, args, { input, maxBuffer: 1 << 30 });
  if (r.error) throw new Error(`cannot run ${KFLAME_BIN}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`kflame ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return { stdout: r.stdout, stderr: r.stderr.toString() };
}

/** Renders `args` with `kflame flamegraph` into target/browser-out/NAME and returns its file URL. */
export function renderTo(name, args) {
  const file = path.join(outDir("browser-out"), name);
  kflame(["flamegraph", ...args, "-o", file]);
  return pathToFileURL(file).href;
}

/**
 * Launches headless Chromium with a fresh user-data-dir. Returns the browser context and a
 * `close()` that also removes the profile directory.
 */
export async function launchBrowser() {
  const profile = mkdtempSync(path.join(tmpdir(), "kflame-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A new page that records page errors, console errors and dialogs (none expected). */
export async function watchedPage(context) {
  const page = await context.newPage();
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
