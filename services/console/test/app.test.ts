import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { InjectBrowser } from './browser.ts';
import { FakeBilling, type FakeKey } from './fake-billing.ts';
import { TEST_ORIGIN as ORIGIN, openTestApp } from './support.ts';

const ADMIN_TOKEN = 'admin-token-of-at-least-thirty-two-characters';
/** The request ids of an activity page's rows, in order. */
const ids = (body: string) => [...body.matchAll(/data-request-id="([^"]+)"/g)].map((m) => m[1]);
const PASSWORD = 'a long enough passphrase';

describe('console app (inject, real Postgres, billing faked)', () => {
  let app: FastifyInstance;
  const billing = new FakeBilling();
  const accountA = randomUUID();
  const accountB = randomUUID();
  let keyA: FakeKey;
  let keyB: FakeKey;

  beforeAll(async () => {
    billing.addAccount(accountA, 'Alpha');
    billing.addAccount(accountB, 'Beta');
    keyA = billing.addKey(accountA, 'alpha-prod');
    keyB = billing.addKey(accountB, 'beta-prod');
    const opened = await openTestApp(billing, { adminToken: ADMIN_TOKEN });
    ({ app } = opened);
    return opened.close;
  });

  const admin = (body: unknown, token = ADMIN_TOKEN) =>
    app.inject({ method: 'POST', url: '/internal/members', headers: { authorization: `Bearer ${token}` }, payload: body as Record<string, unknown> });

  /** A member made by the operator, password set through the one-time link, signed in. */
  async function signedIn(accountId: string): Promise<{ browser: InjectBrowser; email: string }> {
    const email = `m-${randomUUID()}@example.com`;
    const created = await admin({ account_id: accountId, email });
    expect(created.statusCode).toBe(201);
    const link = new URL((created.json() as { set_password_url: string }).set_password_url);
    expect(link.origin).toBe(ORIGIN);
    const browser = new InjectBrowser(app, ORIGIN);
    expect((await browser.get(`${link.pathname}${link.search}`)).statusCode).toBe(200);
    const set = await browser.post('/set-password', { csrf_token: browser.csrf(), token: link.searchParams.get('token')!, password: PASSWORD, confirm: PASSWORD });
    expect(set.statusCode).toBe(303);
    await browser.get('/login');
    const login = await browser.post('/login', { csrf_token: browser.csrf(), email, password: PASSWORD });
    expect(login.statusCode).toBe(303);
    expect(login.headers.location).toBe('/keys');
    return { browser, email };
  }

  it('answers health and readiness without a session', async () => {
    expect((await app.inject('/healthz')).json()).toEqual({ status: 'ok' });
    expect((await app.inject('/readyz')).json()).toEqual({ status: 'ready' });
  });

  it('requires a session on every page and endpoint except sign-in and set-password', async () => {
    const before = billing.calls.length;
    const pages = ['/', '/keys', `/keys/${keyA.id}`, '/usage', '/usage.csv', '/activity', '/balance', '/account'];
    const seen = [];
    for (const url of pages) {
      const res = await app.inject(url);
      seen.push([url, res.statusCode, String(res.headers.location).split('?')[0]]);
    }
    expect(seen).toEqual(pages.map((url) => [url, 303, '/login']));
    const actions = ['/keys', `/keys/${keyA.id}/revoke`, `/keys/${keyA.id}/limits`, `/keys/${keyA.id}/limits/clear`, `/keys/${keyA.id}/expiry`,
      '/account/password', '/account/time-zone', '/account/logout-all', '/logout'];
    const refused = [];
    for (const url of actions) {
      const res = await app.inject({ method: 'POST', url, headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'confirm=yes' });
      refused.push([url, res.statusCode]);
    }
    expect(refused).toEqual(actions.map((url) => [url, 401]));
    expect(billing.calls.length).toBe(before);
    expect((await app.inject('/login')).statusCode).toBe(200);
    expect((await app.inject('/set-password?token=nope')).statusCode).toBe(400);
  });

  it('signs in with a secure, HTTP-only, SameSite=Lax __Host- session cookie and sends strict headers', async () => {
    const email = `c-${randomUUID()}@example.com`;
    const created = (await admin({ account_id: accountA, email })).json() as { set_password_url: string };
    const link = new URL(created.set_password_url);
    const browser = new InjectBrowser(app, ORIGIN);
    await browser.get(`${link.pathname}${link.search}`);
    await browser.post('/set-password', { csrf_token: browser.csrf(), token: link.searchParams.get('token')!, password: PASSWORD, confirm: PASSWORD });
    await browser.get('/login');
    const res = await browser.post('/login', { csrf_token: browser.csrf(), email, password: PASSWORD });
    const cookie = [res.headers['set-cookie']].flat().find((c) => String(c).startsWith('__Host-gw_session='));
    expect(cookie).toMatch(/; Path=\/; HttpOnly; Secure; SameSite=Lax$/);
    const page = await browser.get('/keys');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.body).toContain('<main id="main"');
    // Assets may be cached; nothing else, whatever its URL looks like.
    expect((await browser.get('/assets/console.css')).headers['cache-control']).not.toBe('no-store');
    expect((await browser.get('/assets/../keys')).headers['cache-control']).toBe('no-store');
    // A notice code is looked up among our own, never the object's inherited names.
    for (const done of ['__proto__', 'constructor', 'toString']) expect((await browser.get(`/keys?done=${done}`)).body).not.toContain('class="notice');
  });

  it('a set-password link works once', async () => {
    const email = `once-${randomUUID()}@example.com`;
    const link = new URL(((await admin({ account_id: accountA, email })).json() as { set_password_url: string }).set_password_url);
    const browser = new InjectBrowser(app, ORIGIN);
    await browser.get(`${link.pathname}${link.search}`);
    const token = link.searchParams.get('token')!;
    const csrf = browser.csrf();
    expect((await browser.post('/set-password', { csrf_token: csrf, token, password: PASSWORD, confirm: PASSWORD })).statusCode).toBe(303);
    expect((await browser.post('/set-password', { csrf_token: csrf, token, password: 'another long passphrase', confirm: 'another long passphrase' })).statusCode).toBe(400);
    expect((await browser.get(`${link.pathname}${link.search}`)).statusCode).toBe(400);
  });

  it('refuses weak, blank and invisible passwords on the set-password and account forms, saying what to do', async () => {
    const email = `weak-${randomUUID()}@example.com`;
    const link = new URL(((await admin({ account_id: accountA, email })).json() as { set_password_url: string }).set_password_url);
    const browser = new InjectBrowser(app, ORIGIN);
    await browser.get(`${link.pathname}${link.search}`);
    const token = link.searchParams.get('token')!;
    const answers = [];
    for (const password of ['password1234', ' '.repeat(12), '\u200B'.repeat(12)]) {
      const res = await browser.post('/set-password', { csrf_token: browser.csrf(), token, password, confirm: password });
      answers.push([res.statusCode, /too easy to guess|only spaces or invisible characters/.test(res.body)]);
    }
    expect(answers).toEqual([[400, true], [400, true], [400, true]]);
    // The link still works for an acceptable password.
    expect((await browser.post('/set-password', { csrf_token: browser.csrf(), token, password: PASSWORD, confirm: PASSWORD })).statusCode).toBe(303);
    const { browser: member } = await signedIn(accountA);
    await member.get('/account');
    const weak = await member.post('/account/password', { csrf_token: member.csrf(), current: PASSWORD, password: 'password1234', confirm: 'password1234' });
    expect(weak.statusCode).toBe(400);
    expect(weak.body).toContain('This password is too easy to guess.');
  });

  it('builds set-password links on the configured origin whatever Host the request names; a reset is shorter lived and the member is told', async () => {
    const email = `host-${randomUUID()}@example.com`;
    const forged = await app.inject({
      method: 'POST',
      url: '/internal/members',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, host: 'evil.example', 'x-forwarded-host': 'evil.example' },
      payload: { account_id: accountA, email },
    });
    const invite = forged.json() as { set_password_url: string; expires_at: string };
    expect(new URL(invite.set_password_url).origin).toBe(ORIGIN);
    const { browser, email: memberEmail } = await signedIn(accountA);
    const reset = await app.inject({
      method: 'POST',
      url: '/internal/members/reset-password',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, host: 'evil.example' },
      payload: { email: memberEmail },
    });
    const resetLink = reset.json() as { set_password_url: string; expires_at: string };
    expect(new URL(resetLink.set_password_url).origin).toBe(ORIGIN);
    expect(Date.parse(invite.expires_at) - Date.now()).toBeGreaterThan(71 * 3600_000);
    expect(Date.parse(resetLink.expires_at) - Date.now()).toBeLessThanOrEqual(3600_000);
    // The member sees a banner on every page and the notice on the account page, once.
    const keys = await browser.get('/keys');
    expect(keys.body).toContain('new security notice');
    const account = await browser.get('/account');
    expect(account.body).toContain('A password reset link was issued for your sign-in.');
    expect((await browser.get('/keys')).body).not.toContain('new security notice');
  });

  it('framework errors (a malformed URL, an over-long id) answer a page with every security header; HSTS and Permissions-Policy everywhere', async () => {
    for (const url of ['/%ff', '/keys/%ff', `/keys/${'a'.repeat(5000)}`, '/login']) {
      const res = await app.inject(url);
      expect([url.slice(0, 12), res.statusCode < 500, res.headers['content-type']]).toEqual([url.slice(0, 12), true, 'text/html; charset=utf-8']);
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['strict-transport-security']).toBe('max-age=31536000'); // the public URL is https
      expect(res.headers['permissions-policy']).toContain('camera=()');
      expect(res.body).not.toContain('FST_ERR');
    }
    expect((await app.inject('/%ff')).statusCode).toBe(400);
    expect((await app.inject(`/keys/${'a'.repeat(5000)}`)).statusCode).toBe(414);
  });

  it('a member sees their active sessions and ends one; never another member\'s', async () => {
    const { browser, email } = await signedIn(accountA);
    const laptop = new InjectBrowser(app, ORIGIN);
    await laptop.get('/login');
    await laptop.post('/login', { csrf_token: laptop.csrf(), email, password: PASSWORD });
    expect((await laptop.get('/keys')).statusCode).toBe(200);
    const page = await browser.get('/account');
    const handles = [...page.body.matchAll(/data-session="([^"]+)"/g)].map((m) => m[1]!);
    expect(handles).toHaveLength(2);
    expect(page.body).toContain('(this session)');
    const own = /<tr data-session="([^"]+)">\s*<td>[^<]*<strong>\(this session\)/.exec(page.body)?.[1];
    const otherHandle = handles.find((h) => h !== own)!;
    // Another member cannot end it (their list has no such session).
    const stranger = (await signedIn(accountA)).browser;
    await stranger.get('/account');
    expect((await stranger.post('/account/sessions/end', { csrf_token: stranger.csrf(), session: otherHandle })).statusCode).toBe(400);
    expect((await laptop.get('/keys')).statusCode).toBe(200);
    expect((await browser.post('/account/sessions/end', { csrf_token: browser.csrf(), session: own! })).statusCode).toBe(400);
    const ended = await browser.post('/account/sessions/end', { csrf_token: browser.csrf(), session: otherHandle });
    expect(ended.headers.location).toBe('/account?done=session-ended');
    expect((await laptop.get('/keys')).statusCode).toBe(303);
    expect((await browser.get('/keys')).statusCode).toBe(200);
  });

  it('refuses state-changing requests without the session CSRF token or from another origin', async () => {
    const { browser } = await signedIn(accountA);
    await browser.get(`/keys/${keyA.id}`);
    const token = browser.csrf();
    const before = billing.calls.filter((c) => c.method === 'revokeAccountKey').length;
    expect((await browser.post(`/keys/${keyA.id}/revoke`, { confirm: 'yes' })).statusCode).toBe(403);
    expect((await browser.post(`/keys/${keyA.id}/revoke`, { confirm: 'yes', csrf_token: 'forged' })).statusCode).toBe(403);
    expect((await browser.post(`/keys/${keyA.id}/revoke`, { confirm: 'yes', csrf_token: token }, { origin: 'https://evil.example' })).statusCode).toBe(403);
    expect((await browser.post(`/keys/${keyA.id}/revoke`, { confirm: 'yes', csrf_token: token }, {})).statusCode).toBe(403); // neither Origin nor Referer
    // Another member's token does not pass for this session.
    const other = await signedIn(accountA);
    await other.browser.get('/keys');
    expect((await browser.post(`/keys/${keyA.id}/revoke`, { confirm: 'yes', csrf_token: other.browser.csrf() })).statusCode).toBe(403);
    expect(billing.calls.filter((c) => c.method === 'revokeAccountKey').length).toBe(before);
    expect(keyA.revokedAt).toBe(0n);
  });

  it('a member never sees or acts on another account\'s keys, whatever the request says', async () => {
    const { browser } = await signedIn(accountA);
    const list = await browser.get('/keys');
    expect(list.body).toContain('alpha-prod');
    expect(list.body).not.toContain('beta-prod');
    expect(list.body).not.toContain(keyB.id);
    expect((await browser.get(`/keys/${keyB.id}`)).statusCode).toBe(404);
    await browser.get('/keys');
    const csrf = browser.csrf();
    for (const [url, form] of [
      [`/keys/${keyB.id}/revoke`, { confirm: 'yes' }],
      [`/keys/${keyB.id}/limits`, { limit_type: 'spending', period: 'daily', value: '1' }],
      [`/keys/${keyB.id}/limits/clear`, { limit_type: 'spending', period: 'daily' }],
      [`/keys/${keyB.id}/expiry`, { expires_at: '2099-01-01T00:00' }],
    ] as const) {
      // An account id smuggled into the form changes nothing: routes use the session's account.
      const res = await browser.post(url, { ...form, csrf_token: csrf, account_id: accountB });
      expect([url, res.statusCode]).toEqual([url, 404]);
    }
    expect(keyB).toMatchObject({ revokedAt: 0n, expiresAt: 0n, limits: [] });
    expect((await browser.get(`/usage?key=${keyB.id}`)).statusCode).toBe(404);
    // Every billing call made for this member named account A.
    const forB = billing.calls.filter((c) => c.accountId === accountB);
    expect(forB).toEqual([]);
  });

  it('creates a key showing the plaintext once, then manages limits, expiry and revocation', async () => {
    const { browser } = await signedIn(accountA);
    await browser.get('/keys');
    const keysBefore = billing.keys.size;
    const posted = await browser.post('/keys', { csrf_token: browser.csrf(), name: 'ci <b>bot</b>\u202Egnp.exe', expires_at: '' });
    // Post, redirect, get: the POST answers 303 to the list, never a page a refresh would post again.
    expect([posted.statusCode, posted.headers.location]).toEqual([303, '/keys']);
    expect(posted.body).not.toContain('gwk_');
    const flashCookie = [...browser.cookies].find(([name]) => name.includes('gw_flash'));
    expect(flashCookie).toBeDefined();
    expect(flashCookie![1]).not.toContain('gwk_'); // sealed, not the plaintext
    const created = await browser.get('/keys');
    expect(created.statusCode).toBe(200);
    expect(created.body).toContain('It will not be shown again');
    // Names are escaped, and lose format characters (a bidi override would show "exe.png").
    expect(created.body).toContain('ci &lt;b&gt;bot&lt;/b&gt;gnp.exe');
    const plaintext = /value="(gwk_plaintext_[^"]+)"/.exec(created.body)?.[1];
    expect(plaintext).toBeDefined();
    const keyId = plaintext!.slice('gwk_plaintext_'.length);
    // Shown once: a refresh shows the list without it and creates nothing.
    expect((await browser.get('/keys')).body).not.toContain(plaintext!);
    expect(billing.keys.size).toBe(keysBefore + 1);
    // The flash cookie replayed in another member's session shows nothing.
    const other = (await signedIn(accountA)).browser;
    other.cookies.set(flashCookie![0], flashCookie![1]);
    const replayed = await other.get('/keys');
    expect(replayed.statusCode).toBe(200);
    expect(replayed.body).not.toContain('It will not be shown again');

    await browser.get(`/keys/${keyId}`);
    let res = await browser.post(`/keys/${keyId}/limits`, { csrf_token: browser.csrf(), limit_type: 'spending', period: 'daily', value: '50000' });
    expect(res.headers.location).toBe(`/keys/${keyId}?done=limit-saved`);
    expect((await browser.get(`/keys/${keyId}`)).body).toContain('50,000');
    res = await browser.post(`/keys/${keyId}/limits`, { csrf_token: browser.csrf(), limit_type: 'spending', period: 'daily', value: '-1' });
    expect(res.statusCode).toBe(400);
    res = await browser.post(`/keys/${keyId}/expiry`, { csrf_token: browser.csrf(), expires_at: '2000-01-01T00:00' });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('The expiry must be in the future.');
    res = await browser.post(`/keys/${keyId}/expiry`, { csrf_token: browser.csrf(), expires_at: '2099-06-01T08:30' });
    expect(res.statusCode).toBe(303);
    // 08:30 in Asia/Ho_Chi_Minh (UTC+7) is 01:30 UTC.
    expect(billing.keys.get(keyId)?.expiresAt).toBe(BigInt(Date.UTC(2099, 5, 1, 1, 30)));
    res = await browser.post(`/keys/${keyId}/revoke`, { csrf_token: browser.csrf() });
    expect(res.statusCode).toBe(400); // the confirmation box
    res = await browser.post(`/keys/${keyId}/revoke`, { csrf_token: browser.csrf(), confirm: 'yes' });
    expect(res.headers.location).toBe(`/keys/${keyId}?done=key-revoked`);
    expect((await browser.get(`/keys/${keyId}`)).body).toContain('Revoked');
  });

  it('shows the balance in the header of every page', async () => {
    const { browser } = await signedIn(accountA);
    for (const url of ['/keys', `/keys/${keyA.id}`, '/usage', '/activity', '/balance', '/account']) {
      const body = (await browser.get(url)).body;
      expect([url, /data-balance>.*<strong>1,000,000<\/strong> credits/.exec(body) !== null]).toEqual([url, true]);
    }
  });

  it('lists the activity log one request per row, paged, with a foreign key filter refused', async () => {
    const at = 1_740_000_000_000n;
    const row = (i: number, status: string, endpoint = 'chat/completions') => ({
      accountId: accountA, requestId: `req-${i}`, clientRequestId: i === 1 ? 'my-trace-1' : '', keyId: keyA.id, endpoint, model: 'gpt-sim-mini',
      inputTokens: 12n, outputTokens: 34n, units: endpoint.startsWith('images/') ? 2n : 46n, credits: 7n, status, latencyMs: 1234n, createdAtUnixMs: at - BigInt(i) * 1000n,
    });
    billing.activity.push(row(1, 'succeeded'), row(2, 'failed'), row(3, 'succeeded', 'images/generations'));
    billing.activity.push({ ...row(4, 'succeeded'), accountId: accountB, keyId: keyB.id, requestId: 'req-of-b' });
    const { browser } = await signedIn(accountA);
    const first = await browser.get('/activity');
    expect(first.statusCode).toBe(200);
    expect(ids(first.body)).toEqual(['req-1', 'req-2']);
    expect(first.body).toContain('12 in · 34 out');
    expect(first.body).toContain('1.2 s');
    expect(first.body).toContain('yours: <code>my-trace-1</code>');
    expect(first.body).toContain('Failed (not charged)');
    const older = /href="\/activity\?([^"]*cursor=[^"]+)"/.exec(first.body)?.[1]?.replace(/&amp;/g, '&');
    expect(older).toBe('cursor=req-2');
    const second = await browser.get(`/activity?${older}`);
    expect(ids(second.body)).toEqual(['req-3']);
    expect(second.body).toContain('2 images');
    // Another account's key: billing says not_found; the page shows every key of this account instead.
    const foreign = await browser.get(`/activity?key=${keyB.id}`);
    expect(foreign.statusCode).toBe(400);
    expect(foreign.body).toContain('That key is not one of this account');
    expect(ids(foreign.body)).not.toContain('req-of-b');
    // The CSV has every page of the log, one request per line, with both ids.
    const csv = await browser.get('/activity.csv');
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    const csvLines = csv.body.trim().split('\r\n');
    expect(csvLines[0]).toBe('time,request_id,client_request_id,key_id,key_name,endpoint,model,input_tokens,output_tokens,units,credits,latency_ms,status');
    expect(csvLines.slice(1).map((l) => l.split(',').slice(1, 3))).toEqual([['req-1', 'my-trace-1'], ['req-2', ''], ['req-3', '']]);
    expect(csvLines[1]).toBe(`2025-02-19T21:19:59.000Z,req-1,my-trace-1,${keyA.id},alpha-prod,chat/completions,gpt-sim-mini,12,34,46,7,1234,succeeded`);
    expect(billing.calls.filter((c) => c.method === 'listActivity').every((c) => c.accountId === accountA)).toBe(true);
  });

  it("an attacker's failed sign-ins hold back the attacker, never the owner's right password", async () => {
    const { email } = await signedIn(accountA);
    const attacker = new InjectBrowser(app, ORIGIN);
    await attacker.get('/login');
    const statuses = [];
    for (let i = 0; i < 6; i++) {
      const res = await attacker.post('/login', { csrf_token: attacker.csrf(), email, password: 'wrong password here' });
      statuses.push([res.statusCode, res.body.includes('The e-mail or password is not correct.')]);
    }
    // Three free failures, a fourth check, then the attacker waits (growing delays, not a lock).
    expect(statuses).toEqual([[401, true], [401, true], [401, true], [401, true], [429, false], [429, false]]);
    const held = await attacker.post('/login', { csrf_token: attacker.csrf(), email, password: PASSWORD });
    expect(held.statusCode).toBe(429);
    expect(Number(held.headers['retry-after'])).toBeGreaterThan(50);
    expect(held.body).toMatch(/Try again in \d+ seconds\./);
    // The owner, from another network, signs in at once with the right password.
    const owner = new InjectBrowser(app, ORIGIN);
    await owner.get('/login');
    const res = await app.inject({
      method: 'POST',
      url: '/login',
      remoteAddress: '192.0.2.44',
      headers: { cookie: [...owner.cookies].map(([k, v]) => `${k}=${v}`).join('; '), origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ csrf_token: owner.csrf(), email, password: PASSWORD }).toString(),
    });
    expect([res.statusCode, res.headers.location]).toEqual([303, '/keys']);
    // A browser that signed in before is known by its device cookie: from the attacker's own
    // network too, its right password passes.
    const device = [res.headers['set-cookie']].flat().find((c) => String(c).startsWith('__Host-gw_device='));
    expect(device).toMatch(/; Max-Age=15552000; Path=\/; HttpOnly; Secure; SameSite=Lax$/);
    const known = new InjectBrowser(app, ORIGIN);
    known.cookies.set('__Host-gw_device', String(device).split(';')[0]!.split('=')[1]!);
    await known.get('/login');
    const again = await known.post('/login', { csrf_token: known.csrf(), email, password: PASSWORD });
    expect([again.statusCode, again.headers.location]).toEqual([303, '/keys']);
    // An unknown address reads exactly like a wrong password.
    const stranger = new InjectBrowser(app, ORIGIN);
    await stranger.get('/login');
    const unknown = await app.inject({
      method: 'POST',
      url: '/login',
      remoteAddress: '192.0.2.45',
      headers: { cookie: [...stranger.cookies].map(([k, v]) => `${k}=${v}`).join('; '), origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ csrf_token: stranger.csrf(), email: 'nobody@example.com', password: PASSWORD }).toString(),
    });
    expect(unknown.statusCode).toBe(401);
  });

  it('checks no more passwords than the free failures when wrong ones arrive all at once', async () => {
    const { email } = await signedIn(accountA);
    const browser = new InjectBrowser(app, ORIGIN);
    await browser.get('/login');
    const csrf = browser.csrf();
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => browser.post('/login', { csrf_token: csrf, email, password: `wrong password ${i}` })));
    const statuses = answers.map((res) => res.statusCode);
    expect(statuses.filter((s) => s === 401)).toHaveLength(4);
    expect(statuses.filter((s) => s === 429)).toHaveLength(36);
  });

  it('refuses a forged sign-in (no pre-session token, or another origin)', async () => {
    const { email } = await signedIn(accountA);
    const browser = new InjectBrowser(app, ORIGIN);
    expect((await browser.post('/login', { email, password: PASSWORD })).statusCode).toBe(403);
    await browser.get('/login');
    expect((await browser.post('/login', { csrf_token: browser.csrf(), email, password: PASSWORD }, { origin: 'https://evil.example' })).statusCode).toBe(403);
    expect(browser.cookies.has('__Host-gw_session')).toBe(false);
  });

  it('logout ends the session; a password change ends the others; "log out everywhere" ends all', async () => {
    const { browser, email } = await signedIn(accountA);
    const second = new InjectBrowser(app, ORIGIN);
    await second.get('/login');
    await second.post('/login', { csrf_token: second.csrf(), email, password: PASSWORD });
    expect((await second.get('/keys')).statusCode).toBe(200);

    await browser.get('/account');
    const changed = await browser.post('/account/password', { csrf_token: browser.csrf(), current: PASSWORD, password: 'a brand new passphrase', confirm: 'a brand new passphrase' });
    expect(changed.headers.location).toBe('/account?done=password-changed');
    expect((await browser.get('/keys')).statusCode).toBe(200);
    expect((await second.get('/keys')).statusCode).toBe(303);

    await second.get('/login');
    await second.post('/login', { csrf_token: second.csrf(), email, password: 'a brand new passphrase' });
    await browser.get('/account');
    expect((await browser.post('/account/logout-all', { csrf_token: browser.csrf() })).headers.location).toBe('/login?done=logged-out-everywhere');
    expect((await browser.get('/keys')).statusCode).toBe(303);
    expect((await second.get('/keys')).statusCode).toBe(303);

    const third = new InjectBrowser(app, ORIGIN);
    await third.get('/login');
    await third.post('/login', { csrf_token: third.csrf(), email, password: 'a brand new passphrase' });
    await third.get('/keys');
    expect((await third.post('/logout', { csrf_token: third.csrf() })).headers.location).toBe('/login?done=logged-out');
    expect((await third.get('/keys')).statusCode).toBe(303);
  });

  it('usage: page with chart and table, CSV with formulas defused; balance with history', async () => {
    const { browser } = await signedIn(accountA);
    const page = await browser.get(`/usage?from=2025-03-01&to=2025-03-07&group=day&key=${keyA.id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<svg id="usage-chart"');
    expect(page.body).toContain('1,234');
    const csv = await browser.get(`/usage.csv?from=2025-03-01&to=2025-03-07&group=model`);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toBe('attachment; filename="usage-model-2025-03-01-to-2025-03-07.csv"');
    expect(csv.body.split('\r\n')[0]).toBe('model,requests,input_tokens,output_tokens,total_tokens,images,video_seconds,credits,time_zone');
    expect(csv.body).toContain(`"'=HYPERLINK(""x"")",2,10,20,30,0,0,1234,Asia/Ho_Chi_Minh`);
    const bad = await browser.get('/usage?from=2025-02-30&to=nope');
    expect(bad.statusCode).toBe(400);
    const balance = await browser.get('/balance');
    expect(balance.body).toContain('1,000,000');
    expect(balance.body).toContain('\u22121,234');
    expect(balance.body).toContain('998,766');
  });

  it('admin endpoint: token required, input checked, existing members refused', async () => {
    expect((await admin({ account_id: accountA, email: 'x@example.com' }, 'wrong-token')).statusCode).toBe(401);
    expect((await admin({ account_id: accountA })).statusCode).toBe(400);
    expect((await admin({ account_id: randomUUID(), email: 'y@example.com' })).json()).toMatchObject({ error: { code: 'not_found' } });
    expect((await admin({ account_id: accountA, email: 'not an address' })).statusCode).toBe(400);
    const email = `dup-${randomUUID()}@example.com`;
    expect((await admin({ account_id: accountA, email })).statusCode).toBe(201);
    // No password set yet: a fresh link for the same account; another account cannot take it.
    expect((await admin({ account_id: accountA, email: email.toUpperCase() })).statusCode).toBe(200);
    expect((await admin({ account_id: accountB, email })).json()).toMatchObject({ error: { code: 'duplicate_request' } });
  });

  it('admin endpoint: answers direct connections only, never a request that came through a proxy or ingress', async () => {
    for (const header of [{ 'x-forwarded-for': '203.0.113.7' }, { forwarded: 'for=203.0.113.7' }]) {
      const res = await app.inject({
        method: 'POST',
        url: '/internal/members',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...header },
        payload: { account_id: accountA, email: `proxied-${randomUUID()}@example.com` },
      });
      expect(res.statusCode).toBe(404);
    }
  });

  it('admin endpoint: however its path is spelled (percent-encoded), no token is 401 and a proxied request 404, nothing issued', async () => {
    const email = `spelled-${randomUUID()}@example.com`;
    for (const url of ['/%69nternal/members', '/internal/%6Dembers', '/%69nternal/members/reset-password']) {
      const payload = { account_id: accountA, email, generate_password: true };
      const bare = await app.inject({ method: 'POST', url, payload });
      expect([url, bare.statusCode, bare.json()]).toEqual([url, 401, { error: { code: 'auth_invalid', message: 'A valid admin token is required.' } }]);
      const proxied = await app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-forwarded-for': '203.0.113.7' }, payload });
      expect([url, proxied.statusCode]).toEqual([url, 404]);
    }
    // Nothing was created by those: the operator's own request creates the member now.
    expect((await admin({ account_id: accountA, email })).statusCode).toBe(201);
  });

  it('the current password on the account page is throttled like a sign-in, so a session gives no unlimited guesses', async () => {
    const { browser } = await signedIn(accountA);
    await browser.get('/account');
    const csrf = browser.csrf();
    const change = (current: string) => browser.post('/account/password', { csrf_token: csrf, current, password: 'a brand new passphrase', confirm: 'a brand new passphrase' });
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await change(`guess number ${i}`)).statusCode);
    expect(statuses).toEqual([400, 400, 400, 400, 429, 429]);
    // Held back now: even the right password is not checked until the delay is over.
    const right = await change(PASSWORD);
    expect(right.statusCode).toBe(429);
    expect(Number(right.headers['retry-after'])).toBeGreaterThan(50);
  });

  it('a new password or "log out everywhere" ends the member\'s unused set-password links', async () => {
    for (const end of ['password', 'logout-all'] as const) {
      const { browser, email } = await signedIn(accountA);
      const issue = async () => {
        const res = await app.inject({ method: 'POST', url: '/internal/members/reset-password', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { email } });
        const link = new URL((res.json() as { set_password_url: string }).set_password_url);
        return `${link.pathname}${link.search}`;
      };
      const link = await issue();
      await browser.get('/account');
      const ended =
        end === 'password'
          ? await browser.post('/account/password', { csrf_token: browser.csrf(), current: PASSWORD, password: 'the member’s own passphrase', confirm: 'the member’s own passphrase' })
          : await browser.post('/account/logout-all', { csrf_token: browser.csrf() });
      expect(ended.statusCode).toBe(303);
      expect([end, (await new InjectBrowser(app, ORIGIN).get(link)).statusCode]).toEqual([end, 400]);
      // A link issued afterwards works as before.
      expect((await new InjectBrowser(app, ORIGIN).get(await issue())).statusCode).toBe(200);
    }
  });

  it('a forgotten password: the operator issues a reset link; using it sets the new password and ends every session', async () => {
    const { browser, email } = await signedIn(accountA);
    expect((await browser.get('/keys')).statusCode).toBe(200);
    const reset = (url = '/internal/members/reset-password', body: unknown = { email }) =>
      app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: body as Record<string, unknown> });
    expect((await reset(undefined, { email: `nobody-${randomUUID()}@example.com` })).statusCode).toBe(404);
    expect((await reset(undefined, {})).statusCode).toBe(400);
    const res = await reset();
    expect(res.statusCode).toBe(200);
    const link = new URL((res.json() as { set_password_url: string }).set_password_url);
    // Until the link is used, the current password and session keep working.
    expect((await browser.get('/keys')).statusCode).toBe(200);

    const other = new InjectBrowser(app, ORIGIN);
    await other.get(`${link.pathname}${link.search}`);
    const fresh = 'a brand new long passphrase';
    const set = await other.post('/set-password', { csrf_token: other.csrf(), token: link.searchParams.get('token')!, password: fresh, confirm: fresh });
    expect(set.statusCode).toBe(303);
    expect((await browser.get('/keys')).statusCode).toBe(303); // the old session ended

    const oldLogin = new InjectBrowser(app, ORIGIN);
    await oldLogin.get('/login');
    expect((await oldLogin.post('/login', { csrf_token: oldLogin.csrf(), email, password: PASSWORD })).headers.location).not.toBe('/keys');
    const newLogin = new InjectBrowser(app, ORIGIN);
    await newLogin.get('/login');
    expect((await newLogin.post('/login', { csrf_token: newLogin.csrf(), email, password: fresh })).headers.location).toBe('/keys');
  });
});

describe('console app: Fastify JSON schemas', () => {
  it('are refused at start: no route declares one, so Ajv is never loaded to compile them', async () => {
    const opened = await openTestApp(new FakeBilling());
    try {
      opened.app.post('/schema-test', { schema: { body: { type: 'object' } } }, async () => ({}));
      await expect(opened.app.ready()).rejects.toThrow(/check their input with zod/);
    } finally {
      await opened.close().catch(() => undefined);
    }
  });
});
