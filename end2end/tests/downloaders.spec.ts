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

test('beyond the top rows, search, pin and pages come from the server', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'crowd', '--title', 'Crowd']);
  const n = 130;
  const names = Array.from({ length: n }, (_, i) => `dl-${String(i).padStart(3, '0')}`);
  tracker.cli(['items', 'add', 'crowd', '-'], names.map((d) => `item-${d}`).join('\n') + '\n');
  // dl-000 does two items, everyone else one: ties rank by name, last name first.
  await Promise.all(names.map(async (who) => tracker.done('crowd', who, await tracker.claim('crowd', who), 10)));
  tracker.cli(['items', 'add', 'crowd', '-'], 'extra\n');
  await tracker.done('crowd', 'dl-000', await tracker.claim('crowd', 'dl-000'), 10);

  await page.goto(`${tracker.base}/crowd/`);
  await expect(page.getByRole('status')).toHaveText('live');
  const table = page.getByRole('table', { name: 'Downloaders' });
  await expect(table.getByRole('row')).toHaveCount(21);
  await expect(page.getByText('20 of 130 downloaders')).toBeVisible();

  // dl-001 ranks last (130th): beyond every snapshot row, found by the server.
  await page.getByRole('searchbox', { name: 'Find downloader' }).fill('dl-001');
  await expect(table.getByRole('row')).toHaveCount(2);
  const row = table.getByRole('row').filter({ hasText: 'dl-001' });
  await expect(row.getByRole('cell').first()).toHaveText('130');
  await page.getByRole('button', { name: 'Pin' }).click();
  await expect(page.getByText('dl-001: #130 · 1 items')).toBeVisible();

  // Show all: two pages of 100; the pinned row is highlighted on the second.
  await page.getByRole('button', { name: 'Show all' }).click();
  await expect(page.getByText('page 1 of 2')).toBeVisible();
  await expect(table.getByRole('row')).toHaveCount(101);
  await page.getByRole('button', { name: 'Next' }).click();
  await expect(table.getByRole('row')).toHaveCount(31);
  await expect(table.getByRole('row').filter({ hasText: 'dl-001' })).toHaveClass(/pinned/);

  // Sorting by name asks the server for the whole order.
  await page.getByRole('button', { name: 'Show top 20' }).click();
  await page.getByRole('button', { name: 'Name' }).click();
  await expect(table.getByRole('row').nth(1)).toContainText('dl-000');
  await expect(table.getByRole('row').nth(2)).toContainText('dl-001');

  await page.reload();
  await expect(page.getByRole('status')).toHaveText('live');
  await expect(page.getByText('dl-001: #130 · 1 items')).toBeVisible();
});

test('a name typed before the Wasm loads is kept and searched once the page is live', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'early', '--title', 'Early']);
  tracker.cli(['items', 'add', 'early', '-'], 'e1\ne2\n');
  for (const who of ['heidi', 'ivan']) {
    await tracker.done('early', who, await tracker.claim('early', who), 100);
  }
  // Hold the Wasm back until the name is typed into the server-rendered box.
  let release!: () => void;
  const typed = new Promise<void>((resolve) => (release = resolve));
  await page.route('**/pkg/*.wasm', async (route) => {
    await typed;
    await route.continue();
  });
  await page.goto(`${tracker.base}/early/`);
  const box = page.getByRole('searchbox', { name: 'Find downloader' });
  await box.fill('iva');
  await expect(page.getByRole('status')).not.toHaveText('live');
  release();
  await expect(page.getByRole('status')).toHaveText('live');
  await expect(box).toHaveValue('iva');
  const table = page.getByRole('table', { name: 'Downloaders' });
  await expect(table.getByRole('row')).toHaveCount(2); // the header and ivan
  await expect(table.getByRole('row').filter({ hasText: 'ivan' })).toBeVisible();
});

test('on a phone the downloaders table fits the screen: no sideways scrolling', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'phone', '--title', 'Phone']);
  tracker.cli(['items', 'add', 'phone', '-'], 'ph1\nph2\n');
  // The longest name a downloader may have (30), the widest a row gets.
  for (const who of ['a-volunteer-with-a-long-name30', 'bob']) {
    await tracker.done('phone', who, await tracker.claim('phone', who), 123456789);
  }
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${tracker.base}/phone/`);
  await expect(page.getByRole('status')).toHaveText('live');
  const table = page.getByRole('table', { name: 'Downloaders' });
  await expect(table.getByRole('row')).toHaveCount(3);
  // Rank, name, items, bytes and share show; the rest wait for a wider screen.
  const shown = () =>
    table.locator('th').evaluateAll((ths) =>
      ths.filter((th) => getComputedStyle(th).display !== 'none').map((th) => th.textContent),
    );
  expect(await shown()).toEqual(['#', 'Name', 'Items', 'Bytes', 'Share']);
  await expect(table.getByRole('row').filter({ hasText: 'a-volunteer-with-a-long-name30' })).toBeVisible();
  const overflow = await page.evaluate(() => {
    const scroll = document.querySelector('.downloaders .scroll') as HTMLElement;
    return { box: scroll.scrollWidth - scroll.clientWidth, page: document.documentElement.scrollWidth - window.innerWidth };
  });
  expect(overflow).toEqual({ box: 0, page: 0 });

  // A wide screen shows every column again.
  await page.setViewportSize({ width: 1280, height: 900 });
  await expect.poll(shown).toEqual(['#', 'Name', 'Items', 'Bytes', 'Share', 'Items/s', 'Bytes/s', 'Last seen', 'Version']);
});
