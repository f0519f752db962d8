import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_MODELS } from '../../scripts/demo-models.ts';
import type { RunningSystem } from '../../scripts/system.ts';
import { balanceOf, billingClient, catalogClient, seedDemoModels, waitForListing } from '../support/clients.ts';
import { launchChromium, screenshots, setPassword, signIn as signInAs } from '../support/console-browser.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';

/**
 * The dashboard's layout in headless Chromium against the whole system, with an account that has
 * what makes pages wide: keys with long names and limits, nine models of usage (one with a long
 * id), failed requests. At 1280 and 1440 px nothing overflows the page and no table hides a column
 * in its box; at 390 px the page does not scroll sideways, tables scroll inside their own box with
 * a cue. Screenshots go to test-results/screenshots/ (git-ignored).
 */
const shot = screenshots('layout');
const PASSWORD = 'layout member passphrase';
const LONG_MODEL = 'ft-gpt-sim-mini-customer-support-2026-11-27-a1b2c3';
const IMAGE_MODELS = ['gpt-sim-image', 'gemini-sim-image', 'gpt-sim-one-image', 'gpt-sim-url-image'];
const TEXT_MODELS = ['gpt-sim-mini', 'claude-sim-sonnet', 'gemini-sim-flash', 'compat-sim-chat', LONG_MODEL];
const PAGES = ['/keys', 'KEY', '/usage?group=day', '/usage?group=model', '/usage?group=key', '/activity', '/balance', '/account'];

// (A string, evaluated in the page: this project compiles without the DOM library.)
const widths = (page: Page) =>
  page.evaluate<{ page: number; inner: number; boxes: Array<{ scroll: number; client: number }>; cueShown: boolean[] }>(`({
    page: document.documentElement.scrollWidth,
    inner: window.innerWidth,
    boxes: [...document.querySelectorAll('.table-scroll')].map((b) => ({ scroll: b.scrollWidth, client: b.clientWidth })),
    cueShown: [...document.querySelectorAll('.scroll-cue')].map((c) => getComputedStyle(c).display !== 'none'),
  })`);

/** The request ids of the activity table's rows, in order. */
const rowIds = (page: Page) => page.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-request-id')));

/** Throws in set-up (where `expect` does not belong) when a request did not answer as it must. */
function must(what: string, status: number, wanted: number): void {
  if (status !== wanted) throw new Error(`${what} answered ${status}, not ${wanted}`);
}

describe('dashboard layout at 1280, 1440 and 390 px', () => {
  let system: RunningSystem;
  let browser: Browser;
  let account: { accountId: string; keyId: string; apiKey: string };
  let email: string;
  /** The x-request-id of each request made, by model. */
  const requestIds = new Map<string, string>();
  let failedId = '';

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${system.baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  async function signIn(page: Page): Promise<void> {
    await page.goto(`${system.consoleUrl}/login`);
    await signInAs(page, email, PASSWORD);
  }

  /** What overflows: the page sideways, and (when asked) any table box that hides part of its table. */
  beforeAll(async () => {
    system = await startTestSystem();
    await seedDemoModels(system);
    const catalog = catalogClient(system);
    try {
      // A ninth model, with the kind of long id a fine-tuned model has.
      await catalog.upsertModel({ model: { ...DEMO_MODELS.find((m) => m.id === 'gpt-sim-mini')!, id: LONG_MODEL } });
    } finally {
      catalog.close();
    }
    account = await fundedAccount(system, 5_000_000);
    await waitForListing(system, account.apiKey, [...TEXT_MODELS, ...IMAGE_MODELS]);
    const billing = billingClient(system);
    for (const name of ['production server (eu-west, customer support assistant)', 'nightly batch evaluation of the summarisation pipeline', 'x']) {
      const { keyId } = await billing.createApiKey({ accountId: account.accountId, name, expiresAtUnixMs: BigInt(Date.UTC(2099, 0, 1)) });
      await billing.setKeyLimit({ keyId, limitType: 'spending', period: 'monthly', value: 123_456_789n });
      await billing.setKeyLimit({ keyId, limitType: 'requests', period: 'daily', value: 100_000n });
    }
    for (const model of TEXT_MODELS) {
      const res = await post('/chat/completions', { model, max_tokens: 64, messages: [{ role: 'user', content: 'hello there' }] }, model === 'gpt-sim-mini' ? { 'x-request-id': 'layout-client-0001' } : {});
      must(model, res.status, 200);
      await res.json();
      requestIds.set(model, res.headers.get('x-request-id')!);
    }
    for (const model of IMAGE_MODELS) {
      const res = await post('/images/generations', { model, prompt: 'a lighthouse', n: 1 });
      must(model, res.status, 200);
      await res.json();
      requestIds.set(model, res.headers.get('x-request-id')!);
    }
    const failed = await post('/chat/completions', { model: 'gpt-sim-mini', max_tokens: 16, messages: [{ role: 'user', content: 'x [[sim:fault=500]]' }] });
    must('a failing request', failed.status, 502);
    failedId = failed.headers.get('x-request-id')!;
    email = `layout-${Date.now()}@example.com`;
    const made = (await admin(system, 'user', 'create', '--account', account.accountId, '--email', email)) as { set_password_url: string };
    browser = await launchChromium();
    const page = await browser.newPage();
    await setPassword(page, made.set_password_url, PASSWORD);
    await page.close();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await system?.stop();
  });

  for (const width of [1280, 1440]) {
    it(`at ${width} px nothing overflows the page and every table shows all its columns`, async () => {
      const context = await browser.newContext({ viewport: { width, height: 900 } });
      const page = await context.newPage();
      await signIn(page);
      const balance = await balanceOf(system, account.accountId);
      for (const path of PAGES) {
        await page.goto(`${system.consoleUrl}${path === 'KEY' ? `/keys/${account.keyId}` : path}`);
        await shot(page, `${width}-${path.replace(/[^a-z]+/g, '-')}`);
        const w = await widths(page);
        expect({ path, width: w.page }).toEqual({ path, width: Math.min(w.page, w.inner) });
        for (const box of w.boxes) expect({ path, table: box.scroll }).toEqual({ path, table: Math.min(box.scroll, box.client) });
        // The balance is in every page's header.
        expect([path, (await page.locator('[data-balance]').textContent())?.replace(/[^0-9]/g, '')]).toEqual([path, String(balance)]);
      }
      await page.goto(`${system.consoleUrl}/keys`);
      for (const link of await page.getByRole('link', { name: /^Manage/ }).all()) {
        const box = (await link.boundingBox())!;
        expect(box.x + box.width).toBeLessThanOrEqual(width);
      }
      await context.close();
    }, 60_000);
  }

  it('at 390 px the page never scrolls sideways; wide tables scroll in their own box, with a cue', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    await signIn(page);
    let scrolling = 0;
    for (const path of PAGES) {
      await page.goto(`${system.consoleUrl}${path === 'KEY' ? `/keys/${account.keyId}` : path}`);
      await shot(page, `390-${path.replace(/[^a-z]+/g, '-')}`);
      const w = await widths(page);
      expect({ path, width: w.page }).toEqual({ path, width: Math.min(w.page, w.inner) });
      const scrollsWithoutCue = w.boxes.filter((box, i) => box.scroll > box.client && !w.cueShown[i]);
      expect([path, scrollsWithoutCue]).toEqual([path, []]);
      scrolling += w.boxes.filter((box) => box.scroll > box.client).length;
    }
    expect(scrolling).toBeGreaterThan(0); // the wide tables did scroll, in their boxes
    await context.close();
  }, 60_000);

  it('creating a key answers 303 and shows the plaintext once; a reload creates nothing', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await signIn(page);
    const before = await page.locator('.keys-table tbody tr').count();
    await page.getByLabel('Name', { exact: true }).fill('made in the browser');
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/keys'),
      page.getByRole('button', { name: 'Create key' }).click(),
    ]);
    expect(answer.status()).toBe(303);
    expect(answer.headers().location).toBe('/keys');
    await page.waitForURL('**/keys');
    const plaintext = (await page.locator('#new-key-value').inputValue()).trim();
    expect(plaintext).toMatch(/^gwk_/);
    await shot(page, '1280-key-created');
    await page.reload();
    expect(await page.locator('#new-key-value').count()).toBe(0);
    expect(await page.content()).not.toContain(plaintext);
    expect(await page.locator('.keys-table tbody tr').count()).toBe(before + 1);
    await context.close();
  }, 60_000);

  it('nine models: the chart names each on its own row; the daily table lists only days with usage', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await signIn(page);
    await page.goto(`${system.consoleUrl}/usage?group=model`);
    const labels = await page.locator('#usage-chart .y-label').evaluateAll((els) => els.map((e) => e.getBoundingClientRect()).map((r) => ({ top: r.top, bottom: r.bottom })));
    expect(labels).toHaveLength(9);
    for (let i = 1; i < labels.length; i++) expect(labels[i]!.top).toBeGreaterThanOrEqual(labels[i - 1]!.bottom - 0.5);
    expect(await page.locator('#usage-chart title').allTextContents()).toContain(`${LONG_MODEL} (text): ${await page.locator('.usage-table tbody tr', { hasText: LONG_MODEL }).locator('td').last().textContent()} credits`);
    await page.goto(`${system.consoleUrl}/usage?group=day`);
    // Thirty days in the period, usage on one: one row, and a line saying the other 29 are left out.
    expect(await page.locator('.usage-table tbody tr').count()).toBe(1);
    expect(await page.locator('[data-idle-days]').getAttribute('data-idle-days')).toBe('29');
    expect(await page.locator('#usage-chart .bar').count()).toBe(30);
    await context.close();
  }, 60_000);

  it('the activity page lists each request by its x-request-id, filters by model and status', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await signIn(page);
    await page.goto(`${system.consoleUrl}/activity`);
    const all = await rowIds(page);
    expect(all).toHaveLength(requestIds.size + 1);
    expect(all.toSorted()).toEqual([...requestIds.values(), failedId].toSorted());
    const row = page.locator(`tr[data-request-id="${requestIds.get('gpt-sim-mini')}"]`);
    expect(await row.getAttribute('data-status')).toBe('succeeded');
    expect(await row.textContent()).toMatch(/\d+ in · \d+ out/);

    await page.getByLabel('Model').selectOption('gpt-sim-image');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/model=gpt-sim-image/);
    expect(await rowIds(page)).toEqual([requestIds.get('gpt-sim-image')]);
    expect(await page.locator('tbody tr').textContent()).toContain('1 image');

    await page.goto(`${system.consoleUrl}/activity?status=failed`);
    expect(await rowIds(page)).toEqual([failedId]);
    expect(await page.locator('tbody tr td.num').first().textContent()).toBe('0');
    await shot(page, '1280-activity-failed');
    // The CSV: every request, our id beside the client's own.
    const csv = await context.request.get(`${system.consoleUrl}/activity.csv`);
    expect(csv.headers()['content-type']).toBe('text/csv; charset=utf-8');
    const lines = (await csv.text()).trim().split('\r\n');
    expect(lines).toHaveLength(requestIds.size + 2);
    expect(lines.find((l) => l.includes(requestIds.get('gpt-sim-mini')!))).toContain(`,${requestIds.get('gpt-sim-mini')},layout-client-0001,`);
    await context.close();
  }, 60_000);
});
