import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { launchChromium, screenshots, setPasswordAndSignIn } from '../support/console-browser.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';

/**
 * Alerts and the audit trail in a real browser (Debian's headless Chromium) against the whole
 * running system: an owner creates a low-balance alert above the balance (so it starts crossed:
 * the banner shows), sees its signing secret once, sends a test delivery that a loopback receiver
 * gets signed with that secret, and finds the change in the Audit page under their own e-mail
 * (the console named the member to billing). Screenshots in test-results/screenshots/.
 */
const PASSWORD = 'owner of the delta account';

const shot = screenshots('console-alerts');

describe('alerts and the audit trail in a browser', () => {
  let system: RunningSystem;
  let browser: Browser;
  let receiver: Server;
  let accountId: string;
  const received: Array<{ headers: IncomingHttpHeaders; body: string }> = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    system = await startTestSystem();
    ({ accountId } = await fundedAccount(system, 100_000));
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await system?.stop();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  it('an owner creates an alert, sees the secret once and the banner, tests the webhook, and finds the change in the audit trail', async () => {
    const email = `owner-${Date.now()}@example.com`;
    const added = (await admin(system, 'member', 'add', '--account', accountId, '--email', email, '--role', 'owner')) as { member_id: string; set_password_url: string };
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await setPasswordAndSignIn(page, added.set_password_url, email, PASSWORD);
    expect(await page.locator('[data-alert-banner]').count()).toBe(0);

    await page.getByRole('link', { name: 'Alerts' }).click();
    await page.waitForURL('**/alerts');
    const { port } = receiver.address() as AddressInfo;
    // Above the balance of 100,000: the alert starts crossed (disarmed until a top-up lifts the balance).
    await page.getByLabel('Low balance').fill('200000');
    await page.getByLabel('Webhook URL').fill(`http://127.0.0.1:${port}/hook`);
    await page.getByRole('button', { name: 'Create alert' }).click();
    await page.waitForURL('**/alerts');
    const secret = await page.locator('#new-secret-value').inputValue();
    expect(secret).toMatch(/^whsec_/);
    expect(await page.locator('[data-alert-banner]').textContent()).toContain('The balance fell below 200,000 credits.');
    await shot(page, '01-created');
    await page.reload();
    expect(await page.locator('#new-secret-value').count()).toBe(0);
    expect(await page.locator('[data-alert]').textContent()).toContain('reached');

    await page.getByRole('button', { name: 'Send a test' }).click();
    await page.waitForURL('**/alerts?done=alert-tested');
    await expect.poll(() => received.length, { timeout: 20_000 }).toBe(1);
    const [delivery] = received;
    const id = String(delivery!.headers['webhook-id']);
    const timestamp = String(delivery!.headers['webhook-timestamp']);
    const signed = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64')).update(`${id}.${timestamp}.${delivery!.body}`).digest('base64');
    expect(String(delivery!.headers['webhook-signature']).split(' ')).toContain(`v1,${signed}`);
    expect(JSON.parse(delivery!.body)).toMatchObject({ type: 'alert.test', data: { account_id: accountId } });
    await expect
      .poll(async () => {
        await page.reload();
        return page.locator(`tr[data-delivery="${id}"]`).getAttribute('data-status');
      }, { timeout: 20_000 })
      .toBe('delivered');
    await shot(page, '02-delivered');

    // The banner is on every page, and the change is in the audit trail under the member's name.
    await page.getByRole('link', { name: 'Audit' }).click();
    await page.waitForURL('**/audit');
    expect(await page.locator('[data-alert-banner]').count()).toBe(1);
    const row = page.locator('tr[data-action="alerts.SetAlert"]');
    expect(await row.textContent()).toContain(`${email} (member:${added.member_id})`);
    expect(await row.textContent()).toContain('127.0.0.1');
    expect(await page.locator('tr[data-action="console.InviteMember"]').count()).toBe(1);
    await shot(page, '03-audit');

    // A top-up above the threshold re-arms the alert: the banner goes.
    await admin(system, 'wallet', 'top-up', '--account', accountId, '--credits', '200000', '--reference', `lift-${accountId}`);
    await page.reload();
    expect(await page.locator('[data-alert-banner]').count()).toBe(0);
  });
});
