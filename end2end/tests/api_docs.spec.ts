// The API's OpenAPI document rendered by Swagger UI in a real browser, under the tracker's own
// Content-Security-Policy: the warrior API's calls are listed and one opens with its body type.
import { test, expect } from './fixtures';

test('Swagger UI at /admin/api/docs lists the warrior API from /openapi.json', async ({ page, tracker }) => {
  const blocked: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content.Security.Policy/i.test(m.text())) blocked.push(m.text());
  });
  await page.goto(`${tracker.base}/admin/api/docs/`);
  await expect(page.getByRole('heading', { name: /^Tracker/ })).toBeVisible();
  const claim = page.locator('.opblock-post').filter({ hasText: '/{slug}/request' }).first();
  await expect(claim).toBeVisible();
  await expect(page.locator('.opblock').filter({ hasText: '/{slug}/{multi}//request' })).toBeVisible();
  await expect(page.locator('.opblock').filter({ hasText: '/admin/api/{slug}/search/act' })).toBeVisible();
  await claim.locator('.opblock-summary').click();
  await expect(claim).toContainText('455');
  await expect(claim).toContainText('downloader');
  expect(blocked).toEqual([]);
});
