import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Members } from '../src/members/members.ts';
import { InjectBrowser } from './browser.ts';
import { FakeBilling } from './fake-billing.ts';
import { SoftAuthenticator } from './soft-authenticator.ts';
import { FakeClock, TEST_ORIGIN as ORIGIN, openTestApp } from './support.ts';

const PASSWORD = 'a long enough passphrase';
const MIN = 60_000;

const unescape = (s: string) => s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&#96;/g, '`').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

/** The passkey challenge a page carries (options from the button, the handle from the form). */
function challengeOf(body: string, kind: 'create' | 'get', prefix: string): { challenge: string; handle: string } {
  const options = new RegExp(`data-passkey-${kind}="([^"]*)"`).exec(body)?.[1];
  const handle = new RegExp(`name="${prefix}handle" value="([^"]+)"`).exec(body)?.[1];
  expect(options, `a passkey ${kind} button`).toBeDefined();
  expect(handle).toBeDefined();
  return { challenge: (JSON.parse(unescape(options!)) as { challenge: string }).challenge, handle: handle! };
}

/** Adds a passkey from the account page of a recently signed-in browser. */
async function register(browser: InjectBrowser, auth: SoftAuthenticator, name = 'Laptop') {
  await browser.get('/account');
  const started = await browser.post('/account/passkeys/start', { csrf_token: browser.csrf() });
  expect(started.statusCode).toBe(200);
  const { challenge, handle } = challengeOf(started.body, 'create', 'passkey_');
  return browser.post('/account/passkeys/add', { csrf_token: browser.csrf(), name, passkey_handle: handle, passkey_response: JSON.stringify(auth.create(challenge)) });
}

describe('passkeys in the console: account page, sign-in, re-authentication, the owner requirement', () => {
  let orm: MikroORM;
  let app: FastifyInstance;
  let members: Members;
  const clock = new FakeClock(Date.now());
  const billing = new FakeBilling();
  const account = randomUUID();

  beforeAll(async () => {
    billing.addAccount(account, 'Alpha');
    const opened = await openTestApp(billing, { now: clock.now });
    ({ orm, app, members } = opened);
    return opened.close;
  });

  async function newMember(role: 'owner' | 'developer' = 'owner', accountId = account) {
    const email = `pk-${randomUUID()}@example.com`;
    const { memberId } = await members.create(accountId, email, role);
    await members.setPasswordWithToken((await members.issueSetPasswordToken(memberId)).token, PASSWORD);
    return { email, memberId };
  }

  async function passwordStep(email: string) {
    const browser = new InjectBrowser(app, ORIGIN);
    await browser.get('/login');
    const res = await browser.post('/login', { csrf_token: browser.csrf(), email, password: PASSWORD });
    return { browser, res };
  }

  it('registers from the account page; signing in then asks for the passkey, and only a registered one passes', async () => {
    const { email } = await newMember();
    const auth = new SoftAuthenticator();
    const { browser, res } = await passwordStep(email);
    expect(res.headers.location).toBe('/keys');
    const added = await register(browser, auth, 'Work <laptop>');
    expect(added.headers.location).toBe('/account?done=passkey-added');
    const page = await browser.get('/account');
    expect(page.body).toContain('Work &lt;laptop&gt;');
    expect(page.body).toContain('A passkey was added to your sign-in.');

    const second = await passwordStep(email);
    expect(second.res.statusCode).toBe(200);
    expect(second.res.body).toContain('Sign in with a passkey');
    expect(second.res.body).not.toContain('action="/login/code"');
    // Another authenticator's answer is refused, and the step can be tried again.
    const first = challengeOf(second.res.body, 'get', 'passkey_');
    const stranger = await second.browser.post('/login/passkey', {
      csrf_token: second.browser.csrf(),
      passkey_handle: first.handle,
      passkey_response: JSON.stringify(new SoftAuthenticator().get(first.challenge)),
    });
    expect(stranger.statusCode).toBe(401);
    expect(stranger.body).toContain('not registered');
    const retry = challengeOf(stranger.body, 'get', 'passkey_');
    const ok = await second.browser.post('/login/passkey', { csrf_token: second.browser.csrf(), passkey_handle: retry.handle, passkey_response: JSON.stringify(auth.get(retry.challenge)) });
    expect(ok.statusCode).toBe(303);
    expect(ok.headers.location).toBe('/keys');
    expect((await second.browser.get('/keys')).statusCode).toBe(200);
    // No second step, no passkey sign-in: the answer alone is refused.
    const fresh = new InjectBrowser(app, ORIGIN);
    await fresh.get('/login');
    expect((await fresh.post('/login/passkey', { csrf_token: fresh.csrf(), passkey_handle: retry.handle, passkey_response: '{}' })).statusCode).toBe(400);
  });

  it('a session signed in long ago re-authenticates with the passkey (a password alone is not enough) before a key or a passkey change', async () => {
    const { email, memberId } = await newMember('developer');
    const auth = new SoftAuthenticator();
    const { browser } = await passwordStep(email);
    expect((await register(browser, auth)).statusCode).toBe(303);
    clock.advance(16 * MIN);

    await browser.get('/account');
    expect((await browser.post('/account/passkeys/start', { csrf_token: browser.csrf() })).statusCode).toBe(403);
    const keysPage = await browser.get('/keys');
    expect(keysPage.body).toContain('name="reauth_passkey_handle"');
    expect(keysPage.body).not.toContain('name="reauth_password"');
    const before = billing.keys.size;
    expect((await browser.post('/keys', { csrf_token: browser.csrf(), name: 'x', expires_at: '', reauth_password: PASSWORD })).statusCode).toBe(400);
    const again = await browser.get('/keys');
    const { challenge, handle } = challengeOf(again.body, 'get', 'reauth_passkey_');
    const made = await browser.post('/keys', {
      csrf_token: browser.csrf(),
      name: 'late',
      expires_at: '',
      reauth_passkey_handle: handle,
      reauth_passkey_response: JSON.stringify(auth.get(challenge)),
    });
    expect(made.statusCode).toBe(303);
    expect(billing.keys.size).toBe(before + 1);

    // Re-authenticated: the passkey can be removed now.
    const accountPage = await browser.get('/account');
    const id = /name="passkey" value="([0-9a-f-]{36})"/.exec(accountPage.body)?.[1];
    expect(id).toBeDefined();
    expect((await browser.post('/account/passkeys/remove', { csrf_token: browser.csrf(), passkey: id! })).headers.location).toBe('/account?done=passkey-removed');
    const after = await browser.get('/account');
    expect(after.body).toContain('No passkeys yet.');
    expect(after.body).toContain('A passkey was removed from your sign-in.');
    // Adding and removing it are in the account's audit trail, as the member, from the client's address.
    const trail = await orm.em.fork().execute<Array<{ account_id: string; origin: string; action: string; details: { passkey_id: string } }>>(
      'select account_id, origin, action, details from audit_event where actor = ? order by id',
      [`member:${memberId}`],
    );
    expect(trail).toEqual([
      { account_id: account, origin: '127.0.0.1', action: 'console.AddPasskey', details: { passkey_id: id, name: expect.any(String) as string } },
      { account_id: account, origin: '127.0.0.1', action: 'console.RemovePasskey', details: { passkey_id: id } },
    ]);
  });

  it("a passkey satisfies the owner's requirement of two-step sign-in", async () => {
    const acct = randomUUID();
    billing.addAccount(acct, 'Strict');
    const owner = await newMember('owner', acct);
    const dev = await newMember('developer', acct);
    const ownerSide = await passwordStep(owner.email);
    const devSide = await passwordStep(dev.email);
    await ownerSide.browser.get('/members');
    expect((await ownerSide.browser.post('/members/require-totp', { csrf_token: ownerSide.browser.csrf(), require_totp: 'yes' })).statusCode).toBe(400);
    expect((await register(ownerSide.browser, new SoftAuthenticator())).statusCode).toBe(303);
    await ownerSide.browser.get('/members');
    expect((await ownerSide.browser.post('/members/require-totp', { csrf_token: ownerSide.browser.csrf(), require_totp: 'yes' })).headers.location).toBe('/account?done=require-totp-on');

    expect((await devSide.browser.get('/keys')).headers.location).toBe('/account?done=totp-required');
    expect((await register(devSide.browser, new SoftAuthenticator())).statusCode).toBe(303);
    expect((await devSide.browser.get('/keys')).statusCode).toBe(200);
  });
});
