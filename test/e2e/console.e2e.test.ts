import { APIError } from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { openaiClient, waitForListing, seedDemoModels } from '../support/clients.ts';
import { launchChromium, screenshots, setPasswordAndSignIn } from '../support/console-browser.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';

/**
 * The account dashboard in a real browser (Debian's headless Chromium driven by playwright-core)
 * against the whole running system: members made by the operator CLI, keys made in the page and
 * used with the official OpenAI SDK, usage and balance read back, revocation, and isolation
 * between accounts (through the UI and by crafted requests). Screenshots are kept in
 * test-results/screenshots/ (git-ignored) as artifacts.
 */
const PASSWORD_A = 'alpha member passphrase';
const PASSWORD_B = 'bravo member passphrase';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const shot = screenshots('console');
const digits = (text: string | null) => Number((text ?? '').replace(/[^0-9]/g, ''));

describe('account dashboard in a browser', () => {
  let system: RunningSystem;
  let browser: Browser;
  let alpha: { accountId: string; keyId: string; apiKey: string };
  let bravo: { accountId: string; keyId: string; apiKey: string };
  let contextA: BrowserContext;
  let contextB: BrowserContext;
  let pageA: Page;
  let pageB: Page;
  /** Key made in the UI by member A (plaintext seen once, in the page). */
  const created = { id: '', apiKey: '' };

  /** The operator makes a member; the member sets a password through the link and signs in. */
  async function onboard(context: BrowserContext, accountId: string, email: string, password: string): Promise<Page> {
    const made = (await admin(system, 'user', 'create', '--account', accountId, '--email', email)) as { user_id: string; set_password_url: string };
    expect(made.user_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(made.set_password_url).toContain(`${system.consoleUrl}/set-password?token=`);
    const page = await context.newPage();
    await setPasswordAndSignIn(page, made.set_password_url, email, password);
    return page;
  }

  async function balanceShown(page: Page): Promise<number> {
    await page.goto(`${system.consoleUrl}/balance`);
    return digits(await page.locator('#balance-value').textContent());
  }

  beforeAll(async () => {
    system = await startTestSystem();
    await seedDemoModels(system);
    alpha = await fundedAccount(system, 1_000_000);
    bravo = await fundedAccount(system, 50_000);
    await waitForListing(system, alpha.apiKey, ['gpt-sim-mini']);
    browser = await launchChromium();
    contextA = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    contextB = await browser.newContext({ viewport: { width: 390, height: 844 } }); // a phone: the pages are responsive
    pageA = await onboard(contextA, alpha.accountId, `alpha-${Date.now()}@example.com`, PASSWORD_A);
    pageB = await onboard(contextB, bravo.accountId, `bravo-${Date.now()}@example.com`, PASSWORD_B);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await system?.stop();
  });

  it('creates a key in the page, shows it once, and the key works with the OpenAI SDK', async () => {
    await shot(pageA, '01-keys');
    await pageA.getByLabel('Name', { exact: true }).fill('browser key');
    await pageA.getByRole('button', { name: 'Create key' }).click();
    await expect.poll(() => pageA.getByText('It will not be shown again').isVisible()).toBe(true);
    created.apiKey = (await pageA.locator('#new-key-value').inputValue()).trim();
    expect(created.apiKey).toMatch(/^gwk_[0-9A-Za-z]{38}$/);
    created.id = new URL((await pageA.getByRole('link', { name: 'Set limits or an expiry for this key' }).getAttribute('href'))!, system.consoleUrl).pathname.split('/')[2]!;
    await shot(pageA, '02-key-created');
    // Shown once: the list (and any reload) has only the prefix and the last four characters.
    await pageA.goto(`${system.consoleUrl}/keys`);
    const listed = await pageA.content();
    expect(listed).not.toContain(created.apiKey);
    expect(listed).toContain(created.apiKey.slice(-4));

    const answer = await openaiClient(system, created.apiKey).chat.completions.create({
      model: 'gpt-sim-mini',
      messages: [{ role: 'user', content: 'Say hello to the dashboard' }],
      max_tokens: 50,
    });
    expect(answer.choices[0]?.message.content).toBeTruthy();
  }, 60_000);

  it('shows that request in usage (chart, table, CSV) and the balance drop in the ledger', async () => {
    const balance = await balanceShown(pageA);
    expect(balance).toBeLessThan(1_000_000);
    const charge = pageA.locator('tr[data-kind="charge"]').first();
    await expect.poll(() => charge.textContent()).toContain('gpt-sim-mini');
    expect(await charge.textContent()).toContain('browser key');
    expect(digits(await charge.locator('td').last().textContent())).toBe(balance);
    expect(await pageA.locator('tr[data-kind="top_up"]').textContent()).toContain('1,000,000');
    await shot(pageA, '03-balance');

    await pageA.goto(`${system.consoleUrl}/usage`);
    expect(digits(await pageA.locator('[data-stat="requests"]').textContent())).toBe(1);
    expect(digits(await pageA.locator('[data-stat="credits"]').textContent())).toBe(1_000_000 - balance);
    expect(await pageA.locator('#usage-chart rect').count()).toBeGreaterThan(0);
    // Only this key, by model, through the form.
    await pageA.getByLabel('Key', { exact: true }).selectOption(created.id);
    await pageA.getByLabel('Group by').selectOption('model');
    await pageA.getByRole('button', { name: 'Show' }).click();
    await pageA.waitForURL(/group=model/);
    const row = pageA.locator('.usage-table tbody tr').first();
    expect(await row.locator('th').textContent()).toBe('gpt-sim-mini (text)');
    expect(digits(await row.locator('td').first().textContent())).toBe(1);
    await shot(pageA, '04-usage-by-model');

    const csvHref = await pageA.getByRole('button', { name: 'Download CSV' }).getAttribute('href');
    const csv = await contextA.request.get(new URL(csvHref!, system.consoleUrl).toString());
    expect(csv.headers()['content-type']).toBe('text/csv; charset=utf-8');
    const lines = (await csv.text()).trim().split('\r\n');
    expect(lines[0]).toBe('model,requests,input_tokens,output_tokens,total_tokens,images,video_seconds,credits,time_zone');
    expect(lines[1]).toMatch(new RegExp(`^gpt-sim-mini,1,\\d+,\\d+,\\d+,0,0,${1_000_000 - balance},Asia/Ho_Chi_Minh$`));
  }, 60_000);

  it('sets a limit and an expiry from the keyboard, then revokes: the next API call gets auth_revoked', async () => {
    await pageA.goto(`${system.consoleUrl}/keys/${created.id}`);
    await pageA.getByLabel('Limit', { exact: true }).selectOption('requests');
    await pageA.getByLabel('Period', { exact: true }).selectOption('daily');
    await pageA.getByLabel('Value', { exact: true }).fill('1000');
    await pageA.getByLabel('Value', { exact: true }).press('Enter'); // keyboard submit
    await pageA.waitForURL(/done=limit-saved/);
    expect(await pageA.locator('.limits-table').textContent()).toContain('1,000');
    await pageA.getByLabel(/Expires at/).fill('2099-12-31T23:30');
    await pageA.getByRole('button', { name: 'Save expiry' }).click();
    await pageA.waitForURL(/done=expiry-saved/);
    expect(await pageA.locator('.key-facts').textContent()).toContain('31 Dec 2099, 23:30');

    await pageA.getByLabel(/I understand/).check();
    await pageA.getByRole('button', { name: 'Revoke key' }).click();
    await pageA.waitForURL(/done=key-revoked/);
    expect(await pageA.locator('.status').first().textContent()).toBe('Revoked');
    await shot(pageA, '05-key-revoked');

    const client = openaiClient(system, created.apiKey);
    // Revocation reaches the gateway's key cache by an event; allow it a moment, as a client would see it.
    let refusal: { status: number | undefined; code: string } | undefined;
    const deadline = Date.now() + 2_000;
    while (Date.now() < deadline && !refusal) {
      try {
        await client.chat.completions.create({ model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'still there?' }], max_tokens: 5 });
        await sleep(25);
      } catch (err) {
        if (!(err instanceof APIError)) throw err;
        refusal = { status: err.status, code: String((err.error as { code?: string } | undefined)?.code ?? err.code) };
      }
    }
    expect(refusal).toEqual({ status: 401, code: 'auth_revoked' });
  }, 60_000);

  it('a member of another account cannot see or act on the first account\'s keys (UI and crafted requests)', async () => {
    await pageB.goto(`${system.consoleUrl}/keys`);
    const listB = await pageB.content();
    for (const secret of [alpha.keyId, created.id, 'browser key']) expect(listB).not.toContain(secret);
    expect(listB).toContain(bravo.keyId);
    await shot(pageB, '06-other-account-keys-mobile');

    const foreign = await pageB.goto(`${system.consoleUrl}/keys/${alpha.keyId}`);
    expect(foreign?.status()).toBe(404);
    expect(await pageB.getByRole('heading', { level: 1 }).textContent()).toBe('Not found');
    await shot(pageB, '07-other-account-key-not-found');
    expect((await pageB.goto(`${system.consoleUrl}/usage?key=${alpha.keyId}`))?.status()).toBe(404);

    // Crafted requests with B's own session cookie and a valid CSRF token of B's session.
    await pageB.goto(`${system.consoleUrl}/keys`);
    const csrf = (await pageB.locator('input[name="csrf_token"]').first().getAttribute('value'))!;
    const post = (path: string, form: Record<string, string>) =>
      contextB.request.post(`${system.consoleUrl}${path}`, { form: { csrf_token: csrf, ...form }, headers: { origin: system.consoleUrl }, maxRedirects: 0 });
    const attempts = [
      await post(`/keys/${alpha.keyId}/revoke`, { confirm: 'yes' }),
      await post(`/keys/${alpha.keyId}/limits`, { limit_type: 'spending', period: 'daily', value: '1' }),
      await post(`/keys/${alpha.keyId}/limits/clear`, { limit_type: 'requests', period: 'daily' }),
      await post(`/keys/${alpha.keyId}/expiry`, { expires_at: '2030-01-01T00:00' }),
      await post(`/keys/${alpha.keyId}/revoke`, { confirm: 'yes', account_id: alpha.accountId }),
    ];
    expect(attempts.map((r) => r.status())).toEqual([404, 404, 404, 404, 404]);
    // The same crafted request is accepted on B's own key, so the 404s above are the ownership rule.
    const own = await post(`/keys/${bravo.keyId}/limits`, { limit_type: 'spending', period: 'monthly', value: '25000' });
    expect(own.status()).toBe(303);

    // A's key is untouched: it still works and has no limit or expiry.
    expect((await fetch(`${system.baseUrl}/models`, { headers: { authorization: `Bearer ${alpha.apiKey}` } })).status).toBe(200);
    await pageA.goto(`${system.consoleUrl}/keys/${alpha.keyId}`);
    expect(await pageA.getByText('This key has no limits.').isVisible()).toBe(true);
    expect(await pageA.locator('.key-facts').textContent()).toMatch(/Expires\s*Never/);
  }, 60_000);

  it('pages are keyboard-usable and labelled: skip link, landmarks, focus on the main content', async () => {
    await pageA.goto(`${system.consoleUrl}/usage`);
    await pageA.keyboard.press('Tab');
    expect(await pageA.locator(':focus').textContent()).toBe('Skip to main content');
    await pageA.keyboard.press('Enter');
    expect(await pageA.locator(':focus').getAttribute('id')).toBe('main');
    expect(await pageA.getByRole('navigation', { name: 'Main' }).count()).toBe(1);
    expect(await pageA.getByRole('main').count()).toBe(1);
    expect(await pageA.getByRole('link', { name: 'Usage' }).getAttribute('aria-current')).toBe('page');
    // Every form control has an accessible name.
    // (A string, evaluated in the page: this project compiles without the DOM library.)
    const unlabeled = await pageA.evaluate<string[]>(
      `[...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
        .filter((el) => !el.labels?.length && !el.getAttribute('aria-label') && !el.hasAttribute('hidden'))
        .map((el) => el.outerHTML)`,
    );
    expect(unlabeled).toEqual([]);
    expect(await pageA.getByRole('img', { name: /Credits by day/ }).count()).toBe(1);
  }, 30_000);

  it('the operator CLI issues a password reset link for an existing member, which opens the set-password form', async () => {
    const email = `reset-${Date.now()}@example.com`;
    const context = await browser.newContext();
    await onboard(context, bravo.accountId, email, PASSWORD_B);
    await context.close();
    const reset = (await admin(system, 'user', 'reset-password', '--email', email)) as { user_id: string; set_password_url: string };
    expect(reset.user_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(reset.set_password_url).toContain(`${system.consoleUrl}/set-password?token=`);
    const form = await fetch(reset.set_password_url);
    expect(form.status).toBe(200);
    expect(await form.text()).toContain('Set password');
  });

  it('signs out, and a signed-out browser is sent to the sign-in page', async () => {
    await pageB.goto(`${system.consoleUrl}/account`);
    await pageB.getByRole('button', { name: 'Log out everywhere' }).click();
    await pageB.waitForURL('**/login?done=logged-out-everywhere');
    await pageB.goto(`${system.consoleUrl}/balance`);
    expect(new URL(pageB.url()).pathname).toBe('/login');
    await shot(pageB, '08-signed-out');
  }, 30_000);
});
