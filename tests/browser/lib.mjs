// Shared helpers of the browser tests: the kflame binary, headless Chromium, screenshots.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';

/** The workspace root (two levels above this file). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The kflame binary under test. */
export const BIN = process.env.KFLAME_BIN || join(ROOT, 'target/debug/kflame');
/** Where screenshots go. */
export const SHOTS = join(ROOT, 'target/browser-screenshots');

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** Starts headless Chromium (`KFLAME_CHROMIUM` or /usr/bin/chromium) with a fresh profile.
 * Returns a browser context (`newPage()`, `close()`); closing it removes the profile. */
export async function launchBrowser() {
  const userDataDir = mkdtempSync(join(tmpdir(), 'kflame-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.KFLAME_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
  });
  const close = context.close.bind(context);
  context.close = async () => {
    await close();
    rmSync(userDataDir, { recursive: true, force: true });
  };
  return context;
}

/** A scratch directory removed at exit. */
export function scratch() {
  const dir = mkdtempSync(join(tmpdir(), 'kflame-browser-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs kflame with `args`; returns stderr. */
export function kflame(args, input) {
  return execFileSync(BIN, args, { input, stdio: ['pipe', 'pipe', 'pipe'], encoding: 'utf8' });
}

/** Writes `text` to `dir/name` and returns the path. */
export function writeText(dir, name, text) {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** Saves a full-page screenshot as target/browser-screenshots/NAME.png. */
export async function screenshot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, name + '.png'), fullPage: false });
}

/**
 * Starts `kflame serve ARGS --listen 127.0.0.1:0` (a free loopback port) and waits, 20 s at
 * most, for the URL it prints: `{ server, base, token, exited }`, `exited` resolving to the
 * process's `{ code, signal }`.
 */
export async function startServe(args) {
  const server = spawn(BIN, ['serve', ...args, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((ok) => server.on('exit', (code, signal) => ok({ code, signal })));
  const [base, token] = await new Promise((ok, fail) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/open (http:\/\/127\.0\.0\.1:\d+\/)\?token=(\S+)/);
      if (m) ok([m[1], m[2]]);
    });
    setTimeout(() => fail(new Error('kflame serve printed no URL: ' + out)), 20000);
  });
  return { server, base, token, exited };
}

/** Stops a server of `startServe` with SIGTERM: it must exit with status 0 within 10 s. */
export async function stopServe({ server, exited }, message) {
  server.kill('SIGTERM');
  const how = await Promise.race([exited, new Promise((ok) => setTimeout(() => ok('timeout'), 10000))]);
  assert.deepEqual(how, { code: 0, signal: null }, message);
}

/** The stacks of a folded file: [{frames, w}] (comment lines skipped). */
export function folded(path) {
  return readFileSync(path, 'utf8').split('\n').filter((l) => l && !l.startsWith('#')).map((l) => {
    const at = l.lastIndexOf(' ');
    return { frames: l.slice(0, at).split(';'), w: Number(l.slice(at + 1)) };
  });
}

/** The total weight of stacks. */
export const sum = (stacks) => stacks.reduce((a, s) => a + s.w, 0);

/** `part` as a percentage of `whole`, as the viewer prints it (`12.34%`). */
export const pct = (part, whole) => ((100 * part) / whole).toFixed(2) + '%';
