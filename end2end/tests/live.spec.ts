// The live channel: a reload mid-stream ends on the server's totals; a page outlives a server
// restart, reconnects by itself and catches up on what it missed.
import { test, expect } from './fixtures';

test('a page reloaded mid-stream shows the same totals as the server', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'stream', '--title', 'Stream']);
  const names = Array.from({ length: 30 }, (_, i) => `s${i}`);
  tracker.cli(['items', 'add', 'stream', '-'], names.join('\n') + '\n');
  await page.goto(`${tracker.base}/stream/`);
  await expect(page.getByRole('status')).toHaveText('live');
  const done = page.getByLabel('done', { exact: true });
  await expect(done).toHaveText('0');

  let last = '';
  const stream = (async () => {
    for (let i = 0; i < names.length; i++) {
      last = await tracker.claim('stream', i % 2 ? 'alice' : 'bob');
      await tracker.done('stream', i % 2 ? 'alice' : 'bob', last, 1000 + i);
    }
  })();
  await expect(done).not.toHaveText('0');
  await page.reload();
  await stream;

  const stats = await (await fetch(`${tracker.base}/stream/stats.json`)).json();
  expect(stats.total_items_done).toBe(30);
  await expect(done).toHaveText(String(stats.total_items_done));
  const table = page.getByRole('table', { name: 'Downloaders' });
  await expect(table.getByRole('row').filter({ hasText: 'alice' })).toContainText(
    String(stats.downloader_count.alice),
  );
  const log = page.getByRole('list', { name: 'Recent completions' });
  await expect(log.getByRole('listitem').first()).toContainText(last);
});

test('after a server restart the page reconnects and catches up', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'restart', '--title', 'Restart']);
  tracker.cli(['items', 'add', 'restart', '-'], 'r1\nr2\nr3\nr4\n');
  // While `hold` is set, the page's websocket connections are refused, so that completions
  // happen while it is offline; then its own reconnect must bring them.
  let hold = false;
  const urls: string[] = [];
  await page.routeWebSocket(/\/ws/, (ws) => {
    urls.push(ws.url());
    if (hold) ws.close();
    else ws.connectToServer();
  });
  await page.goto(`${tracker.base}/restart/`);
  const status = page.getByRole('status');
  await expect(status).toHaveText('live');
  const first = await tracker.claim('restart', 'carol');
  await tracker.done('restart', 'carol', first, 10);
  await expect(page.getByLabel('done', { exact: true })).toHaveText('1');
  await page.evaluate(() => ((window as any).__noReload = true));

  hold = true;
  await tracker.stop();
  await expect(status).toHaveText(/offline/);
  await tracker.start();
  const missed: string[] = [];
  for (let i = 0; i < 3; i++) {
    const item = await tracker.claim('restart', 'dave');
    await tracker.done('restart', 'dave', item, 20);
    missed.push(item);
  }
  await expect(status).toHaveText(/offline/);
  hold = false;

  await expect(status).toHaveText('live');
  await expect(page.getByLabel('done', { exact: true })).toHaveText('4');
  const log = page.getByRole('list', { name: 'Recent completions' });
  for (const item of [first, ...missed]) {
    await expect(log.getByRole('listitem').filter({ hasText: item })).toHaveCount(1);
  }
  // It asked only for what it missed: the events after the one it had.
  expect(urls.at(-1)).toMatch(/\/restart\/ws\?since=1$/);
  expect(await page.evaluate(() => (window as any).__noReload)).toBe(true);
});
