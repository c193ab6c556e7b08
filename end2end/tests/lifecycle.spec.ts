// Project lifecycle in a real browser: the state badge follows the counts live on the
// leaderboard, and the panel lists a project for Warriors, shows its recorded state changes
// and pins auto_project.
import { test, expect, asRoot } from './fixtures';

test('the state badge turns draining then finished live as the last items complete', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'life', '--title', 'Life']);
  tracker.cli(['items', 'add', 'life', '-'], 'a\nb\n');
  await page.goto(`${tracker.base}/life/`);
  await expect(page.getByRole('status')).toHaveText('live');
  const badge = page.locator('.board-head').getByLabel('State');
  await expect(badge).toHaveText('active');
  const a = await tracker.claim('life', 'alice');
  const b = await tracker.claim('life', 'alice');
  await tracker.done('life', 'alice', a, 10);
  await expect(badge).toHaveText('draining');
  await expect(badge).toHaveClass(/state-draining/);
  await tracker.done('life', 'alice', b, 10);
  await expect(badge).toHaveText('finished');
  await page.goto(`${tracker.base}/`);
  const card = page.getByRole('list', { name: 'Projects' }).getByRole('listitem').filter({ hasText: 'Life' });
  await expect(card.getByLabel('State')).toHaveText('finished');
});

test('a project is listed for Warriors, its state changes shown, and auto_project pinned', async ({ page, tracker }) => {
  tracker.cli(['project', 'create', 'one', '--title', 'One']);
  tracker.cli(['project', 'create', 'two', '--title', 'Two']);
  tracker.cli(['items', 'add', 'one', '-'], 'x\n');
  tracker.cli(['items', 'add', 'two', '-'], 'y\n');
  await asRoot(page, tracker);
  for (const slug of ['one', 'two']) {
    await page.goto(`${tracker.base}/admin/p/${slug}/listing`);
    const form = page.getByRole('form', { name: 'Warrior listing' });
    await form.getByLabel('Repository (git URL)').fill(`https://example.org/${slug}-grab`);
    await form.getByLabel('Position (latitude, longitude)').fill('52.5, 13.4');
    await form.getByRole('button', { name: 'Save listing' }).click();
    await expect(form.getByRole('status', { name: 'Listing status' })).toHaveText('Saved.');
    const entry = page.getByLabel('Warrior entry');
    await expect(entry).toContainText(`"repository": "https://example.org/${slug}-grab"`);
    await expect(page.getByLabel('State now')).toHaveText('active');
  }
  // A bad position is refused in the page, a bad deadline by the server.
  const form = page.getByRole('form', { name: 'Warrior listing' });
  await form.getByLabel('Deadline (2013-04-30T23:59:59Z)').fill('tomorrow');
  await form.getByRole('button', { name: 'Save listing' }).click();
  await expect(form.getByRole('status', { name: 'Listing status' })).toContainText('deadline');
  // The state changes are recorded within seconds: a reload shows them.
  await expect(async () => {
    await page.reload();
    await expect(page.getByRole('table', { name: 'State changes' })).toContainText('active', { timeout: 2_000 });
  }).toPass({ timeout: 20_000 });

  await page.getByRole('link', { name: 'Warrior list', exact: true }).click();
  const auto = page.getByRole('region', { name: 'Auto project' });
  await expect(auto.getByLabel('Auto project now')).toHaveText('one');
  await expect(auto.getByRole('table', { name: 'Auto project candidates' }).getByRole('row')).toHaveCount(3);
  await auto.getByRole('button', { name: 'Pin two' }).click();
  await expect(auto.getByRole('status', { name: 'Auto project status' })).toHaveText('Pinned to two.');
  await expect(auto.getByLabel('Auto project now')).toHaveText('two');
  expect((await (await fetch(`${tracker.base}/projects.json`)).json()).auto_project).toBe('two');
  await auto.getByRole('button', { name: 'Unpin: let the tracker choose' }).click();
  await expect(auto.getByLabel('Auto project now')).toHaveText('one');
});

test('a global admin weights listed projects and the Warrior page shows the weighted choice', async ({ page, tracker }) => {
  for (const slug of ['one', 'two']) {
    tracker.cli(['project', 'create', slug, '--title', slug]);
    tracker.cli(['items', 'add', slug, '-'], `${slug}-item\n`);
    tracker.cli(['project', 'listing', slug, `repository=https://example.org/${slug}-grab`]);
  }
  await asRoot(page, tracker);
  await page.goto(`${tracker.base}/admin/p/one/listing`);
  const form = page.getByRole('form', { name: 'Warrior listing' });
  await expect(form.getByLabel('Repository (git URL)')).toHaveValue('https://example.org/one-grab');
  await form.getByLabel('Weight').fill('3');
  await form.getByRole('button', { name: 'Save listing' }).click();
  await expect(form.getByRole('status', { name: 'Listing status' })).toHaveText('Saved.');
  tracker.cli(['project', 'listing', 'two', 'weight=1']);
  // A weight out of bounds is refused by the form itself (the server's 400 is tested in
  // tests/tests/field/warrior_hq.rs), and nothing is sent.
  await form.getByLabel('Weight').fill('5000');
  expect(await form.getByLabel('Weight').evaluate((e) => (e as HTMLInputElement).checkValidity())).toBe(false);
  await form.getByLabel('Weight').fill('3');

  await page.getByRole('link', { name: 'Warrior list', exact: true }).click();
  const auto = page.getByRole('region', { name: 'Auto project' });
  await expect(auto.getByLabel('Auto projects config')).toHaveText('one 3, two 1');
  await expect(auto.getByRole('table', { name: 'Auto project candidates' })).toContainText('3');
  if (process.env.SCREENSHOTS) await page.screenshot({ path: `${process.env.SCREENSHOTS}/warrior-weights.png`, fullPage: true });
  await expect(async () => {
    const list = await (await fetch(`${tracker.base}/projects.json`)).json();
    expect(list.auto_projects_config).toEqual([{ project: 'one', weight: 3 }, { project: 'two', weight: 1 }]);
  }).toPass({ timeout: 10_000 });
});
