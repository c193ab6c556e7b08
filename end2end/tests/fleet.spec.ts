// The fleet in a real browser: the admin Fleet page (downloaders of the warrior API and Warrior
// HQ instances, searched and sorted, with totals) and the home page's world map of warriors.
import { test, expect, type Tracker } from './fixtures';
import type { Page } from '@playwright/test';

const PASSWORD = 'correct horse battery';

async function logIn(page: Page, tracker: Tracker, name: string) {
  await page.goto(`${tracker.base}/admin`);
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await expect(page.getByText(`Logged in as ${name}`)).toBeVisible();
}

/** A claim of `slug` by `downloader` with the user agent of seesaw `seesaw`. */
async function claimAs(tracker: Tracker, slug: string, downloader: string, seesaw: string) {
  const r = await fetch(`${tracker.base}/${slug}/request`, {
    method: 'POST',
    headers: { 'User-Agent': `ArchiveTeam Warrior/${seesaw} Warrior 4` },
    body: JSON.stringify({ downloader, api_version: '2', version: '20240101.01' }),
  });
  expect(r.status).toBe(200);
}

/** Registers a Warrior HQ instance running as `downloader` at `latLng`. */
async function warrior(tracker: Tracker, downloader: string, latLng: [number, number]) {
  const reg = await fetch(`${tracker.base}/api/register.json`, {
    method: 'POST',
    body: JSON.stringify({ warrior: { version: '0.10.3' } }),
  });
  const { warrior_id } = await reg.json();
  const up = await fetch(`${tracker.base}/api/update.json`, {
    method: 'POST',
    body: JSON.stringify({
      warrior: { warrior_id, downloader, selected_project: 'auto', lat_lng: latLng, version: '0.10.3' },
    }),
  });
  expect(up.status).toBe(200);
}

test('the Fleet page lists downloaders and warriors, searches, sorts and totals', async ({ page, tracker }) => {
  tracker.cli(['admin', 'create-user', 'root', '--global'], `${PASSWORD}\n`);
  tracker.cli(['project', 'create', 'demo', '--title', 'Demo']);
  tracker.cli(['items', 'add', 'demo', '-'], 'i1\ni2\ni3\ni4\n');
  await claimAs(tracker, 'demo', 'alice', '0.10.3');
  await claimAs(tracker, 'demo', 'alice', '0.10.3');
  await claimAs(tracker, 'demo', 'bob', '0.8.5');
  await warrior(tracker, 'carol', [48.8, 2.3]);
  await logIn(page, tracker, 'root');
  await page.getByRole('link', { name: 'Fleet' }).click();
  await expect(page.getByRole('heading', { name: 'Fleet', level: 1 })).toBeVisible();

  // The processes write what they saw every 2 s: refresh until both downloaders show.
  const downloaders = page.getByRole('table', { name: 'API downloaders' });
  await expect(async () => {
    await page.getByRole('button', { name: 'Refresh' }).click();
    await expect(downloaders.getByRole('row')).toHaveCount(3, { timeout: 1000 });
  }).toPass({ timeout: 20_000 });
  const alice = downloaders.getByRole('row').filter({ hasText: 'alice' });
  await expect(alice).toContainText('0.10.3');
  await expect(alice).toContainText('20240101.01');
  await expect(alice).toContainText('127.0.0.1');
  await expect(alice.getByRole('cell').nth(5)).toHaveText('2');
  const warriors = page.getByRole('table', { name: 'Warrior HQ instances' });
  await expect(warriors.getByRole('row').filter({ hasText: 'carol' })).toContainText('48.8, 2.3');

  // Totals.
  const perProject = page.getByRole('table', { name: 'Per project' });
  const demo = perProject.getByRole('row').filter({ hasText: 'demo' });
  // Its own cells: two downloaders (alice, bob) under two names, three items in flight.
  await expect(demo.getByRole('cell').nth(1)).toHaveText('2');
  await expect(demo.getByRole('cell').nth(2)).toHaveText('2');
  await expect(demo.getByRole('cell').nth(4)).toHaveText('3');
  const perVersion = page.getByRole('table', { name: 'Per version' });
  await expect(perVersion.getByRole('row').filter({ hasText: '0.10.3' })).toBeVisible();
  await expect(perVersion.getByRole('row').filter({ hasText: '0.8.5' })).toBeVisible();

  // Sorting by claims held puts alice (2) over bob (1); again, the other way.
  await downloaders.getByRole('button', { name: /In flight/ }).click();
  await expect(downloaders.getByRole('row').nth(1)).toContainText('alice');
  await downloaders.getByRole('button', { name: /In flight/ }).click();
  await expect(downloaders.getByRole('row').nth(1)).toContainText('bob');

  // Search.
  await page.getByRole('searchbox', { name: 'Search' }).fill('BOB');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  await expect(downloaders.getByRole('row')).toHaveCount(2);
  await expect(downloaders).toContainText('bob');
  await expect(downloaders).not.toContainText('alice');
});

test('the home page draws warriors on the world map, with no address', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'demo', '--title', 'Demo']);
  tracker.cli(['items', 'add', 'demo', '-'], 'i1\ni2\n');
  await warrior(tracker, 'w1', [51.5, -0.1]);
  await warrior(tracker, 'w2', [51.6, -0.2]);
  await warrior(tracker, 'w3', [40.7, -74.0]);
  await claimAs(tracker, 'demo', 'alice', '0.10.3');
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));

  await expect(async () => {
    await page.goto(`${tracker.base}/`);
    await expect(page.getByText('1 warrior at work')).toBeVisible({ timeout: 1000 });
  }).toPass({ timeout: 20_000 });
  const map = page.getByRole('img', { name: 'World map: 3 warriors in 2 places' });
  await expect(map).toBeVisible();
  await expect(map.locator('path.land')).toHaveAttribute('d', /^M/);
  await expect(map.locator('circle.core')).toHaveCount(2);
  const box = await map.boundingBox();
  expect(box!.width / box!.height).toBeCloseTo(2.5, 1);
  await expect(page.getByRole('region', { name: 'Warriors around the world' })).toContainText(
    '3 warriors reporting to Warrior HQ',
  );
  expect(await page.content()).not.toContain('127.0.0.1');
  // Hydrated without complaint, and the leaderboard counts the downloader too.
  expect(errors).toEqual([]);
  await page.getByRole('link', { name: 'Demo' }).click();
  await expect(page.getByLabel('warriors now', { exact: true })).toHaveText('1');
});
