import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromBinary } from '@bufbuild/protobuf';
import { alertsV1, billingV1, createClient, eventsV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { connectNats, createOrm, type NatsConnection, type Subscription } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ROOT, stopChild, waitForReadyFile } from '../../../scripts/system.ts';
import { billingEntities } from '../src/db/entities.ts';
import { billingMigrations } from '../src/db/migrations/index.ts';
import { billingClients } from './clients.ts';
import { billingOrm } from './support.ts';

// Alerts as billing runs them: the billing process (its ledger trigger, alert sender and outbox
// relay), called over gRPC as the operator CLI calls it, webhooks received by a real HTTP server
// and verified with the Standard Webhooks library, the crossings read from NATS.

const { IMAGE } = billingV1.BillingUnit;

interface Received {
  id: string;
  headers: IncomingHttpHeaders;
  body: string;
  answered: number;
}

let admin: MikroORM;
let database: string;
let child: ChildProcess;
let receiver: Server;
let hookUrl: string;
let nc: NatsConnection;
let sub: Subscription;
const natsEvents: Array<{ subject: string; event: eventsV1.AlertCrossed }> = [];
const received: Received[] = [];
/** The receiver answers the next N low-balance webhooks with a 500. */
let failNextLow = 0;
const ns = `al${randomBytes(4).toString('hex')}`;
const ACTOR = { 'gw-actor': 'operator:alert-test', 'gw-actor-origin': 'cli@test-host' };
let billing: ReturnType<typeof billingClients>;
let alerts: ReturnType<typeof createClient<typeof alertsV1.AlertsService.method>>;

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  admin = await billingOrm();
  database = `gw_alerts_${randomBytes(4).toString('hex')}`;
  await admin.em.getConnection().execute(`create database ${database}`);
  const url = new URL(inject('databaseUrl'));
  url.pathname = `/${database}`;

  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const fail = req.url === '/always-down' || (failNextLow > 0 && body.includes('"alert.low_balance"'));
      if (fail && req.url !== '/always-down') failNextLow--;
      const status = fail ? 500 : 204;
      received.push({ id: String(req.headers['webhook-id']), headers: req.headers, body, answered: status });
      res.writeHead(status).end(status === 500 ? 'receiver down' : undefined);
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/alerts`;

  nc = await connectNats(inject('natsUrl'), 'alerts-test');
  sub = nc.subscribe(`${ns}.billing.alert.>`);
  void (async () => {
    for await (const m of sub) natsEvents.push({ subject: m.subject, event: fromBinary(eventsV1.AlertCrossedSchema, m.data) });
  })();

  const ready = join(mkdtempSync(join(tmpdir(), 'gw-alerts-')), 'billing.ready');
  child = spawn(process.execPath, [join(ROOT, 'services', 'billing', 'src', 'main.ts')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_LEVEL: 'error',
      READY_FILE: ready,
      GRPC_PORT: '0',
      DATABASE_URL: url.toString(),
      NATS_URL: inject('natsUrl'),
      EVENTS_NAMESPACE: ns,
      ALERT_WEBHOOK_ALLOW_LOOPBACK: 'true',
      ALERT_SENDER_INTERVAL_MS: '100',
      ALERT_WEBHOOK_RETRY_DELAYS_MS: '300,300',
      ALERT_WEBHOOK_TIMEOUT_MS: '2000',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const address = await waitForReadyFile(ready, child, 'billing', 60_000);
  billing = billingClients(address, { metadata: ACTOR });
  alerts = createClient(alertsV1.AlertsService, address, { metadata: ACTOR });
}, 120_000);

afterAll(async () => {
  billing?.close();
  alerts?.close();
  if (child && child.exitCode === null && child.signalCode === null) await stopChild(child, 10_000);
  sub?.unsubscribe();
  await nc?.close();
  await new Promise((r) => receiver?.close(r));
  await admin?.em.getConnection().execute(`drop database if exists ${database} with (force)`);
  await admin?.close();
}, 60_000);

/** One image request charged `credits`: a hold of that much, settled for one image. */
async function spend(accountId: string, keyId: string, credits: bigint): Promise<void> {
  const requestId = randomUUID();
  await billing.authorize({ requestId, accountId, keyId, endpoint: 'images/generations', model: 'img', unit: IMAGE, pricePerUnit: credits, worstUnits: 1n });
  await billing.settle({ requestId, accountId, units: 1n });
}

const deliveriesOf = async (accountId: string, type: string) =>
  (await alerts.listDeliveries({ accountId })).deliveries.filter((d) => d.type === type).toReversed();
const delivered = (type: string) => received.filter((r) => r.answered === 204 && JSON.parse(r.body).type === type);

describe('alerts: low balance and monthly budget, webhooks, NATS, audit trail', () => {
  it('each crossing is delivered once, signed; a top-up re-arms; a failed delivery is retried; budget thresholds once each; all audited', async () => {
    const { accountId } = await billing.createAccount({ name: 'alerts' });
    await billing.topUp({ accountId, credits: 10_000n, reference: `seed-${accountId}` });
    const { keyId } = await billing.createApiKey({ accountId, name: 'k' });
    await billing.setKeyLimit({ keyId, limitType: 'spending', period: 'monthly', value: 1_000_000n });

    const { alertId, secret } = await alerts.setAlert({ accountId, lowBalance: 5_000n, monthlyBudget: 8_000n, budgetThresholds: [50, 80, 100], webhookUrl: hookUrl });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const wh = new Webhook(secret);

    // 3,000 spent: balance 7,000, 37.5 % of the budget: nothing.
    await spend(accountId, keyId, 3_000n);
    expect((await alerts.listDeliveries({ accountId })).deliveries).toEqual([]);

    // 3,000 more: balance 4,000 < 5,000 (low balance) and 75 % spent (the 50 % threshold).
    await spend(accountId, keyId, 3_000n);
    const low1 = await until('the first low-balance webhook', () => delivered('alert.low_balance')[0]);
    const verified = wh.verify(low1.body, low1.headers as Record<string, string>) as { type: string; data: Record<string, unknown> };
    expect(verified).toMatchObject({ type: 'alert.low_balance', data: { alert_id: alertId, account_id: accountId, balance: 4_000, threshold: 5_000 } });
    expect(low1.headers['webhook-signature']).toMatch(/^v1,/);
    // A forged body does not verify.
    expect(() => wh.verify(low1.body.replace('4000', '9000'), low1.headers as Record<string, string>)).toThrow(/signature/i);

    // A second request below the threshold: no new low-balance crossing (75 → 87.5 %: the 80 % one).
    await spend(accountId, keyId, 1_000n);
    expect(await deliveriesOf(accountId, 'alert.low_balance')).toHaveLength(1);
    expect((await alerts.listAlerts({ accountId })).alerts[0]).toMatchObject({ lowBalanceArmed: false, budgetSpent: 7_000n, budgetFired: [50, 80] });

    // A top-up that lifts the balance above the threshold re-arms it.
    await billing.topUp({ accountId, credits: 10_000n, reference: `more-${accountId}` });
    expect((await alerts.listAlerts({ accountId })).alerts[0]).toMatchObject({ lowBalanceArmed: true });

    // The receiver fails once; the new crossing (balance 13,000 → 4,000) is retried and delivered.
    await until('the earlier deliveries', async () => (await alerts.listDeliveries({ accountId })).deliveries.every((d) => d.status === 'delivered'));
    failNextLow = 1;
    await spend(accountId, keyId, 9_000n);
    const lows = await until('the second low-balance delivery', async () => {
      const d = await deliveriesOf(accountId, 'alert.low_balance');
      return d.length === 2 && d[1]!.status === 'delivered' ? d : undefined;
    });
    expect(lows[1]).toMatchObject({ attempts: 2, lastError: 'HTTP 500: receiver down' });
    const attemptsOfSecond = received.filter((r) => r.id === lows[1]!.deliveryId);
    expect(attemptsOfSecond.map((r) => r.answered)).toEqual([500, 204]);
    for (const r of attemptsOfSecond) expect(wh.verify(r.body, r.headers as Record<string, string>)).toMatchObject({ data: { balance: 4_000 } });
    expect(delivered('alert.low_balance').map((r) => r.id)).toEqual(lows.map((d) => d.deliveryId));

    // Budget: 16,000 of 8,000 this month; 50, 80 and 100 % each alerted once, in order.
    const budget = await until('three budget deliveries', async () => {
      const d = await deliveriesOf(accountId, 'alert.budget_threshold');
      return d.length === 3 && d.every((x) => x.status === 'delivered') ? d : undefined;
    });
    expect(budget.map((d) => (JSON.parse(d.payload) as { data: { percent: number } }).data.percent)).toEqual([50, 80, 100]);
    for (const r of delivered('alert.budget_threshold')) expect(() => wh.verify(r.body, r.headers as Record<string, string>)).not.toThrow();
    expect(delivered('alert.budget_threshold')).toHaveLength(3);

    // The same five crossings on NATS, with the webhooks' ids.
    const onNats = await until('five NATS events', () => {
      const mine = natsEvents.filter((e) => e.event.accountId === accountId);
      return mine.length >= 5 ? mine : undefined;
    });
    expect(onNats).toHaveLength(5);
    expect(new Set(onNats.map((e) => e.event.eventId))).toEqual(new Set([...lows, ...budget].map((d) => d.deliveryId)));
    expect(onNats.filter((e) => e.subject === `${ns}.billing.alert.low_balance`).map((e) => e.event.balance)).toEqual([4_000n, 4_000n]);
    expect(onNats.find((e) => e.event.percent === 100)?.event).toMatchObject({ kind: 'budget_threshold', threshold: 8_000n, spent: 16_000n });

    // Cleared: no more crossings.
    await alerts.clearAlert({ alertId });
    await billing.topUp({ accountId, credits: 10_000n, reference: `last-${accountId}` });
    await spend(accountId, keyId, 12_000n);
    expect((await alerts.listDeliveries({ accountId })).deliveries).toHaveLength(5);
    expect((await alerts.listAlerts({ accountId })).alerts).toEqual([]);

    // The audit trail lists every change above, who made it and from where, newest first.
    const { events } = await alerts.listAuditEvents({ accountId });
    expect(events.map((e) => e.action).toReversed()).toEqual([
      'billing.CreateAccount',
      'billing.TopUp',
      'billing.CreateApiKey',
      'billing.SetKeyLimit',
      'alerts.SetAlert',
      'billing.TopUp',
      'alerts.ClearAlert',
      'billing.TopUp',
    ]);
    for (const e of events) expect(e).toMatchObject({ accountId, actor: 'operator:alert-test', origin: 'cli@test-host' });
    const setAlertEvent = events.find((e) => e.action === 'alerts.SetAlert')!;
    expect(JSON.parse(setAlertEvent.details)).toEqual({ alert_id: alertId, low_balance: '5000', monthly_budget: '8000', budget_thresholds: [50, 80, 100], webhook_url: hookUrl });
    expect(setAlertEvent.details).not.toContain('whsec_');
    expect(JSON.parse(events.find((e) => e.action === 'billing.SetKeyLimit')!.details)).toMatchObject({ key_id: keyId, limit_type: 'spending', period: 'monthly', value: '1000000' });
    expect(events.find((e) => e.action === 'billing.CreateApiKey')!.details).not.toMatch(/sk-|api_key/);
  }, 60_000);

  it('webhook URLs: https on public addresses only; loopback over http here (allowed by the process); refusals say what to fix', async () => {
    const { accountId } = await billing.createAccount({ name: 'urls' });
    const refused = async (webhookUrl: string, extra: Partial<{ lowBalance: bigint; monthlyBudget: bigint; budgetThresholds: number[] }> = {}) => {
      const err = await alerts.setAlert({ accountId, lowBalance: 1n, webhookUrl, ...extra }).then(() => null, (e: unknown) => e);
      expect(err).toBeInstanceOf(GatewayError);
      expect((err as GatewayError).code).toBe('invalid_request');
      return (err as GatewayError).message;
    };
    expect(await refused('http://example.com/hook')).toMatch(/must use https/);
    expect(await refused('https://10.0.0.5/hook')).toMatch(/not public/);
    expect(await refused('https://169.254.169.254/latest')).toMatch(/not public/);
    expect(await refused('https://[::ffff:192.168.1.1]/x')).toMatch(/not public/);
    expect(await refused('https://user:pw@example.com/x')).toMatch(/user name or password/);
    expect(await refused('not a url')).toMatch(/absolute URL/);
    expect(await refused(hookUrl, { lowBalance: 0n })).toMatch(/needs a low-balance threshold/);
    expect(await refused(hookUrl, { monthlyBudget: 100n, budgetThresholds: [0, 50] })).toMatch(/whole percentages/);
    const err = await alerts.setAlert({ accountId: randomUUID(), lowBalance: 1n, webhookUrl: hookUrl }).then(() => null, (e: unknown) => e);
    expect((err as GatewayError).code).toBe('not_found');
    // Loopback is allowed in this process (ALERT_WEBHOOK_ALLOW_LOOPBACK=true).
    expect((await alerts.setAlert({ accountId, lowBalance: 1n, webhookUrl: hookUrl })).alertId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a test delivery reaches the endpoint signed, is logged and audited, and is not published on NATS', async () => {
    const { accountId } = await billing.createAccount({ name: 'test-send' });
    await billing.topUp({ accountId, credits: 100n, reference: `t-${accountId}` });
    const { keyId } = await billing.createApiKey({ accountId, name: 'k' });
    const { alertId, secret } = await alerts.setAlert({ accountId, lowBalance: 50n, webhookUrl: hookUrl });
    const { deliveryId } = await alerts.testAlert({ alertId });
    const got = await until('the test delivery', () => received.find((r) => r.id === deliveryId && r.answered === 204));
    expect(new Webhook(secret).verify(got.body, got.headers as Record<string, string>)).toMatchObject({ type: 'alert.test', data: { alert_id: alertId, account_id: accountId } });
    expect((await alerts.listDeliveries({ accountId })).deliveries).toEqual([expect.objectContaining({ deliveryId, type: 'alert.test', status: 'delivered', attempts: 1 })]);
    // A crossing after it reaches NATS; the test delivery, earlier, never does.
    await spend(accountId, keyId, 60n);
    await until('the crossing on NATS', () => natsEvents.find((e) => e.event.accountId === accountId));
    expect(natsEvents.filter((e) => e.event.accountId === accountId).map((e) => e.event.kind)).toEqual(['low_balance']);
    const [last] = (await alerts.listAuditEvents({ accountId })).events;
    expect(last!.action).toBe('alerts.TestAlert');
    expect(JSON.parse(last!.details)).toEqual({ alert_id: alertId, delivery_id: deliveryId });
    await expect(alerts.testAlert({ alertId: randomUUID() })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('a receiver that keeps failing: the last of its attempts (1 + the retry delays) marks the delivery failed', async () => {
    const { accountId } = await billing.createAccount({ name: 'down' });
    await billing.topUp({ accountId, credits: 100n, reference: `d-${accountId}` });
    const { keyId } = await billing.createApiKey({ accountId, name: 'k' });
    await alerts.setAlert({ accountId, lowBalance: 50n, webhookUrl: hookUrl.replace('/hooks/alerts', '/always-down') });
    await spend(accountId, keyId, 60n);
    const [failed] = await until('the delivery to fail', async () => {
      const d = await deliveriesOf(accountId, 'alert.low_balance');
      return d[0]?.status === 'failed' ? d : undefined;
    });
    // ALERT_WEBHOOK_RETRY_DELAYS_MS=300,300: three attempts.
    expect(failed).toMatchObject({ attempts: 3, lastError: 'HTTP 500: receiver down', nextAttemptAtUnixMs: 0n });
    expect(received.filter((r) => r.id === failed!.deliveryId).map((r) => r.answered)).toEqual([500, 500, 500]);
  });

  it('concurrent requests crossing at once: one low-balance crossing, each budget percentage once', async () => {
    const { accountId } = await billing.createAccount({ name: 'concurrent' });
    await billing.topUp({ accountId, credits: 10_000n, reference: `c-${accountId}` });
    const { keyId } = await billing.createApiKey({ accountId, name: 'k' });
    await alerts.setAlert({ accountId, lowBalance: 5_000n, monthlyBudget: 4_000n, budgetThresholds: [25, 50, 75, 100], webhookUrl: hookUrl });
    // 40 requests of 200 credits at once: 8,000 spent, the balance 2,000.
    await Promise.all(Array.from({ length: 40 }, () => spend(accountId, keyId, 200n)));
    expect((await billing.getWallet({ accountId })).balance).toBe(2_000n);
    const all = (await alerts.listDeliveries({ accountId })).deliveries;
    expect(all.filter((d) => d.type === 'alert.low_balance')).toHaveLength(1);
    expect(all.filter((d) => d.type === 'alert.budget_threshold').map((d) => (JSON.parse(d.payload) as { data: { percent: number } }).data.percent).sort((a, b) => a - b)).toEqual([25, 50, 75, 100]);
    expect((await alerts.listAlerts({ accountId })).alerts[0]).toMatchObject({ budgetSpent: 8_000n, lowBalanceArmed: false });
  });

  it("a call's own metadata names a dashboard member over the client's operator; switches are recorded under no account", async () => {
    const { accountId } = await billing.createAccount({ name: 'member' });
    await billing.topUp({ accountId, credits: 5n, reference: `m-${accountId}` }, { metadata: { 'gw-actor': 'member:9f1c', 'gw-actor-origin': '203.0.113.9' } });
    const { events } = await alerts.listAuditEvents({ accountId });
    expect(events.map((e) => [e.action, e.actor, e.origin])).toEqual([
      ['billing.TopUp', 'member:9f1c', '203.0.113.9'],
      ['billing.CreateAccount', 'operator:alert-test', 'cli@test-host'],
    ]);
    await billing.setSwitch({ name: 'maintenance', on: false });
    const global = await alerts.listAuditEvents({ accountId: '' });
    expect(global.events[0]).toMatchObject({ action: 'billing.SetSwitch', accountId: '', actor: 'operator:alert-test' });
    expect(JSON.parse(global.events[0]!.details)).toEqual({ name: 'maintenance', on: false });
  });

  it('the audit trail is append-only: updates, deletes and truncation are refused', async () => {
    const url = new URL(inject('databaseUrl'));
    url.pathname = `/${database}`;
    const db = await createOrm({ databaseUrl: url.toString(), schema: 'billing', entities: billingEntities, migrations: billingMigrations });
    try {
      const conn = db.em.getConnection();
      const [before] = await conn.execute<{ n: number }[]>('select count(*)::int as n from audit_event');
      expect(before!.n).toBeGreaterThan(0);
      await expect(conn.execute(`update audit_event set actor = 'someone'`)).rejects.toThrow(/append-only/);
      await expect(conn.execute('delete from audit_event')).rejects.toThrow(/append-only/);
      await expect(conn.execute('truncate audit_event')).rejects.toThrow(/append-only/);
      const [after] = await conn.execute<{ n: number }[]>('select count(*)::int as n from audit_event');
      expect(after!.n).toBe(before!.n);
    } finally {
      await db.close();
    }
  });
});
