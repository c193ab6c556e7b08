// Time to interactive of a leaderboard page on loopback, in headless Chromium.
//
//   node end2end/tti.mjs [runs]        (after `make build`)
//
// Starts target/release/tracker with a private Redis, fills a project (200 downloaders, 2,000
// completions), then loads /SLUG/ in fresh browser contexts and reports, per load: first
// contentful paint (server-rendered page visible) and interactive (Wasm loaded, page hydrated,
// live channel answered: the status reads "live"). Prints the medians.
import { chromium } from 'playwright-core';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = process.env.TRACKER_BIN ?? path.join(ROOT, 'target', 'release', 'tracker');
const RUNS = Number(process.argv[2] ?? 7);

const port = await new Promise((resolve) => {
  const s = net.createServer();
  s.listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});
const dir = mkdtempSync(path.join(os.tmpdir(), 'tracker-tti-'));
const base = `http://127.0.0.1:${port}`;
const env = {
  ...process.env,
  TRACKER_DATA_DIR: dir,
  TRACKER_LISTEN: `127.0.0.1:${port}`,
  TRACKER_SITE_ROOT: path.join(ROOT, 'target', 'site'),
  TRACKER_NAMESPACE: 'tti',
  RUST_LOG: 'warn,fred=error',
};
delete env.REDIS_URL;
const cli = (args, input) => execFileSync(BIN, args, { env, input, encoding: 'utf8' });
const server = spawn(BIN, ['serve'], { env, stdio: ['ignore', 'inherit', 'inherit'] });
try {
  for (let end = Date.now() + 30_000; ; ) {
    if (await fetch(`${base}/healthz`).then((r) => r.ok).catch(() => false)) break;
    if (Date.now() > end) throw new Error('tracker did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  cli(['project', 'create', 'tti', '--title', 'Time to interactive']);
  const N = 2000;
  cli(['items', 'add', 'tti', '-'], Array.from({ length: N + 500 }, (_, i) => `item-${i}`).join('\n') + '\n');
  for (let i = 0; i < N; i++) {
    const downloader = `dl-${i % 200}`;
    const r = await fetch(`${base}/tti/request`, {
      method: 'POST',
      body: JSON.stringify({ downloader, api_version: '2' }),
    });
    const item = (await r.json()).item_name;
    await fetch(`${base}/tti/done`, {
      method: 'POST',
      body: JSON.stringify({ downloader, item, bytes: { data: 1000 + i }, version: '20240101.01' }),
    });
  }

  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu'],
  });
  const fcp = [];
  const tti = [];
  for (let run = 0; run < RUNS; run++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    const start = Date.now();
    await page.goto(`${base}/tti/`, { waitUntil: 'commit' });
    await page.getByRole('status').filter({ hasText: /^live$/ }).waitFor({ timeout: 30_000 });
    const interactive = Date.now() - start;
    const paint = await page.evaluate(
      () => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN,
    );
    fcp.push(paint);
    tti.push(interactive);
    console.log(`run ${run + 1}: first contentful paint ${paint.toFixed(0)} ms, interactive ${interactive} ms`);
    await context.close();
  }
  await browser.close();
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`median of ${RUNS}: first contentful paint ${median(fcp).toFixed(0)} ms, interactive ${median(tti)} ms`);
} finally {
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
