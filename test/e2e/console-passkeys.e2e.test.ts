import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { freePort, launchChromium, screenshots, setPasswordAndSignIn } from '../support/console-browser.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';

/**
 * Passkeys in a real browser (Debian's headless Chromium) with the DevTools Protocol's virtual
 * authenticator (CTAP2, internal transport, resident keys, user verification): a member registers
 * a passkey on the account page, signs out, and signs in with password and passkey; the console's
 * relying party is its public URL (http://localhost:<port>, a secure context), never the Host.
 */
const PASSWORD = 'passkeys keep phished passwords out';

const shot = screenshots('console-passkeys');

describe('passkeys in a browser', () => {
  let system: RunningSystem;
  let browser: Browser;
  let accountId: string;
  let origin: string;

  beforeAll(async () => {
    // The public URL must name the port before the console starts.
    const port = await freePort();
    origin = `http://localhost:${port}`;
    system = await startTestSystem({ consolePort: port, serviceEnv: { console: { CONSOLE_PUBLIC_URL: origin } } });
    ({ accountId } = await fundedAccount(system, 10_000));
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await system?.stop();
  });

  it('registers a passkey from the account page, then signs in with password and passkey', async () => {
    const email = `passkey-${Date.now()}@example.com`;
    const added = (await admin(system, 'member', 'add', '--account', accountId, '--email', email, '--role', 'owner')) as { set_password_url: string };
    expect(added.set_password_url.startsWith(`${origin}/set-password?token=`)).toBe(true);

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
    });

    await setPasswordAndSignIn(page, added.set_password_url, email, PASSWORD);

    // Register: "Add a passkey" asks the server for options, the button hands them to the authenticator.
    await page.goto(`${origin}/account`);
    expect(await page.locator('#passkeys-heading').textContent()).toBe('Passkeys');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByLabel('Name of this passkey').fill('Virtual laptop');
    await page.getByRole('button', { name: 'Create the passkey' }).click();
    await page.waitForURL('**/account?done=passkey-added');
    expect(await page.locator('#passkeys').textContent()).toContain('Virtual laptop');
    await shot(page, '01-registered');
    const registered = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(registered.credentials).toHaveLength(1);
    expect(registered.credentials[0]!.rpId).toBe('localhost');

    // Sign out, then sign in: after the password the console asks for the passkey.
    await page.getByRole('button', { name: 'Log out', exact: true }).click();
    await page.waitForURL('**/login?done=logged-out');
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Sign in with a passkey' }).isVisible()).toBe(true);
    // No TOTP set up: the passkey is the only second step offered.
    expect(await page.locator('form[action="/login/code"]').count()).toBe(0);
    await shot(page, '02-second-step');
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.waitForURL('**/keys');
    const used = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(used.credentials[0]!.signCount).toBeGreaterThan(0);
    await page.goto(`${origin}/account`);
    expect(await page.locator('#passkeys tbody tr').count()).toBe(1);
    expect(await page.locator('#passkeys tbody tr td').nth(2).textContent()).not.toBe('never');
    await context.close();
  }, 120_000);
});
