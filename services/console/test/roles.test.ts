import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { guardedBilling } from '../src/billing/guard.ts';
import { ForbiddenError, ROLES, type Role } from '../src/members/roles.ts';
import { InjectBrowser } from './browser.ts';
import { FakeBilling } from './fake-billing.ts';
import { TEST_ORIGIN as ORIGIN, openTestApp, testApp } from './support.ts';

const ADMIN_TOKEN = 'admin-token-of-at-least-thirty-two-characters';
const PASSWORD = 'a long enough passphrase';

/** Creates a key through the dashboard as this member; answers its id. */
async function createKey(browser: InjectBrowser, name: string): Promise<string> {
  await browser.get('/account');
  expect((await browser.post('/keys', { csrf_token: browser.csrf(), name, expires_at: '' })).statusCode).toBe(303);
  const page = await browser.get('/keys');
  return /value="gwk_plaintext_([^"]+)"/.exec(page.body)![1]!;
}

/** What a billing call came to: allowed, forbidden by the guard, or another error. */
const refused = async (p: Promise<unknown>) => p.then(() => 'allowed', (err: unknown) => (err instanceof ForbiddenError ? 'forbidden' : String(err)));

describe('roles: owner, admin, developer, viewer against every page, form and billing call', () => {
  let orm: MikroORM;
  let app: FastifyInstance;
  const billing = new FakeBilling();
  const account = randomUUID();
  const other = randomUUID();

  beforeAll(async () => {
    billing.addAccount(account, 'Alpha');
    billing.addAccount(other, 'Beta');
    const opened = await openTestApp(billing, { adminToken: ADMIN_TOKEN });
    ({ orm, app } = opened);
    return opened.close;
  });

  const operator = async (path: string, body: Record<string, unknown>) => {
    const res = await app.inject({ method: 'POST', url: path, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: body });
    return { status: res.statusCode, body: res.json() as Record<string, unknown> };
  };

  /** A member of `role` made by the operator (`member add`), password set from the link, signed in. */
  async function member(role: Role, accountId = account): Promise<{ browser: InjectBrowser; memberId: string; email: string }> {
    const email = `${role}-${randomUUID()}@example.com`;
    const added = await operator('/internal/members', { account_id: accountId, email, role });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ member_id: expect.any(String), role, set_password_url: expect.stringMatching(/^https:\/\/console\.test\/set-password\?token=/) });
    const link = new URL(added.body.set_password_url as string);
    const browser = new InjectBrowser(app, ORIGIN);
    await browser.get(`${link.pathname}${link.search}`);
    expect((await browser.post('/set-password', { csrf_token: browser.csrf(), token: link.searchParams.get('token')!, password: PASSWORD, confirm: PASSWORD })).statusCode).toBe(303);
    await browser.get('/login');
    const login = await browser.post('/login', { csrf_token: browser.csrf(), email, password: PASSWORD });
    expect(login.headers.location).toBe(role === 'viewer' ? '/usage' : '/keys');
    return { browser, memberId: added.body.member_id as string, email };
  }

  const ALLOWED: Record<Role, Set<string>> = {
    owner: new Set(['/keys', '/key', '/usage', '/usage.csv', '/activity', '/activity.csv', '/balance', '/account', '/members', '/alerts', '/audit']),
    admin: new Set(['/keys', '/key', '/usage', '/usage.csv', '/activity', '/activity.csv', '/balance', '/account', '/members', '/audit']),
    developer: new Set(['/keys', '/key', '/usage', '/usage.csv', '/activity', '/activity.csv', '/balance', '/account']),
    viewer: new Set(['/usage', '/usage.csv', '/activity', '/activity.csv', '/balance', '/account']),
  };

  it('each role against each page: allowed pages answer 200, others 403; the navigation shows only what the role may open', async () => {
    const owner = await member('owner');
    const ownerKey = await createKey(owner.browser, 'owner key');
    for (const role of ROLES) {
      const { browser } = await member(role);
      const seen: Array<[string, number]> = [];
      for (const page of ['/keys', '/key', '/usage', '/usage.csv', '/activity', '/activity.csv', '/balance', '/account', '/members', '/alerts', '/audit']) {
        const res = await browser.get(page === '/key' ? `/keys/${ownerKey}` : page);
        seen.push([page, res.statusCode]);
      }
      expect([role, seen]).toEqual([role, [...seen].map(([page]) => [page, ALLOWED[role].has(page) ? 200 : 403])]);
      const nav = (await browser.get('/account')).body;
      expect([role, nav.includes('href="/keys"'), nav.includes('href="/members"'), nav.includes('href="/usage"'), nav.includes('href="/alerts"'), nav.includes('href="/audit"')]).toEqual([
        role,
        ALLOWED[role].has('/keys'),
        ALLOWED[role].has('/members'),
        true,
        ALLOWED[role].has('/alerts'),
        ALLOWED[role].has('/audit'),
      ]);
    }
  });

  it('each role against each form: keys (all, or only their own for developers), members, own settings', async () => {
    const owner = await member('owner');
    const ownerKey = await createKey(owner.browser, 'owner key');
    const results: Record<string, Record<string, number>> = {};
    for (const role of ROLES) {
      const { browser } = await member(role);
      const victim = await member('viewer');
      await browser.get('/account');
      const csrf = browser.csrf();
      const r: Record<string, number> = {};
      r.createKey = (await browser.post('/keys', { csrf_token: csrf, name: `${role} key`, expires_at: '' })).statusCode;
      const ownKey = r.createKey === 303 ? /value="gwk_plaintext_([^"]+)"/.exec((await browser.get('/keys')).body)![1]! : ownerKey;
      r.limitOwnersKey = (await browser.post(`/keys/${ownerKey}/limits`, { csrf_token: csrf, limit_type: 'requests', period: 'daily', value: '10' })).statusCode;
      r.clearOwnersKey = (await browser.post(`/keys/${ownerKey}/limits/clear`, { csrf_token: csrf, limit_type: 'requests', period: 'daily' })).statusCode;
      r.expiryOwnersKey = (await browser.post(`/keys/${ownerKey}/expiry`, { csrf_token: csrf, expires_at: '' })).statusCode;
      r.limitOwnKey = (await browser.post(`/keys/${ownKey}/limits`, { csrf_token: csrf, limit_type: 'requests', period: 'daily', value: '10' })).statusCode;
      r.revokeOwnKey = (await browser.post(`/keys/${ownKey}/revoke`, { csrf_token: csrf, confirm: 'yes' })).statusCode;
      r.invite = (await browser.post('/members', { csrf_token: csrf, email: `inv-${randomUUID()}@example.com`, role: 'developer' })).statusCode;
      r.inviteOwner = (await browser.post('/members', { csrf_token: csrf, email: `own-${randomUUID()}@example.com`, role: 'owner' })).statusCode;
      r.changeRole = (await browser.post(`/members/${victim.memberId}/role`, { csrf_token: csrf, role: 'developer' })).statusCode;
      r.remove = (await browser.post(`/members/${victim.memberId}/remove`, { csrf_token: csrf })).statusCode;
      r.timeZone = (await browser.post('/account/time-zone', { csrf_token: csrf, time_zone: 'UTC' })).statusCode;
      results[role] = r;
    }
    const manager = { createKey: 303, limitOwnersKey: 303, clearOwnersKey: 303, expiryOwnersKey: 303, limitOwnKey: 303, revokeOwnKey: 303, invite: 303, changeRole: 303, remove: 303, timeZone: 303 };
    expect(results).toEqual({
      owner: { ...manager, inviteOwner: 303 },
      admin: { ...manager, inviteOwner: 403 },
      developer: { createKey: 303, limitOwnersKey: 403, clearOwnersKey: 403, expiryOwnersKey: 403, limitOwnKey: 303, revokeOwnKey: 303, invite: 403, inviteOwner: 403, changeRole: 403, remove: 403, timeZone: 303 },
      viewer: { createKey: 403, limitOwnersKey: 403, clearOwnersKey: 403, expiryOwnersKey: 403, limitOwnKey: 403, revokeOwnKey: 403, invite: 403, inviteOwner: 403, changeRole: 403, remove: 403, timeZone: 303 },
    });
    // The key pages show a developer forms for their own key only.
    const dev = await member('developer');
    const devKey = await createKey(dev.browser, 'mine');
    expect((await dev.browser.get(`/keys/${devKey}`)).body).toContain('Revoke key');
    expect((await dev.browser.get(`/keys/${ownerKey}`)).body).not.toContain('Revoke key');
    expect((await dev.browser.get('/keys')).body).toMatch(/View<span class="visually-hidden"> key owner key/);
  });

  it('invites from the dashboard with a one-time link, changes roles, removes; admins never touch owners; a role change applies at once', async () => {
    const owner = await member('owner');
    await owner.browser.get('/members');
    const invited = await owner.browser.post('/members', { csrf_token: owner.browser.csrf(), email: `new-${randomUUID()}@example.com`, role: 'admin' });
    expect(invited.statusCode).toBe(303);
    const page = await owner.browser.get('/members');
    const url = /id="invite-link" type="text" readonly value="([^"]+)"/.exec(page.body)?.[1]?.replaceAll('&amp;', '&');
    expect(url).toMatch(/^https:\/\/console\.test\/set-password\?token=/);
    expect((await owner.browser.get('/members')).body).not.toContain('id="invite-link"'); // shown once
    const link = new URL(url!);
    const person = new InjectBrowser(app, ORIGIN);
    expect((await person.get(`${link.pathname}${link.search}`)).statusCode).toBe(200);

    const admin = await member('admin');
    const dev = await member('developer');
    await admin.browser.get('/members');
    const adminCsrf = admin.browser.csrf();
    expect((await admin.browser.post(`/members/${owner.memberId}/role`, { csrf_token: adminCsrf, role: 'viewer' })).statusCode).toBe(403);
    expect((await admin.browser.post(`/members/${owner.memberId}/remove`, { csrf_token: adminCsrf })).statusCode).toBe(403);
    expect((await admin.browser.post(`/members/${dev.memberId}/role`, { csrf_token: adminCsrf, role: 'owner' })).statusCode).toBe(403);
    expect((await admin.browser.post(`/members/${admin.memberId}/role`, { csrf_token: adminCsrf, role: 'viewer' })).statusCode).toBe(400);
    // A member of another account is not found.
    const stranger = await member('viewer', other);
    expect((await admin.browser.post(`/members/${stranger.memberId}/role`, { csrf_token: adminCsrf, role: 'developer' })).statusCode).toBe(404);

    expect((await dev.browser.get('/keys')).statusCode).toBe(200);
    expect((await admin.browser.post(`/members/${dev.memberId}/role`, { csrf_token: adminCsrf, role: 'viewer' })).statusCode).toBe(303);
    expect((await dev.browser.get('/keys')).statusCode).toBe(403); // the next request already has the new role
    expect((await admin.browser.post(`/members/${dev.memberId}/remove`, { csrf_token: adminCsrf })).statusCode).toBe(303);
    expect((await dev.browser.get('/usage')).statusCode).toBe(303); // signed out: the member is gone
  });

  it('operator CLI endpoints: add with a role, list, change a role, remove; an account always keeps one owner', async () => {
    const acct = randomUUID();
    billing.addAccount(acct, 'Gamma');
    const firstEmail = `first-${randomUUID()}@example.com`;
    const first = await operator('/internal/members', { account_id: acct, email: firstEmail, role: 'owner' });
    const firstId = first.body.member_id as string;
    const dev = await operator('/internal/members', { account_id: acct, email: `dev-${randomUUID()}@example.com`, role: 'developer' });
    expect((await operator('/internal/members', { account_id: acct, email: `x-${randomUUID()}@example.com`, role: 'emperor' })).status).toBe(400);
    // Re-adding the only owner (no password yet) with another role would leave no owner: refused.
    expect(await operator('/internal/members', { account_id: acct, email: firstEmail, role: 'viewer' })).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_request', message: 'An account always keeps one owner: make another member owner first.' } },
    });
    const list = await operator('/internal/members/list', { account_id: acct });
    expect((list.body.members as Array<{ member_id: string; role: string; status: string }>).map((m) => [m.member_id, m.role, m.status])).toEqual([
      [firstId, 'owner', 'invited'],
      [dev.body.member_id, 'developer', 'invited'],
    ]);
    const demote = await operator('/internal/members/role', { member_id: firstId, role: 'admin' });
    expect([demote.status, demote.body]).toEqual([400, { error: { code: 'invalid_request', message: 'An account always keeps one owner: make another member owner first.' } }]);
    expect((await operator('/internal/members/remove', { member_id: firstId })).status).toBe(400);
    expect(await operator('/internal/members/role', { member_id: dev.body.member_id as string, role: 'owner' })).toMatchObject({ status: 200, body: { role: 'owner' } });
    expect((await operator('/internal/members/role', { member_id: firstId, role: 'viewer' })).status).toBe(200);
    expect(await operator('/internal/members/remove', { member_id: firstId })).toMatchObject({ status: 200, body: { removed: true } });
    expect((await operator('/internal/members/remove', { member_id: firstId })).status).toBe(404);
    expect((await operator('/internal/members/list', { account_id: acct })).body.members).toHaveLength(1);
  });

  it('the billing guard refuses, whatever page asks: a call the role lacks, another account, another member\'s key, any other method', async () => {
    const me = { memberId: randomUUID(), accountId: account, email: 'd@example.com', timeZone: null, totpMissing: false };
    const theirs = billing.addKey(account, 'theirs');
    const mine = billing.addKey(account, 'mine');
    const creators = new Map([[mine.id, me.memberId]]);
    const dev = guardedBilling(billing.client(), { ...me, role: 'developer' }, async (id) => creators.get(id) ?? null, '127.0.0.1');
    const viewer = guardedBilling(billing.client(), { ...me, role: 'viewer' }, async () => null, '127.0.0.1');
    expect(await refused(viewer.createApiKey({ accountId: account, name: 'x', expiresAtUnixMs: 0n }))).toBe('forbidden');
    expect(await refused(viewer.usageReport({ accountId: account }))).toBe('allowed');
    expect(await refused(viewer.getWallet({ accountId: other }))).toBe('forbidden');
    expect(await refused(dev.revokeAccountKey({ accountId: account, keyId: theirs.id }))).toBe('forbidden');
    expect(await refused(dev.revokeAccountKey({ accountId: account, keyId: mine.id }))).toBe('allowed');
    expect(await refused((dev as unknown as Record<string, (r: unknown) => Promise<unknown>>).topUp!({ accountId: account }))).toBe('forbidden');
    expect(theirs.revokedAt).toBe(0n);
  });

  it('caps the keys an account may have (revoked ones do not count)', async () => {
    const acct = randomUUID();
    billing.addAccount(acct, 'Capped');
    const capped = await testApp(orm, billing, { adminToken: ADMIN_TOKEN, maxKeysPerAccount: 2 });
    try {
      const email = `cap-${randomUUID()}@example.com`;
      const res = await capped.app.inject({ method: 'POST', url: '/internal/members', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { account_id: acct, email, role: 'owner' } });
      const { set_password_url: url, member_id: memberId } = res.json() as { set_password_url: string; member_id: string };
      const link = new URL(url);
      const b = new InjectBrowser(capped.app, ORIGIN);
      await b.get(`${link.pathname}${link.search}`);
      await b.post('/set-password', { csrf_token: b.csrf(), token: link.searchParams.get('token')!, password: PASSWORD, confirm: PASSWORD });
      await b.get('/login');
      await b.post('/login', { csrf_token: b.csrf(), email, password: PASSWORD });
      await b.get('/keys');
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await b.post('/keys', { csrf_token: b.csrf(), name: `k${i}`, expires_at: '' })).statusCode);
      expect(statuses).toEqual([303, 303, 400]);
      expect(b.lastHtml).toContain('the most it may have');
      const first = [...billing.keys.values()].find((k) => k.accountId === acct)!;
      await b.post(`/keys/${first.id}/revoke`, { csrf_token: b.csrf(), confirm: 'yes' });
      await b.get('/keys');
      expect((await b.post('/keys', { csrf_token: b.csrf(), name: 'after revoke', expires_at: '' })).statusCode).toBe(303);
      // Every change the console made names the member and where they acted from, for billing's audit trail.
      const changes = billing.calls.filter((c) => c.accountId === acct && ['createApiKey', 'revokeAccountKey'].includes(c.method));
      expect(changes.map((c) => c.method)).toEqual(['createApiKey', 'createApiKey', 'revokeAccountKey', 'createApiKey']);
      for (const c of changes) expect(c).toMatchObject({ actor: `member:${memberId}`, origin: '127.0.0.1' });
    } finally {
      await capped.app.close();
    }
  });
});
