// The admin panel's management pages in a real browser: the settings form, creating and
// destroying a project, blocks, the Warrior list, failed items, uploading a .gz of items,
// API tokens, backfeed keys and the compression dictionary.
import { test, expect, asRoot, PASSWORD, type Tracker } from './fixtures';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { createHash } from 'node:crypto';

function show(tracker: Tracker, slug: string) {
  return JSON.parse(tracker.cli(['project', 'show', slug]));
}

test('the settings form saves every kind of field and shows the server reasons', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'demo', '--title', 'Demo']);
  await asRoot(page, tracker);
  await page.goto(`${tracker.base}/admin/p/demo/settings`);
  const form = page.getByRole('form', { name: 'Settings' });
  await expect(form.getByLabel('Title', { exact: true })).toHaveValue('Demo');
  // Grouped by concern, each group a named box.
  await expect(form.getByRole('group', { name: 'Limits' }).getByLabel('Rate limit (items per second; 0: none)')).toBeVisible();
  await expect(form.getByRole('group', { name: 'Storage' }).getByLabel('Items per segment file on disk')).toBeVisible();
  await expect(form.getByRole('group', { name: 'Shown to volunteers' }).getByLabel('Title', { exact: true })).toBeVisible();
  await form.getByLabel('Title', { exact: true }).fill('Renamed');
  await form.getByLabel('Rate limit (items per second; 0: none)').fill('2.5');
  await form.getByLabel('State').selectOption('paused');
  await form.getByLabel('Description (HTML, sanitised when saved)').fill('<p>Save <b>it</b></p><script>alert(1)</script>');
  await form.getByRole('button', { name: 'Add pattern limit' }).click();
  const limits = form.getByRole('group', { name: 'Pattern limits' });
  await limits.getByLabel('Name').fill('Big Ones');
  await limits.getByLabel('Pattern').fill('^big-');
  await limits.getByLabel('Rate', { exact: true }).fill('1');
  await limits.getByLabel('Burst').fill('2');
  await form.getByRole('button', { name: 'Add extra field' }).click();
  const extra = form.getByRole('group', { name: 'Extra item fields' });
  await extra.getByLabel('Field').fill('warc_prefix');
  await extra.getByLabel('Value').fill('demo-');
  await form.getByRole('button', { name: 'Save settings' }).click();
  const status = form.getByRole('status', { name: 'Settings status' });
  await expect(status).toContainText('pattern limit name');
  expect(show(tracker, 'demo').title).toBe('Demo');

  await limits.getByLabel('Name').fill('big');
  await form.getByRole('button', { name: 'Save settings' }).click();
  await expect(status).toHaveText('Saved.');
  await expect(form.getByLabel('Description (HTML, sanitised when saved)')).toHaveValue('<p>Save <b>it</b></p>');
  const saved = show(tracker, 'demo');
  expect([saved.title, saved.rate, saved.state]).toEqual(['Renamed', 2.5, 'paused']);
  expect(saved.pattern_limits).toEqual([{ name: 'big', pattern: '^big-', rate: 1, burst: 2 }]);
  expect(saved.extra).toEqual({ warc_prefix: 'demo-' });

  await page.reload();
  await expect(form.getByLabel('Title', { exact: true })).toHaveValue('Renamed');
  await expect(form.getByLabel('State')).toHaveValue('paused');
  await expect(limits.getByLabel('Pattern')).toHaveValue('^big-');
});

test('a project is created on the overview and destroyed after typing its slug', async ({ page, tracker }) => {
  await asRoot(page, tracker);
  const create = page.getByRole('form', { name: 'New project' });
  await create.getByLabel('Slug (a-z, 0-9, -)').fill('fresh');
  await create.getByLabel('Title').fill('Fresh project');
  await create.getByRole('button', { name: 'Create project' }).click();
  await expect(page).toHaveURL(/\/admin\/p\/fresh$/);
  await expect(page.getByRole('heading', { name: 'fresh', level: 1 })).toBeVisible();
  await page.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name: 'Danger zone' }).click();
  await expect(page).toHaveURL(/\/admin\/p\/fresh\/danger$/);

  const destroy = page.getByRole('form', { name: 'Destroy project' });
  const button = destroy.getByRole('button', { name: 'Destroy project' });
  await expect(button).toBeDisabled();
  await destroy.getByLabel("Type the project's slug to confirm").fill('fres');
  await expect(button).toBeDisabled();
  await destroy.getByLabel("Type the project's slug to confirm").fill('fresh');
  await button.click();
  await expect(page).toHaveURL(/\/admin$/);
  await expect(page.getByRole('table', { name: 'Projects' })).toBeVisible();
  await expect(page.getByRole('link', { name: 'Fresh project' })).toHaveCount(0);
});

test('blocks are added and lifted on the blocks page', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'demo', '--title', 'Demo']);
  await asRoot(page, tracker);
  await page.getByRole('link', { name: 'Blocks' }).click();
  await expect(page.getByText('Nothing is blocked here.')).toBeVisible();
  const form = page.getByRole('form', { name: 'Add block' });
  await form.getByLabel('IP address or name').fill('192.0.2.7');
  await form.getByLabel('Reason').fill('hammering');
  await form.getByLabel('Hours (empty: for good)').fill('2');
  await form.getByRole('button', { name: 'Block' }).click();
  const table = page.getByRole('table', { name: 'Blocks' });
  const row = table.getByRole('row').filter({ hasText: '192.0.2.7' });
  await expect(row).toContainText('hammering');
  await expect(row).toContainText('root');
  await expect(row).not.toContainText('never');

  await page.getByLabel('Scope').selectOption('demo');
  await expect(page.getByText('Nothing is blocked here.')).toBeVisible();
  await form.getByLabel('Kind').selectOption('dl');
  await form.getByLabel('IP address or name').fill('spammer');
  await form.getByRole('button', { name: 'Block' }).click();
  await expect(table.getByRole('row').filter({ hasText: 'spammer' })).toContainText('never');
  await page.getByRole('button', { name: 'Unblock spammer' }).click();
  await expect(page.getByText('Nothing is blocked here.')).toBeVisible();

  await page.getByLabel('Scope').selectOption('');
  await page.getByRole('button', { name: 'Unblock 192.0.2.7' }).click();
  await expect(page.getByText('Nothing is blocked here.')).toBeVisible();
});

test('the Warrior list is edited with a preview and an earlier version restored', async ({ page, tracker }) => {
  await asRoot(page, tracker);
  await page.getByRole('link', { name: 'Warrior list' }).click();
  const editor = page.getByLabel('projects.json');
  const doc = (name: string, deadline: string) =>
    JSON.stringify({
      warrior: { seesaw_version: '0.10.3' },
      projects: [{ name, title: name.toUpperCase(), repository: `https://example.org/${name}.git`, deadline,
        description: '<b>Grab</b> it<script>alert(1)</script>' }],
    }, null, 2);
  await editor.fill(doc('first', 'soon'));
  await page.getByRole('button', { name: 'Preview' }).click();
  await expect(page.getByRole('status', { name: 'Result' })).toContainText('deadline');
  await editor.fill(doc('first', '2030-01-01T00:00:00Z'));
  await page.getByRole('button', { name: 'Preview' }).click();
  const preview = page.getByRole('list', { name: 'Project list preview' });
  await expect(preview).toContainText('FIRST');
  expect(await preview.innerHTML()).not.toContain('script');
  await page.getByRole('button', { name: 'Save list' }).click();
  await expect(page.getByRole('status', { name: 'Result' })).toHaveText('Saved.');
  const versions = page.getByRole('table', { name: 'Versions' });
  // The page reloads the list after a save: wait for it before typing again.
  await expect(versions.getByRole('row')).toHaveCount(2);
  await editor.fill(doc('second', '2030-01-01T00:00:00Z'));
  await page.getByRole('button', { name: 'Save list' }).click();
  await expect(versions.getByRole('row')).toHaveCount(3);
  expect((await (await fetch(`${tracker.base}/projects.json`)).json()).projects[0].name).toBe('second');

  await page.getByRole('button', { name: 'Restore version 1' }).click();
  const dialog = page.getByRole('dialog', { name: 'Confirm' });
  await expect(dialog).toContainText('Restore the version');
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await expect(versions.getByRole('row')).toHaveCount(4);
  await expect(editor).toHaveValue(/"name": "first"/);
  expect((await (await fetch(`${tracker.base}/projects.json`)).json()).projects[0].name).toBe('first');
});

test('failed items are requeued after the dry-run count', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'demo', '--title', 'Demo']);
  tracker.cli(['project', 'set', 'demo', 'max_attempts=1', 'claims_limit=1']);
  tracker.cli(['items', 'add', 'demo', '-'], 'f1\n');
  await tracker.claim('demo', 'alice');
  // At the claims limit the next claim is served the reclaim, its second attempt: it fails.
  await fetch(`${tracker.base}/demo/request`, { method: 'POST', body: JSON.stringify({ downloader: 'bob', api_version: '2' }) });
  await asRoot(page, tracker);
  await page.goto(`${tracker.base}/admin/p/demo/claims`);
  const failed = page.getByRole('region', { name: 'Failed items' });
  await expect(failed.getByRole('row').filter({ hasText: 'f1' })).toContainText('claimed');
  await failed.getByRole('button', { name: 'Requeue all failed' }).click();
  const dialog = page.getByRole('dialog', { name: 'Confirm' });
  await expect(dialog).toContainText('Requeue 1 failed items?');
  await expect(failed.getByRole('row').filter({ hasText: 'f1' })).toBeVisible();
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await expect(page.getByRole('status', { name: 'Result' })).toHaveText('Done: 1 items.');
  await expect(failed).toContainText('No failed items.');
  await page.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name: 'Overview' }).click();
  const queues = page.getByRole('region', { name: 'Queues' });
  await expect(queues.getByRole('row', { name: 'failed 0', exact: true })).toBeVisible();
  await expect(queues.getByRole('row', { name: 'todo 1', exact: true })).toBeVisible();
});

test('a .gz file of items is uploaded after the dry-run count', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'demo', '--title', 'Demo']);
  tracker.cli(['items', 'add', 'demo', '-'], 'u1\n');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'items-'));
  const file = path.join(dir, 'items.txt.gz');
  writeFileSync(file, gzipSync(Array.from({ length: 1000 }, (_, i) => `u${i}`).join('\n') + '\n'));
  await asRoot(page, tracker);
  await page.goto(`${tracker.base}/admin/p/demo/queues`);
  const add = page.getByRole('region', { name: 'Add items' });
  await add.getByLabel('Items file (one a line; plain, .gz or .zst; streamed)').setInputFiles(file);
  await add.getByRole('button', { name: 'Check file' }).click();
  const dialog = page.getByRole('dialog', { name: 'Confirm' });
  // u1 is known already: 999 would be new.
  await expect(dialog).toContainText("Add the file's 999 new items to todo?");
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await expect(page.getByRole('status', { name: 'Result' })).toHaveText('Done: 999 items.');
  await page.goto(`${tracker.base}/admin/p/demo`);
  const queues = page.getByRole('region', { name: 'Queues' });
  await expect(queues.getByRole('row', { name: 'todo 1,000', exact: true })).toBeVisible();
});

test('an API token is shown once, adds items from a script, and stops when revoked', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'demo', '--title', 'Demo']);
  await asRoot(page, tracker);
  await page.getByRole('link', { name: 'Your account' }).click();
  await page.getByLabel('What it is for').fill('ingest');
  // A token is made with the password entered again.
  await page.getByLabel('Your password', { exact: true }).fill('not my password');
  await page.getByRole('button', { name: 'Create token' }).click();
  await expect(page.getByRole('status', { name: 'Result' })).toContainText('Enter your password to make a token.');
  await page.getByLabel('Your password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Create token' }).click();
  const secret = (await page.getByLabel('Token secret').textContent())!.trim();
  expect(secret).toMatch(/^trk_\w{40}$/);
  const post = () =>
    fetch(`${tracker.base}/admin/api/demo/items?queue=todo`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${secret}` },
      body: 'a\nb\n',
    });
  const r = await post();
  expect(r.status).toBe(200);
  expect((await r.json()).count).toBe(2);
  await page.getByRole('button', { name: 'Done' }).click();
  await expect(page.getByText(secret)).toHaveCount(0);
  await page.getByRole('button', { name: 'Revoke ingest' }).click();
  await page.getByRole('dialog', { name: 'Confirm' }).getByRole('button', { name: 'Confirm' }).click();
  await expect(page.getByText('No tokens.')).toBeVisible();
  expect((await post()).status).toBe(401);
});

test('the completion log is archived to a file listed for download', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'demo', '--title', 'Demo']);
  tracker.cli(['items', 'add', 'demo', '-'], 'a\nb\nc\n');
  for (let i = 0; i < 3; i++) await tracker.done('demo', 'alice', await tracker.claim('demo', 'alice'), 10);
  await asRoot(page, tracker);
  await page.goto(`${tracker.base}/admin/p/demo/log`);
  const log = page.getByRole('region', { name: 'Completion log' });
  await expect(log.getByRole('link', { name: 'Download NDJSON' })).toHaveAttribute('href', '/admin/api/demo/log');
  await expect(log).toContainText('No archives.');
  const read = () => page.evaluate(async () => (await fetch('/admin/api/demo/log')).text());
  const before = await read();
  expect(before.trim().split('\n')).toHaveLength(3);
  await log.getByLabel('Archive entries up to').fill('2099-01-01T00:00');
  await log.getByRole('button', { name: 'Preview archive' }).click();
  const dialog = page.getByRole('dialog', { name: 'Confirm' });
  await expect(dialog).toContainText('Archive 3 log entries');
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await expect(page.getByRole('status', { name: 'Result' })).toHaveText('Done: 3 items.');
  const file = log.getByRole('table', { name: 'Archives' }).getByRole('link');
  await expect(file).toHaveText(/^demo-\d+-\d+\.ndjson\.gz$/);
  // The entries left Redis for the file; the download reads the archives, then Redis: the same
  // three entries, in the same order.
  expect(await read()).toBe(before);
});

test('each backfeed key shows what it fed and is revoked alone; a dictionary is uploaded from a file', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'demo', '--title', 'Demo']);
  tracker.cli(['project', 'set', 'demo', 'backfeed_key=urlsgrab1,redditgrab2']);
  const fed = await fetch(`${tracker.base}/backfeed/legacy/demo-urlsgrab1`, { method: 'POST', body: 'a\0b\0c\0' });
  expect(fed.status).toBe(200);
  await asRoot(page, tracker);
  await page.goto(`${tracker.base}/admin/p/demo/uploads`);
  const keys = page.getByRole('table', { name: 'Backfeed keys' });
  const urls = keys.getByRole('row').filter({ hasText: '/backfeed/legacy/demo-urlsgrab1' });
  await expect(urls.getByRole('cell', { name: '3', exact: true })).toHaveCount(2);
  const reddit = keys.getByRole('row').filter({ hasText: '/backfeed/legacy/demo-redditgrab2' });
  await expect(reddit).toContainText('never');
  await reddit.getByRole('button', { name: /^Revoke key / }).click();
  const dialog = page.getByRole('dialog', { name: 'Confirm' });
  await expect(dialog).toContainText('the other keys keep working');
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await expect(page.getByRole('status', { name: 'Result' })).toHaveText('Done.');
  await expect(reddit).toHaveCount(0);
  await expect(urls).toBeVisible();
  expect(show(tracker, 'demo').backfeed_key).toBe('urlsgrab1');

  // A dictionary trained by the CLI for another project, downloaded, and uploaded here.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dict-'));
  const samples = Array.from({ length: 200 }, (_, i) => {
    const f = path.join(dir, `s${i}`);
    writeFileSync(f, `<html><head><title>Post ${i} - Example</title></head><body><nav>Home Latest Top</nav><p>${'lorem ipsum '.repeat(1 + (i % 9))}</p><footer>Example forum</footer></body></html>`);
    return f;
  });
  tracker.cli(['project', 'create', 'src']);
  tracker.cli(['dictionary', 'train', 'src', '--max-size', '8192', ...samples]);
  const trained = await (await fetch(`${tracker.base}/dictionary?project=src`)).json();
  const bytes = Buffer.from(await (await fetch(trained.url)).arrayBuffer());
  const file = path.join(dir, 'demo.dict');
  writeFileSync(file, bytes);
  const sha = createHash('sha256').update(bytes).digest('hex');
  const dict = page.getByRole('region', { name: 'Dictionary' });
  await expect(dict).toContainText('None');
  await dict.getByLabel('Dictionary file').setInputFiles(file);
  await dict.getByRole('button', { name: 'Upload dictionary' }).click();
  await expect(dialog).toContainText("as the project's dictionary?");
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await expect(dict.getByRole('table', { name: 'Dictionary served' })).toContainText(sha);
  const served = await (await fetch(`${tracker.base}/dictionary?project=demo`)).json();
  // Ten digits, as a string: megawarc reads the id back from a WARC's name.
  expect([served.id, served.sha256]).toEqual(['1000000001', sha]);
});

test('an account changes its own password and goes on working in the same page', async ({ page, tracker }) => {
  await asRoot(page, tracker);
  await page.getByRole('link', { name: 'Your account' }).click();
  const form = page.getByRole('form', { name: 'Change your password' });
  await form.getByLabel('Current password').fill(PASSWORD);
  await form.getByLabel('New password').fill('aaaaaaaaaaaa');
  await form.getByRole('button', { name: 'Change password' }).click();
  await expect(page.getByRole('status', { name: 'Result' })).toContainText('too easy to guess');
  await form.getByLabel('New password').fill('vivid otter juggles plywood');
  await form.getByRole('button', { name: 'Change password' }).click();
  await expect(page.getByRole('status', { name: 'Result' })).toHaveText(
    'Password changed: your other sessions ended and your API tokens were revoked.',
  );
  // The session goes on (with its new CSRF token): a token is made with the new password.
  await page.getByLabel('What it is for').fill('after');
  await page.getByLabel('Your password', { exact: true }).fill('vivid otter juggles plywood');
  await page.getByRole('button', { name: 'Create token' }).click();
  await expect(page.getByLabel('Token secret')).toHaveText(/^trk_\w{40}$/);
  await page.screenshot({ path: 'test-results/your-account.png', fullPage: true });
});

test("a global admin revokes another account's token from the accounts page", async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'demo', '--title', 'Demo']);
  tracker.cli(['admin', 'create-user', 'pat', '--project', 'demo'], `${PASSWORD}\n`);
  // pat makes a token (a browser of its own).
  const login = await fetch(`${tracker.base}/admin/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: tracker.base },
    body: JSON.stringify({ username: 'pat', password: PASSWORD }),
  });
  const cookie = login.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const { csrf } = await login.json();
  const made = await fetch(`${tracker.base}/admin/api/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: tracker.base, cookie, 'x-csrf-token': csrf },
    body: JSON.stringify({ name: 'leaky', password: PASSWORD }),
  });
  expect(made.status).toBe(201);
  const { secret } = await made.json();
  const use = async () =>
    (await fetch(`${tracker.base}/admin/api/demo/settings`, { headers: { Authorization: `Bearer ${secret}` } })).status;
  expect(await use()).toBe(200);

  await asRoot(page, tracker);
  await page.getByRole('link', { name: 'Accounts' }).click();
  const tokens = page.getByRole('region', { name: 'Tokens of an account' });
  await tokens.getByLabel('Account').selectOption('pat');
  await tokens.getByRole('button', { name: 'Revoke leaky' }).click();
  await expect(page.getByRole('dialog', { name: 'Confirm' })).toContainText("Revoke pat's token \"leaky\"?");
  await page.getByRole('dialog', { name: 'Confirm' }).getByRole('button', { name: 'Confirm' }).click();
  await expect(tokens.getByText('No tokens.')).toBeVisible();
  expect(await use()).toBe(401);
});
