import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { launchChromium, screenshots, setPasswordAndSignIn } from '../support/console-browser.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';

/**
 * Members and roles in a real browser (Debian's headless Chromium, playwright-core) against the
 * whole running system: the operator adds an owner with `pnpm admin member add`; the owner
 * invites a developer from the dashboard; the developer follows the one-time link, sets a
 * password, signs in and sees only what a developer may do; the owner makes them a viewer and
 * the next page already says so. Screenshots in test-results/screenshots/ (git-ignored).
 */
const OWNER_PASSWORD = 'owner of the gamma account';
const DEV_PASSWORD = 'developer joins the gamma team';

const shot = screenshots('console-members');

describe('members and roles in a browser', () => {
  let system: RunningSystem;
  let browser: Browser;
  let accountId: string;

  beforeAll(async () => {
    system = await startTestSystem();
    ({ accountId } = await fundedAccount(system, 100_000));
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await system?.stop();
  });

  it('an invitation end to end: owner invites a developer, who joins, sees a developer\'s console, and loses keys when made a viewer', async () => {
    const ownerEmail = `owner-${Date.now()}@example.com`;
    const added = (await admin(system, 'member', 'add', '--account', accountId, '--email', ownerEmail, '--role', 'owner')) as { member_id: string; set_password_url: string };
    expect(added.member_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(added.set_password_url.startsWith(`${system.consoleUrl}/set-password?token=`)).toBe(true);
    const owner = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await setPasswordAndSignIn(owner, added.set_password_url, ownerEmail, OWNER_PASSWORD);

    // The owner invites a developer from the Members page and gets the one-time link once.
    await owner.getByRole('link', { name: 'Members' }).click();
    await owner.waitForURL('**/members');
    const devEmail = `dev-${Date.now()}@example.com`;
    await owner.getByLabel('E-mail').fill(devEmail);
    await owner.getByLabel('Role', { exact: true }).selectOption('developer');
    await owner.getByRole('button', { name: 'Invite' }).click();
    await expect.poll(() => owner.locator('#invite-link').isVisible()).toBe(true);
    const link = await owner.locator('#invite-link').inputValue();
    expect(link.startsWith(`${system.consoleUrl}/set-password?token=`)).toBe(true);
    await shot(owner, '01-invited');
    await owner.reload();
    expect(await owner.locator('#invite-link').count()).toBe(0);
    expect(await owner.locator('tr', { hasText: devEmail }).textContent()).toContain('Invited (no password yet)');

    // The developer joins through the link, in a browser of their own.
    const dev = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
    await setPasswordAndSignIn(dev, link, devEmail, DEV_PASSWORD);
    const nav = await dev.locator('header nav').textContent();
    expect(nav).toContain('API keys');
    expect(nav).not.toContain('Members');
    await dev.getByLabel('Name', { exact: true }).fill('dev key');
    await dev.getByRole('button', { name: 'Create key' }).click();
    await expect.poll(() => dev.getByText('It will not be shown again').isVisible()).toBe(true);
    await shot(dev, '02-developer-key');
    // The key the account was funded with is not the developer's: it can be viewed, not changed.
    await dev.goto(`${system.consoleUrl}/keys`);
    expect(await dev.getByRole('link', { name: /^View/ }).count()).toBeGreaterThan(0);
    const members = await dev.goto(`${system.consoleUrl}/members`);
    expect(members?.status()).toBe(403);
    expect(await dev.locator('h1').textContent()).toBe('Not allowed');

    // The owner makes them a viewer: their next page has no keys.
    await owner.goto(`${system.consoleUrl}/members`);
    const row = owner.locator('tr', { hasText: devEmail });
    await row.getByRole('combobox').selectOption('viewer');
    await row.getByRole('button', { name: /Change role/ }).click();
    await owner.waitForURL('**/members?done=role-changed');
    const keys = await dev.goto(`${system.consoleUrl}/keys`);
    expect(keys?.status()).toBe(403);
    await dev.goto(`${system.consoleUrl}/usage`);
    expect(await dev.locator('header nav').textContent()).not.toContain('API keys');
    await shot(dev, '03-viewer');

    const listed = (await admin(system, 'member', 'list', '--account', accountId)) as { members: Array<{ email: string; role: string; status: string }> };
    expect(listed.members.map((m) => [m.email, m.role, m.status])).toEqual([
      [ownerEmail, 'owner', 'active'],
      [devEmail, 'viewer', 'active'],
    ]);
  }, 120_000);
});
