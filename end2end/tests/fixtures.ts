// A fixture that runs the real tracker binary (TRACKER_BIN: `make test` sets the build it tests with; else the
// release build `make run` uses) on a free port with its own private redis-server under a temporary data directory.
import { test as base, expect, type Page } from '@playwright/test';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = process.env.TRACKER_BIN ?? path.join(ROOT, 'target', 'release', 'tracker');

export type Tracker = {
  base: string;
  /** Runs `tracker ARGS` against the same Redis; returns stdout. */
  cli(args: string[], input?: string): string;
  /** Claims one item for `downloader`; returns its name. */
  claim(slug: string, downloader: string): Promise<string>;
  /** Reports `item` done. */
  done(slug: string, downloader: string, item: string, bytes: number): Promise<void>;
  /** Stops the server (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>;
  /** Starts the server again on the same port and data. */
  start(): Promise<void>;
  /** What the server printed on stdout so far (e.g. the first-run setup link). */
  stdout(): string;
};

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

async function waitFor(what: string, ms: number, check: () => Promise<boolean>) {
  const end = Date.now() + ms;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const test = base.extend<{ tracker: Tracker }>({
  tracker: async ({}, use) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tracker-e2e-'));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      TRACKER_DATA_DIR: dir,
      TRACKER_LISTEN: `127.0.0.1:${port}`,
      TRACKER_SITE_ROOT: path.join(ROOT, 'target', 'site'),
      TRACKER_NAMESPACE: `e2e${Math.random().toString(36).slice(2, 10)}`,
      RUST_LOG: 'warn,fred=error',
    };
    if (!env.REDIS_URL) delete env.REDIS_URL;
    let child: ChildProcess | undefined;
    let printed = '';

    const tracker: Tracker = {
      base,
      cli: (args, input) => execFileSync(BIN, args, { env, input, encoding: 'utf8' }),
      async claim(slug, downloader) {
        const r = await fetch(`${base}/${slug}/request`, {
          method: 'POST',
          body: JSON.stringify({ downloader, api_version: '2' }),
        });
        if (r.status !== 200) throw new Error(`claim: ${r.status} ${await r.text()}`);
        return (await r.json()).item_name;
      },
      async done(slug, downloader, item, bytes) {
        const r = await fetch(`${base}/${slug}/done`, {
          method: 'POST',
          headers: { 'User-Agent': 'ArchiveTeam Warrior/0.10.3 Warrior' },
          body: JSON.stringify({ downloader, item, bytes: { data: bytes }, version: '20240101.01' }),
        });
        if (r.status !== 200) throw new Error(`done: ${r.status} ${await r.text()}`);
      },
      async start() {
        child = spawn(BIN, ['serve'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
        child.stdout!.on('data', (chunk: Buffer) => {
          printed += chunk.toString();
          process.stdout.write(chunk);
        });
        await waitFor('the tracker to answer /healthz', 30_000, async () => (await fetch(`${base}/healthz`)).ok);
      },
      stdout: () => printed,
      async stop() {
        if (!child || child.exitCode !== null) return;
        const exited = new Promise((r) => child!.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      },
    };
    await tracker.start();
    await use(tracker);
    await tracker.stop();
    rmSync(dir, { recursive: true, force: true });
  },
});

export { expect };

/** The password of the accounts the browser tests make. */
export const PASSWORD = 'correct horse battery';

/** Makes the global account `root` and logs the page in as it. */
export async function asRoot(page: Page, tracker: Tracker) {
  tracker.cli(['admin', 'create-user', 'root', '--global'], `${PASSWORD}\n`);
  await page.goto(`${tracker.base}/admin`);
  await page.getByLabel('Name').fill('root');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await expect(page.getByText('Logged in as root')).toBeVisible();
}
