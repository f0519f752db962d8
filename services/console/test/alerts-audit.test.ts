import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../src/members/roles.ts';
import { InjectBrowser } from './browser.ts';
import { FakeBilling } from './fake-billing.ts';
import { FakeClock, TEST_ORIGIN as ORIGIN, openTestApp } from './support.ts';

const ADMIN_TOKEN = 'admin-token-of-at-least-thirty-two-characters';
const PASSWORD = 'a long enough passphrase';

describe('alerts page, the crossed-alert banner, the audit page and the console audit trail', () => {
  let orm: MikroORM;
  let app: FastifyInstance;
  const billing = new FakeBilling();
  const clock = new FakeClock(Date.now());
  const account = randomUUID();
  const other = randomUUID();

  beforeAll(async () => {
    billing.addAccount(account, 'Alpha');
    billing.addAccount(other, 'Beta');
    billing.nowMs = () => clock.ms;
    const opened = await openTestApp(billing, { adminToken: ADMIN_TOKEN, now: clock.now });
    ({ orm, app } = opened);
    return opened.close;
  });

  const operator = async (path: string, body: Record<string, unknown>, headers: Record<string, string> = {}) => {
    const res = await app.inject({ method: 'POST', url: path, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...headers }, payload: body });
    return { status: res.statusCode, body: res.json() as Record<string, unknown> };
  };

  async function member(role: Role, accountId = account): Promise<{ browser: InjectBrowser; memberId: string; email: string }> {
    const email = `${role}-${randomUUID()}@example.com`;
    const added = await operator('/internal/members', { account_id: accountId, email, role }, { 'gw-actor': 'operator:alice' });
    expect(added.status).toBe(201);
    const link = new URL(added.body.set_password_url as string);
    const browser = new InjectBrowser(app, ORIGIN);
    await browser.get(`${link.pathname}${link.search}`);
    await browser.post('/set-password', { csrf_token: browser.csrf(), token: link.searchParams.get('token')!, password: PASSWORD, confirm: PASSWORD });
    await browser.get('/login');
    expect((await browser.post('/login', { csrf_token: browser.csrf(), email, password: PASSWORD })).statusCode).toBe(303);
    return { browser, memberId: added.body.member_id as string, email };
  }

  it('an owner creates an alert (the secret shown once), sends a test, sees the log, clears it; each change names the member', async () => {
    const { browser: owner, memberId } = await member('owner');
    await owner.get('/alerts');
    expect(owner.lastHtml).toContain('No alerts yet.');
    const bad = await owner.post('/alerts', { csrf_token: owner.csrf(), low_balance: '12x', monthly_budget: '', budget_thresholds: '', webhook_url: 'https://hooks.example.com/a' });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('whole number of credits');
    const refusedByBilling = await owner.post('/alerts', { csrf_token: owner.csrf(), low_balance: '5000', monthly_budget: '', budget_thresholds: '', webhook_url: 'http://10.0.0.1/x' });
    expect(refusedByBilling.statusCode).toBe(400);
    expect(refusedByBilling.body).toContain('must be https on a public address');
    expect(refusedByBilling.body).toContain('value="http://10.0.0.1/x"');

    const created = await owner.post('/alerts', { csrf_token: owner.csrf(), low_balance: '5000', monthly_budget: '100000', budget_thresholds: '50, 90', webhook_url: 'https://hooks.example.com/a' });
    expect(created.statusCode).toBe(303);
    const alert = [...billing.alerts.values()].find((a) => a.accountId === account)!;
    expect(alert).toMatchObject({ lowBalance: 5000n, monthlyBudget: 100000n, budgetThresholds: [50, 90], webhookUrl: 'https://hooks.example.com/a' });
    const shown = await owner.get('/alerts');
    expect(shown.body).toContain(`whsec_${Buffer.from(alert.alertId).toString('base64')}`);
    expect(shown.body).toContain('https://hooks.example.com/a');
    expect(shown.body).toContain('50, 90 %');
    // Shown once: the page again has no secret.
    expect((await owner.get('/alerts')).body).not.toContain('whsec_');

    expect((await owner.post(`/alerts/${alert.alertId}/test`, { csrf_token: owner.csrf() })).headers.location).toBe('/alerts?done=alert-tested');
    const log = await owner.get('/alerts?done=alert-tested');
    expect(log.body).toContain('A test delivery is on its way');
    expect(log.body).toMatch(/data-status="pending"[\s\S]*alert\.test/);

    // Not confirmed: nothing cleared.
    expect((await owner.post(`/alerts/${alert.alertId}/clear`, { csrf_token: owner.csrf() })).statusCode).toBe(400);
    expect(billing.alerts.has(alert.alertId)).toBe(true);
    expect((await owner.post(`/alerts/${alert.alertId}/clear`, { csrf_token: owner.csrf(), confirm: 'yes' })).headers.location).toBe('/alerts?done=alert-cleared');
    expect(billing.alerts.has(alert.alertId)).toBe(false);

    const changes = billing.calls.filter((c) => c.accountId === account && ['setAlert', 'testAlert', 'clearAlert'].includes(c.method));
    expect(changes.map((c) => c.method)).toEqual(['setAlert', 'testAlert', 'clearAlert']);
    for (const c of changes) expect(c).toMatchObject({ actor: `member:${memberId}`, origin: '127.0.0.1' });
  });

  it('another account\'s alert cannot be tested or cleared; admins, developers and viewers get 403 on the alerts page and forms', async () => {
    const { browser: stranger } = await member('owner', other);
    const { browser: owner } = await member('owner');
    await owner.get('/alerts');
    await owner.post('/alerts', { csrf_token: owner.csrf(), low_balance: '100', monthly_budget: '', budget_thresholds: '', webhook_url: 'https://hooks.example.com/b' });
    const alert = [...billing.alerts.values()].find((a) => a.accountId === account)!;
    await stranger.get('/alerts');
    const csrf = stranger.csrf();
    expect((await stranger.post(`/alerts/${alert.alertId}/clear`, { csrf_token: csrf, confirm: 'yes' })).statusCode).toBe(403);
    expect((await stranger.post(`/alerts/${alert.alertId}/test`, { csrf_token: csrf })).statusCode).toBe(403);
    expect(billing.alerts.has(alert.alertId)).toBe(true);
    for (const role of ['admin', 'developer', 'viewer'] as const) {
      const { browser } = await member(role);
      expect((await browser.get('/alerts')).statusCode).toBe(403);
      await browser.get('/account');
      const token = browser.csrf();
      expect((await browser.post('/alerts', { csrf_token: token, low_balance: '1', webhook_url: 'https://hooks.example.com/c' })).statusCode).toBe(403);
      expect((await browser.post(`/alerts/${alert.alertId}/clear`, { csrf_token: token, confirm: 'yes' })).statusCode).toBe(403);
    }
    expect(billing.alerts.has(alert.alertId)).toBe(true);
    await owner.post(`/alerts/${alert.alertId}/clear`, { csrf_token: owner.csrf(), confirm: 'yes' });
  });

  it('creating an alert from a session that signed in over 15 minutes ago asks for the password first', async () => {
    const { browser: owner } = await member('owner');
    clock.advance(16 * 60_000);
    await owner.get('/alerts');
    expect(owner.lastHtml).toContain('name="reauth_password"');
    const form = { low_balance: '700', monthly_budget: '', budget_thresholds: '', webhook_url: 'https://hooks.example.com/r' };
    const before = billing.alerts.size;
    expect((await owner.post('/alerts', { csrf_token: owner.csrf(), ...form })).statusCode).toBe(400);
    expect((await owner.post('/alerts', { csrf_token: owner.csrf(), ...form, reauth_password: 'wrong password here' })).statusCode).toBe(400);
    expect(billing.alerts.size).toBe(before);
    expect((await owner.post('/alerts', { csrf_token: owner.csrf(), ...form, reauth_password: PASSWORD })).statusCode).toBe(303);
    expect(billing.alerts.size).toBe(before + 1);
    for (const a of [...billing.alerts.values()].filter((x) => x.accountId === account)) billing.alerts.delete(a.alertId);
  });

  it('a banner on every page while an alert has crossed and not re-armed, for every role', async () => {
    const { browser: viewer } = await member('viewer');
    expect((await viewer.get('/usage')).body).not.toContain('data-alert-banner');
    const { browser: owner } = await member('owner');
    await owner.get('/alerts');
    await owner.post('/alerts', { csrf_token: owner.csrf(), low_balance: '5000', monthly_budget: '8000', budget_thresholds: '', webhook_url: 'https://hooks.example.com/d' });
    const alert = [...billing.alerts.values()].find((a) => a.accountId === account)!;
    expect((await viewer.get('/usage')).body).not.toContain('data-alert-banner');
    alert.lowBalanceArmed = false;
    alert.budgetFired = [50, 80];
    const page = (await viewer.get('/usage')).body;
    expect(page).toContain('data-alert-banner');
    expect(page).toContain('The balance fell below 5,000 credits.');
    expect(page).toContain('reached 80% of the 8,000-credit budget');
    expect(page).not.toContain('href="/alerts"');
    expect((await owner.get('/keys')).body).toMatch(/data-alert-banner[\s\S]*href="\/alerts"/);
    // A top-up re-arms it and a new month clears the percentages: no banner.
    alert.lowBalanceArmed = true;
    alert.budgetFired = [];
    expect((await viewer.get('/usage')).body).not.toContain('data-alert-banner');
    billing.alerts.delete(alert.alertId);
  });

  it('the audit page (owners, admins) lists billing\'s and the console\'s changes, newest first, with who and from where, in pages', async () => {
    const acct = randomUUID();
    billing.addAccount(acct, 'Gamma');
    const { browser: owner, memberId: ownerId, email: ownerEmail } = await member('owner', acct);
    clock.advance(1000);
    const { memberId: devId } = await member('developer', acct);
    clock.advance(1000);
    // Members and roles changed from the dashboard and by an operator.
    await owner.get('/members');
    expect((await owner.post(`/members/${devId}/role`, { csrf_token: owner.csrf(), role: 'viewer' })).statusCode).toBe(303);
    clock.advance(1000);
    await owner.get('/members');
    expect((await owner.post('/members', { csrf_token: owner.csrf(), email: `new-${randomUUID()}@example.com`, role: 'developer' })).statusCode).toBe(303);
    clock.advance(1000);
    expect((await operator('/internal/members/remove', { member_id: devId }, { 'gw-actor': 'operator:alice', 'gw-actor-origin': 'cli@ops-1' })).status).toBe(200);
    clock.advance(1000);
    await owner.get('/alerts');
    await owner.post('/alerts', { csrf_token: owner.csrf(), low_balance: '10', monthly_budget: '', budget_thresholds: '', webhook_url: 'https://hooks.example.com/e' });

    const page = await owner.get('/audit');
    expect(page.statusCode).toBe(200);
    const actions = [...page.body.matchAll(/data-action="([^"]+)"/g)].map((m) => m[1]);
    expect(actions).toEqual(['alerts.SetAlert', 'console.RemoveMember', 'console.InviteMember', 'console.SetRole', 'console.InviteMember', 'console.InviteMember']);
    expect(page.body).toContain(`${ownerEmail} (member:${ownerId})`);
    expect(page.body).toContain('operator:alice');
    expect(page.body).toContain('cli@ops-1');
    expect(page.body).toContain('127.0.0.1');
    expect(page.body).toContain('&quot;to&quot;:&quot;viewer&quot;');

    // 60 more changes: 50 a page, newest first, then the rest.
    clock.advance(1000);
    for (let i = 0; i < 60; i++) await operator('/internal/members/role', { member_id: ownerId, role: 'owner' }, { 'gw-actor': 'operator:bulk' });
    const first = await owner.get('/audit');
    expect([...first.body.matchAll(/data-action=/g)]).toHaveLength(50);
    expect(first.body).toContain('href="/audit?page=2"');
    const second = await owner.get('/audit?page=2');
    expect([...second.body.matchAll(/data-action=/g)]).toHaveLength(16);
    expect(second.body).toContain('data-action="alerts.SetAlert"');
    expect(second.body).not.toContain('page=3');

    // Admins may read it; developers and viewers may not.
    const { browser: admin } = await member('admin', acct);
    expect((await admin.get('/audit')).statusCode).toBe(200);
    const { browser: dev } = await member('developer', acct);
    expect((await dev.get('/audit')).statusCode).toBe(403);
    for (const a of [...billing.alerts.values()].filter((x) => x.accountId === acct)) billing.alerts.delete(a.alertId);
  });

  it('the console audit trail is append-only', async () => {
    const em = orm.em.fork();
    await expect(em.execute('update audit_event set actor = ?', ['x'])).rejects.toThrow(/append-only/);
    await expect(em.execute('delete from audit_event')).rejects.toThrow(/append-only/);
    await expect(em.execute('truncate audit_event')).rejects.toThrow(/append-only/);
  });
});
