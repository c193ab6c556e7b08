// The admin panel in a real browser: first-run setup, login, adding items, releasing claims,
// and a read-only account.
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

test('first-run setup link creates an account that can log in', async ({ page, tracker }) => {
  const link = tracker.stdout().match(/http:\/\/\S+\/admin\/setup\?token=\w+/)?.[0];
  expect(link, 'the server prints a setup link while no account exists').toBeTruthy();
  await page.goto(link!);
  await page.getByLabel('Name').fill('Root');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page.getByText('Logged in as root (global)')).toBeVisible();
  await page.getByRole('button', { name: 'Log out' }).click();
  await expect(page.getByRole('button', { name: 'Log in' })).toBeVisible();
  await logIn(page, tracker, 'root');
  await expect(page.getByRole('table', { name: 'Projects' })).toBeVisible();
});

test('items added in the textarea show in the queue sizes', async ({ page, tracker }) => {
  tracker.cli(['admin', 'create-user', 'root', '--global'], `${PASSWORD}\n`);
  tracker.cli(['project', 'create', 'demo', '--title', 'Demo']);
  await logIn(page, tracker, 'root');
  await page.getByRole('link', { name: 'Demo' }).click();
  const queues = page.getByRole('region', { name: 'Queues' });
  await expect(queues.getByRole('row', { name: 'todo 0', exact: true })).toBeVisible();
  // The sections are links in the page: adding is one, the overview another.
  const sections = page.getByRole('navigation', { name: 'Project sections' });
  await expect(sections.getByRole('link', { name: 'Overview' })).toHaveAttribute('aria-current', 'page');
  await sections.getByRole('link', { name: 'Add and move' }).click();
  await expect(page).toHaveURL(/\/admin\/p\/demo\/queues$/);
  await expect(sections.getByRole('link', { name: 'Add and move' })).toHaveAttribute('aria-current', 'page');
  await expect(page).toHaveTitle('demo: Add and move · Admin · Tracker');
  await expect(queues).toHaveCount(0);
  await page.getByLabel('Items, one a line').fill('a\nb\nc\n');
  await page.getByRole('region', { name: 'Add items' }).getByRole('button', { name: 'Preview' }).click();
  const dialog = page.getByRole('dialog', { name: 'Confirm' });
  await expect(dialog).toContainText('Add 3 items to todo?');
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await expect(page.getByRole('status', { name: 'Result' })).toHaveText('Done: 3 items.');
  await sections.getByRole('link', { name: 'Overview' }).click();
  await expect(page).toHaveURL(/\/admin\/p\/demo$/);
  await expect(queues.getByRole('row', { name: 'todo 3', exact: true })).toBeVisible();
});

test('claims of one downloader are released after the dry-run count', async ({ page, tracker }) => {
  tracker.cli(['admin', 'create-user', 'root', '--global'], `${PASSWORD}\n`);
  tracker.cli(['project', 'create', 'demo', '--title', 'Demo']);
  tracker.cli(['items', 'add', 'demo', '-'], 'i1\ni2\ni3\ni4\n');
  for (const who of ['alice', 'alice', 'bob']) await tracker.claim('demo', who);
  await logIn(page, tracker, 'root');
  await page.goto(`${tracker.base}/admin/p/demo/claims`);
  const claims = page.getByRole('region', { name: 'Claims' });
  await expect(claims.getByRole('row').filter({ hasText: 'alice' })).toContainText('2');
  await page.getByRole('button', { name: 'Release claims of alice' }).click();
  const dialog = page.getByRole('dialog', { name: 'Confirm' });
  await expect(dialog).toContainText('Release 2 claims?');
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await expect(page.getByRole('status', { name: 'Result' })).toHaveText('Done: 2 items.');
  await expect(claims.getByRole('row').filter({ hasText: 'alice' })).toHaveCount(0);
  await expect(claims.getByRole('row').filter({ hasText: 'bob' })).toBeVisible();
  await page.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name: 'Overview' }).click();
  const queues = page.getByRole('region', { name: 'Queues' });
  await expect(queues.getByRole('row', { name: 'claimed 1', exact: true })).toBeVisible();
});

test('a read-only account sees no actions and its POSTs are refused', async ({ page, tracker }) => {
  tracker.cli(['admin', 'create-user', 'viewer', '--read-only'], `${PASSWORD}\n`);
  tracker.cli(['project', 'create', 'demo', '--title', 'Demo']);
  tracker.cli(['items', 'add', 'demo', '-'], 'i1\ni2\n');
  await tracker.claim('demo', 'alice');
  await logIn(page, tracker, 'viewer');
  await page.goto(`${tracker.base}/admin/p/demo/claims`);
  const claims = page.getByRole('region', { name: 'Claims' });
  await expect(claims.getByRole('row').filter({ hasText: 'alice' })).toBeVisible();
  await expect(page.getByRole('region', { name: 'Failed items' })).toContainText('No failed items.');
  // Logging out is the only button; no action anywhere, and no section of actions only.
  await expect(page.getByRole('button')).toHaveText(['Log out']);
  await expect(page.getByRole('navigation', { name: 'Project sections' }).getByRole('link')).toHaveText(
    ['Overview', 'Items', 'Claims and failures', 'Settings', 'Warrior listing', 'Backfeed and uploads', 'Log']);
  await page.goto(`${tracker.base}/admin/p/demo/queues`);
  await expect(page.getByRole('alert')).toHaveText('Your account may not use this section.');
  await expect(page.getByLabel('Items, one a line')).toHaveCount(0);
  await page.goto(`${tracker.base}/admin/p/demo/items`);
  await expect(page.getByRole('table', { name: 'Items found' }).getByRole('row')).toHaveCount(3);
  await expect(page.getByRole('button')).toHaveText(['Log out', 'Look up', 'Search']);
  await page.goto(`${tracker.base}/admin/p/demo/settings`);
  await expect(page.getByRole('form', { name: 'Settings' }).getByLabel('Title', { exact: true })).toHaveAttribute('readonly', '');
  const status = await page.evaluate(async () => {
    const session = await (await fetch('/admin/api/session')).json();
    const r = await fetch('/admin/api/demo/release', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrf },
      body: JSON.stringify({ downloader: 'alice' }),
    });
    return r.status;
  });
  expect(status).toBe(403);
  await page.goto(`${tracker.base}/admin/p/demo`);
  await expect(page.getByRole('region', { name: 'Queues' }).getByRole('row', { name: 'claimed 1', exact: true })).toBeVisible();
  for (const path of ['/admin/blocks', '/admin/warrior']) {
    await page.goto(`${tracker.base}${path}`);
    await expect(page.getByRole('link', { name: 'Projects', exact: true })).toBeVisible();
    await expect(page.getByRole('button')).toHaveText(['Log out']);
  }
  // Its own page: no tokens, but its own password.
  await page.goto(`${tracker.base}/admin/tokens`);
  await expect(page.getByText('Read-only accounts make no tokens.')).toBeVisible();
  await expect(page.getByRole('button')).toHaveText(['Log out', 'Change password']);
});

test('a global admin creates and deletes an account on the accounts page', async ({ page, tracker }) => {
  tracker.cli(['admin', 'create-user', 'root', '--global'], `${PASSWORD}\n`);
  await logIn(page, tracker, 'root');
  await page.getByRole('link', { name: 'Accounts' }).click();
  const form = page.getByRole('form', { name: 'New account' });
  await form.getByLabel('Name').fill('Viewer');
  await form.getByLabel('Password').fill(PASSWORD);
  await form.getByRole('button', { name: 'Create account' }).click();
  await expect(page.getByRole('status', { name: 'Result' })).toHaveText('Account created.');
  const accounts = page.getByRole('table', { name: 'Accounts' });
  await expect(accounts.getByRole('row').filter({ hasText: 'viewer' })).toContainText('read-only');
  await page.getByRole('button', { name: 'Delete viewer' }).click();
  const dialog = page.getByRole('dialog', { name: 'Confirm' });
  await expect(dialog).toContainText('Delete the account viewer?');
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await expect(accounts.getByRole('row').filter({ hasText: 'viewer' })).toHaveCount(0);
  await page.getByRole('button', { name: 'Delete root' }).click();
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await expect(page.getByRole('status', { name: 'Result' })).toContainText('last global admin');
});

test('items are found by a search kept in the URL, and the claims found are released after a dry run', async ({ page, tracker }) => {
  tracker.cli(['admin', 'create-user', 'root', '--global'], `${PASSWORD}\n`);
  tracker.cli(['project', 'create', 'demo', '--title', 'Demo']);
  tracker.cli(['items', 'add', 'demo', '-'], 'user-1\nuser-2\nuser-3\npost-1\npost-2\n');
  const held = [await tracker.claim('demo', 'alice'), await tracker.claim('demo', 'alice')];
  await tracker.claim('demo', 'bob');
  await logIn(page, tracker, 'root');
  await page.goto(`${tracker.base}/admin/p/demo`);
  await page.getByRole('link', { name: 'Items', exact: true }).click();
  await expect(page).toHaveURL(/\/admin\/p\/demo\/items$/);
  const results = page.getByRole('table', { name: 'Items found' });
  await expect(results.getByRole('row')).toHaveCount(6);

  const search = page.getByRole('form', { name: 'Search' });
  await search.getByLabel('State').selectOption('claimed');
  await search.getByLabel('Claimant').fill('alice');
  await search.getByRole('button', { name: 'Search' }).click();
  await expect(page).toHaveURL(/state=claimed&claimant=alice/);
  await expect(results.getByRole('row')).toHaveCount(3);
  for (const item of held) await expect(results.getByRole('link', { name: item })).toBeVisible();
  await expect(page.getByRole('status', { name: 'Found' })).toHaveText(/^2 items shown/);

  // The URL alone gives the same view.
  await page.reload();
  await expect(search.getByLabel('Claimant')).toHaveValue('alice');
  await expect(results.getByRole('row')).toHaveCount(3);

  await page.getByRole('button', { name: 'Release all found' }).click();
  const dialog = page.getByRole('dialog', { name: 'Confirm' });
  await expect(dialog).toContainText('Release the 2 items this search finds?');
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await expect(page.getByRole('status', { name: 'Result' })).toHaveText('Done: 2 items.');
  await expect(results.getByRole('row')).toHaveCount(1);

  // A glob over the queues; a result's link opens its timeline.
  await search.getByLabel('State').selectOption('todo');
  await search.getByLabel('Claimant').fill('');
  await search.getByLabel('Name (glob)').fill(`${held[0].split('-')[0]}-*`);
  await search.getByRole('button', { name: 'Search' }).click();
  await expect(page).toHaveURL(/state=todo&match=/);
  await expect(results.getByRole('link', { name: held[0] })).toBeVisible();
  await results.getByRole('link', { name: held[0] }).click();
  await expect(page).toHaveURL(new RegExp(`/admin/p/demo/items\\?state=todo&match=.*&item=${held[0]}$`));
  await expect(page.getByRole('table', { name: 'Timeline' })).toContainText('released');
  // The search stays under the timeline.
  await expect(search.getByLabel('Name (glob)')).toHaveValue(`${held[0].split('-')[0]}-*`);
  await expect(results.getByRole('link', { name: held[0] })).toBeVisible();

  // The overview's queue sizes link to their items; the old address of the search still works.
  await page.goto(`${tracker.base}/admin/p/demo`);
  await page.getByRole('region', { name: 'Queues' }).getByRole('link', { name: 'claimed', exact: true }).click();
  await expect(page).toHaveURL(/\/admin\/p\/demo\/items\?state=claimed$/);
  await expect(results.getByRole('row')).toHaveCount(2);
  await page.goto(`${tracker.base}/admin/p/demo/search?state=todo`);
  await expect(page.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name: 'Items' })).toHaveAttribute('aria-current', 'page');
  await expect(results.getByRole('row')).toHaveCount(5);
});
