// The downloaders table: find your name, pin it, and find it highlighted after a reload.
import { test, expect } from './fixtures';

test('the downloader search pins a row that stays highlighted after reload', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'pins', '--title', 'Pins']);
  tracker.cli(['items', 'add', 'pins', '-'], 'p1\np2\np3\n');
  for (const who of ['erin', 'frank', 'grace']) {
    await tracker.done('pins', who, await tracker.claim('pins', who), 100);
  }
  await page.goto(`${tracker.base}/pins/`);
  // Live means the page is hydrated and its handlers are attached.
  await expect(page.getByRole('status')).toHaveText('live');
  const table = page.getByRole('table', { name: 'Downloaders' });
  const row = table.getByRole('row').filter({ hasText: 'frank' });
  await expect(row).not.toHaveClass(/pinned/);

  await page.getByRole('searchbox', { name: 'Find downloader' }).fill('fra');
  await expect(table.getByRole('row')).toHaveCount(2); // the header and frank
  await page.getByRole('button', { name: 'Pin' }).click();
  await expect(row).toHaveClass(/pinned/);
  await expect(table.getByRole('row').filter({ hasText: 'erin' })).not.toHaveClass(/pinned/);

  await page.reload();
  await expect(page.getByRole('status')).toHaveText('live');
  await expect(row).toHaveClass(/pinned/);
  await expect(page.getByText(/frank: #\d/)).toBeVisible();
});
