import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ROOT } from '../../scripts/system.ts';

/**
 * What the console's browser tests share: Debian's headless Chromium (playwright-core), their
 * screenshots in test-results/screenshots/ (git-ignored, kept as artifacts), and a member's first
 * visit (a one-time link, a password, signing in).
 */

const SHOTS = join(ROOT, 'test-results', 'screenshots');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Starts headless Chromium (no sandbox, no GPU, no background traffic: loopback only). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
}

/** A function that saves a full-page screenshot as `<prefix>-<name>.png` (making the folder). */
export function screenshots(prefix: string): (page: Page, name: string) => Promise<Buffer> {
  return (page, name) => {
    mkdirSync(SHOTS, { recursive: true });
    return page.screenshot({ path: join(SHOTS, `${prefix}-${name}.png`), fullPage: true });
  };
}

/** Follows a one-time link and chooses the password; the page is then on the sign-in form. */
export async function setPassword(page: Page, link: string, password: string): Promise<void> {
  await page.goto(link);
  await page.getByLabel('New password', { exact: true }).fill(password);
  await page.getByLabel('Repeat the new password').fill(password);
  await page.getByRole('button', { name: 'Set password' }).click();
  await page.waitForURL('**/login?done=password-set');
}

/** Signs in on the sign-in form the page shows, landing on the keys page. */
export async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL('**/keys');
}

/** Follows a one-time link, chooses the password and signs in with it. */
export async function setPasswordAndSignIn(page: Page, link: string, email: string, password: string): Promise<void> {
  await setPassword(page, link, password);
  await signIn(page, email, password);
}

/** A free loopback port (for a service whose public URL must name its port before it starts). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
