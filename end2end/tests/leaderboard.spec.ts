// The leaderboard page updates live, without reload, when items complete over HTTP.
import { test, expect } from './fixtures';

test('done count and recent completions change live without reload', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'live-demo', '--title', 'Live demo']);
  expect(tracker.cli(['items', 'add', 'live-demo', '-'], 'one\ntwo\nthree\n')).toContain('3 new items');

  await page.goto(`${tracker.base}/live-demo/`);
  await expect(page.getByRole('heading', { name: 'Live demo' })).toBeVisible();
  const done = page.getByLabel('done', { exact: true });
  const todo = page.getByLabel('to do', { exact: true });
  await expect(done).toHaveText('0');
  await expect(todo).toHaveText('3');
  // A mark that a reload would wipe.
  await page.evaluate(() => ((window as any).__noReload = true));

  const item = await tracker.claim('live-demo', 'e2e-user');
  await tracker.done('live-demo', 'e2e-user', item, 4096);

  await expect(done).toHaveText('1');
  await expect(todo).toHaveText('2');
  const log = page.getByRole('list', { name: 'Recent completions' });
  await expect(log.getByRole('listitem').filter({ hasText: item })).toContainText('e2e-user');
  await expect(page.getByRole('table', { name: 'Downloaders' })).toContainText('e2e-user');
  expect(await page.evaluate(() => (window as any).__noReload)).toBe(true);
});

test('the project list links to the leaderboard', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'listed', '--title', 'Listed project']);
  await page.goto(`${tracker.base}/`);
  await page.getByRole('link', { name: 'Listed project' }).click();
  await expect(page).toHaveURL(/\/listed\/$/);
  await expect(page.getByRole('heading', { name: 'Listed project' })).toBeVisible();
});
