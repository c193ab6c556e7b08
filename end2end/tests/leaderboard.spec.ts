// The leaderboard page updates live, without reload, when items complete over HTTP.
import { test, expect } from './fixtures';

test('counts, recent completions and charts change live without reload', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'live-demo', '--title', 'Live demo']);
  expect(tracker.cli(['items', 'add', 'live-demo', '-'], 'one\ntwo\nthree\n')).toContain('3 new items');

  await page.goto(`${tracker.base}/live-demo/`);
  await expect(page.getByRole('heading', { name: 'Live demo' })).toBeVisible();
  await expect(page.getByRole('status')).toHaveText('live');
  const done = page.getByLabel('done', { exact: true });
  const todo = page.getByLabel('to do', { exact: true });
  const downloaded = page.getByLabel('downloaded', { exact: true });
  await expect(done).toHaveText('0');
  await expect(todo).toHaveText('3');
  const itemsChart = page.getByRole('figure').filter({ has: page.getByRole('img', { name: 'Items done' }) });
  await expect(itemsChart).toContainText('max 0');
  const stats = page.getByRole('region', { name: 'Tracker statistics' });
  const contributors = stats.locator('dt:has-text("Contributors, 30 days") + dd');
  const served = stats.locator('dt:has-text("Item requests served") + dd');
  await expect(contributors).toHaveText('0');
  await expect(served).toHaveText('—');
  // A mark that a reload would wipe.
  await page.evaluate(() => ((window as any).__noReload = true));

  const item = await tracker.claim('live-demo', 'e2e-user');
  await tracker.done('live-demo', 'e2e-user', item, 4096);

  await expect(done).toHaveText('1');
  await expect(todo).toHaveText('2');
  await expect(downloaded).toHaveText('4.00 KiB');
  const log = page.getByRole('list', { name: 'Recent completions' });
  await expect(log.getByRole('listitem').filter({ hasText: item })).toContainText('e2e-user');
  await expect(page.getByRole('table', { name: 'Downloaders' })).toContainText('e2e-user');
  await expect(itemsChart).toContainText('max 1');
  await expect(itemsChart.locator('polyline')).toHaveAttribute('points', /\d/);
  // The per-minute statistics come over the live channel a few seconds later.
  await expect(contributors).toHaveText('1', { timeout: 20_000 });
  await expect(served).toHaveText('100.0%');
  expect(await page.evaluate(() => (window as any).__noReload)).toBe(true);
});

test('the project list links to the leaderboard', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'listed', '--title', 'Listed project']);
  tracker.cli(['project', 'create', 'older', '--title', 'A paused project']);
  tracker.cli(['project', 'set', 'older', 'state=paused', 'banner=Back soon']);
  await page.goto(`${tracker.base}/`);
  const cards = page.getByRole('list', { name: 'Projects' }).getByRole('listitem');
  // Active projects come first, whatever their title.
  await expect(cards.first()).toContainText('Listed project');
  await expect(cards.nth(1)).toContainText('Back soon');
  await page.getByRole('link', { name: 'Listed project' }).click();
  await expect(page).toHaveURL(/\/listed\/$/);
  await expect(page.getByRole('heading', { name: 'Listed project' })).toBeVisible();
});

test('once hydrated, the rate window fetches its data as JSON; links between the pages load them whole', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'nav', '--title', 'Navigated']);
  tracker.cli(['items', 'add', 'nav', '-'], 'n1\nn2\n');
  await tracker.done('nav', 'alice', await tracker.claim('nav', 'alice'), 2048);
  await page.goto(`${tracker.base}/nav/`);
  await expect(page.getByRole('status')).toHaveText('live');
  const ok = (path: string) => page.waitForResponse((r) => r.url().includes(path) && r.status() === 200);

  const hour = page.getByRole('group', { name: 'Rate window' }).getByRole('button', { name: '1 h' });
  await Promise.all([ok('/board/nav/window.json?window=60'), hour.click()]);
  await expect(hour).toHaveAttribute('aria-pressed', 'true');

  // The public pages have no client-side router: a link loads the next page rendered by the
  // server, which the public bundle hydrates again (the leaderboard goes live).
  await Promise.all([page.waitForURL(`${tracker.base}/`), page.getByRole('link', { name: 'Tracker' }).click()]);
  await expect(page.getByRole('list', { name: 'Projects' })).toContainText('1 / 2 done');
  await Promise.all([page.waitForURL(/\/nav\/$/), page.getByRole('link', { name: 'Navigated' }).click()]);
  await expect(page.getByRole('heading', { name: 'Navigated' })).toBeVisible();
  await expect(page.getByRole('status')).toHaveText('live');
  await expect(page.getByRole('table', { name: 'Downloaders' })).toContainText('alice');
});

test('volunteers never download the admin panel, nor admins the leaderboard: each has its own Wasm', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'light', '--title', 'Light']);
  const wasm: string[] = [];
  const encodings: string[] = [];
  page.on('request', (r) => {
    if (r.url().endsWith('.wasm')) wasm.push(new URL(r.url()).pathname);
  });
  page.on('response', (r) => {
    if (r.url().endsWith('.wasm')) encodings.push(r.headers()['content-encoding'] ?? 'identity');
  });
  await page.goto(`${tracker.base}/light/`);
  await expect(page.getByRole('status')).toHaveText('live');
  expect(wasm).toEqual(['/pkg/tracker.wasm']);
  // Sent compressed: the copy made ahead of time (brotli or gzip, as the browser accepts).
  expect(['br', 'gzip']).toContain(encodings[0]);

  // The login form is drawn by the panel's Wasm once it has read the session.
  await page.goto(`${tracker.base}/admin`);
  await expect(page.getByRole('form', { name: 'Log in' })).toBeVisible();
  expect(wasm).toEqual(['/pkg/tracker.wasm', '/pkg/admin.wasm']);
});

test('the downloaders chart toggles a line by name, each box beside its name', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'lines', '--title', 'Lines']);
  tracker.cli(['items', 'add', 'lines', '-'], 'l1\nl2\n');
  for (const who of ['judy', 'kim']) {
    await tracker.done('lines', who, await tracker.claim('lines', who), 1000);
  }
  await page.goto(`${tracker.base}/lines/`);
  await expect(page.getByRole('status')).toHaveText('live');
  const lines = page.getByRole('img', { name: 'Bytes by downloader' }).locator('polyline');
  await expect(lines).toHaveCount(2);
  const kim = page.getByRole('checkbox', { name: 'kim' });
  await expect(kim).toBeChecked();
  // The box sits on the name's line, left of it (not stacked above it).
  const box = (await kim.boundingBox())!;
  const label = (await page.locator('label.toggle', { hasText: 'kim' }).boundingBox())!;
  expect(box.height).toBeGreaterThan(label.height / 2);
  expect(box.x + box.width).toBeLessThan(label.x + label.width / 2);

  await kim.uncheck();
  await expect(lines).toHaveCount(1);
  await kim.check();
  await expect(lines).toHaveCount(2);
});
