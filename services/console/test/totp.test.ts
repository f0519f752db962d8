import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { TotpCodes } from '../src/auth/totp.ts';
import type { Members } from '../src/members/members.ts';
import { InjectBrowser } from './browser.ts';
import { FakeBilling } from './fake-billing.ts';
import { FakeClock, TEST_ORIGIN as ORIGIN, testHmac, openTestApp } from './support.ts';

const PASSWORD = 'a long enough passphrase';
const MIN = 60_000;

describe('two-step sign-in (TOTP) and re-authentication before creating a key', () => {
  let orm: MikroORM;
  let app: FastifyInstance;
  let members: Members;
  const clock = new FakeClock(Date.now());
  const billing = new FakeBilling();
  const account = randomUUID();
  const codes = new TotpCodes(testHmac());

  beforeAll(async () => {
    billing.addAccount(account, 'Alpha');
    const opened = await openTestApp(billing, { now: clock.now });
    ({ orm, app, members } = opened);
    return opened.close;
  });

  async function signIn(email: string, password = PASSWORD) {
    const browser = new InjectBrowser(app, ORIGIN);
    await browser.get('/login');
    const res = await browser.post('/login', { csrf_token: browser.csrf(), email, password });
    return { browser, res };
  }

  it('set up with a code from the secret, then signing in asks for a code; a code works once; turning it off needs password and code', async () => {
    const email = `totp-${randomUUID()}@example.com`;
    const { memberId } = await members.create(account, email, 'owner');
    const link = await members.issueSetPasswordToken(memberId);
    await members.setPasswordWithToken(link.token, PASSWORD);
    const { browser } = await signIn(email);
    await browser.get('/account');
    const started = await browser.post('/account/totp/start', { csrf_token: browser.csrf() });
    const secret = /<code id="totp-secret">([A-Z2-7]+)<\/code>/.exec(started.body)?.[1];
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(started.body).toContain('otpauth://totp/');
    const stored = await orm.em.fork().execute<{ totp_pending: Buffer }[]>('select totp_pending from member where id = ?', [memberId]);
    expect(stored[0]?.totp_pending.toString('latin1')).not.toContain(secret!); // sealed
    expect((await browser.post('/account/totp/confirm', { csrf_token: browser.csrf(), code: '000000' })).statusCode).toBe(400);
    const confirmed = await browser.post('/account/totp/confirm', { csrf_token: browser.csrf(), code: codes.code(secret!, clock.ms) });
    expect(confirmed.headers.location).toBe('/account?done=totp-on');
    expect((await browser.get('/account')).body).toContain('Two-step sign-in was turned on');

    // The password alone no longer signs in: it leads to the code page, without a session.
    clock.advance(30_000);
    const second = await signIn(email);
    expect(second.res.statusCode).toBe(200);
    expect(second.res.body).toContain('Two-step sign-in');
    expect(second.browser.cookies.has('__Host-gw_session')).toBe(false);
    const wrong = await second.browser.post('/login/code', { csrf_token: second.browser.csrf(), code: '123456' === codes.code(secret!, clock.ms) ? '654321' : '123456' });
    expect(wrong.statusCode).toBe(401);
    const code = codes.code(secret!, clock.ms);
    const right = await second.browser.post('/login/code', { csrf_token: second.browser.csrf(), code });
    expect([right.statusCode, right.headers.location]).toEqual([303, '/keys']);
    expect((await second.browser.get('/keys')).statusCode).toBe(200);
    // The same code again (another sign-in within its period) is refused: it was used.
    const replay = await signIn(email);
    expect((await replay.browser.post('/login/code', { csrf_token: replay.browser.csrf(), code })).statusCode).toBe(401);
    // A code page posted without the password step first leads back to sign-in.
    const skipped = new InjectBrowser(app, ORIGIN);
    await skipped.get('/login');
    expect((await skipped.post('/login/code', { csrf_token: skipped.csrf(), code })).statusCode).toBe(400);

    // Creating a key a while after signing in asks for the password and a code again.
    clock.advance(20 * MIN);
    const keys = await second.browser.get('/keys');
    expect(keys.body).toContain('Confirm it is you');
    const before = billing.keys.size;
    expect((await second.browser.post('/keys', { csrf_token: second.browser.csrf(), name: 'late', expires_at: '' })).statusCode).toBe(400);
    expect((await second.browser.post('/keys', { csrf_token: second.browser.csrf(), name: 'late', expires_at: '', reauth_password: PASSWORD, reauth_code: '000000' })).statusCode).toBe(400);
    expect(billing.keys.size).toBe(before);
    const made = await second.browser.post('/keys', { csrf_token: second.browser.csrf(), name: 'late', expires_at: '', reauth_password: PASSWORD, reauth_code: codes.code(secret!, clock.ms) });
    expect(made.statusCode).toBe(303);
    expect(billing.keys.size).toBe(before + 1);
    // Proved again: the next key within the quarter of an hour asks nothing more.
    await second.browser.get('/keys');
    expect((await second.browser.post('/keys', { csrf_token: second.browser.csrf(), name: 'next', expires_at: '' })).statusCode).toBe(303);

    clock.advance(30_000);
    await second.browser.get('/account');
    expect((await second.browser.post('/account/totp/disable', { csrf_token: second.browser.csrf(), current: 'wrong password!', code: codes.code(secret!, clock.ms) })).statusCode).toBe(400);
    const off = await second.browser.post('/account/totp/disable', { csrf_token: second.browser.csrf(), current: PASSWORD, code: codes.code(secret!, clock.ms) });
    expect(off.headers.location).toBe('/account?done=totp-off');
    clock.advance(30_000);
    expect((await signIn(email)).res.headers.location).toBe('/keys');
    // Turning it on and off are in the account's audit trail, as the member, from the client's address.
    const trail = await orm.em.fork().execute<Array<{ account_id: string; origin: string; action: string }>>(
      'select account_id, origin, action from audit_event where actor = ? order by id',
      [`member:${memberId}`],
    );
    expect(trail).toEqual([
      { account_id: account, origin: '127.0.0.1', action: 'console.EnableTotp' },
      { account_id: account, origin: '127.0.0.1', action: 'console.DisableTotp' },
    ]);
  });

  it('without two-step sign-in, creating a key late asks for the password only', async () => {
    const email = `late-${randomUUID()}@example.com`;
    const { memberId } = await members.create(account, email, 'developer');
    await members.setPasswordWithToken((await members.issueSetPasswordToken(memberId)).token, PASSWORD);
    const { browser } = await signIn(email);
    clock.advance(16 * MIN);
    const page = await browser.get('/keys');
    expect(page.body).toContain('name="reauth_password"');
    expect(page.body).not.toContain('name="reauth_code"');
    expect((await browser.post('/keys', { csrf_token: browser.csrf(), name: 'x', expires_at: '', reauth_password: 'not my password' })).statusCode).toBe(400);
    expect((await browser.post('/keys', { csrf_token: browser.csrf(), name: 'x', expires_at: '', reauth_password: PASSWORD })).statusCode).toBe(303);
  });

  it("an owner may require two-step sign-in of every member: until a member sets it up, only their account page opens", async () => {
    const acct = randomUUID();
    billing.addAccount(acct, 'Strict');
    const make = async (role: 'owner' | 'developer') => {
      const email = `${role}-${randomUUID()}@example.com`;
      const { memberId } = await members.create(acct, email, role);
      await members.setPasswordWithToken((await members.issueSetPasswordToken(memberId)).token, PASSWORD);
      return { email, memberId, ...(await signIn(email)) };
    };
    const owner = await make('owner');
    const dev = await make('developer');
    await owner.browser.get('/members');
    // The owner needs it on themselves first.
    expect((await owner.browser.post('/members/require-totp', { csrf_token: owner.browser.csrf(), require_totp: 'yes' })).statusCode).toBe(400);
    await owner.browser.get('/account');
    const secret = /<code id="totp-secret">([A-Z2-7]+)<\/code>/.exec((await owner.browser.post('/account/totp/start', { csrf_token: owner.browser.csrf() })).body)![1]!;
    clock.advance(30_000);
    await owner.browser.post('/account/totp/confirm', { csrf_token: owner.browser.csrf(), code: codes.code(secret, clock.ms) });
    await owner.browser.get('/members');
    // A developer cannot change the requirement (not even an admin: owners only).
    await dev.browser.get('/account');
    expect((await dev.browser.post('/members/require-totp', { csrf_token: dev.browser.csrf(), require_totp: 'no' })).statusCode).toBe(403);
    expect((await owner.browser.post('/members/require-totp', { csrf_token: owner.browser.csrf(), require_totp: 'yes' })).headers.location).toBe('/account?done=require-totp-on');

    // The developer, without it, is sent to the account page; forms elsewhere are refused.
    expect((await dev.browser.get('/keys')).headers.location).toBe('/account?done=totp-required');
    expect((await dev.browser.get('/usage')).statusCode).toBe(303);
    const accountPage = await dev.browser.get('/account?done=totp-required');
    expect(accountPage.statusCode).toBe(200);
    expect(accountPage.body).toContain('This account requires two-step sign-in.');
    expect((await dev.browser.post('/keys', { csrf_token: dev.browser.csrf(), name: 'no', expires_at: '' })).statusCode).toBe(403);
    await dev.browser.get('/account');
    const devSecret = /<code id="totp-secret">([A-Z2-7]+)<\/code>/.exec((await dev.browser.post('/account/totp/start', { csrf_token: dev.browser.csrf() })).body)![1]!;
    await dev.browser.post('/account/totp/confirm', { csrf_token: dev.browser.csrf(), code: codes.code(devSecret, clock.ms) });
    expect((await dev.browser.get('/keys')).statusCode).toBe(200);
    expect((await owner.browser.get('/members')).body).toMatch(/Required: a member without it/);
  });
});
