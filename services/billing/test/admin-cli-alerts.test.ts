import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { MikroORM } from '@mikro-orm/postgresql';
import { ROOT, stopChild, waitForReadyFile } from '../../../scripts/system.ts';
import { billingOrm } from './support.ts';

const run = promisify(execFile);
const MAIN = join(ROOT, 'packages', 'admin-cli', 'src', 'main.ts');

// `pnpm admin alert …` and `pnpm admin audit` (the operator CLI as run) against a real billing
// process on a database of its own.

let child: ChildProcess;
let catalog: ChildProcess;
let address: string;
let catalogAddress: string;
let receiver: Server;
let hookUrl: string;
const databaseName = `gw_cli_alerts_${randomBytes(4).toString('hex')}`;
let adminUrl: URL;

/** `pnpm admin <args> --json`: its JSON answer, or its error object and exit code. */
async function admin(...args: string[]): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-admin-'));
  try {
    const { stdout } = await run(process.execPath, [MAIN, ...args, '--json'], { env: { ...process.env, GW_DATA_DIR: dir, BILLING_ADDR: address, CATALOG_ADDR: catalogAddress } });
    return JSON.parse(stdout) as Record<string, unknown>;
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { exit: e.code, ...(JSON.parse(e.stderr) as Record<string, unknown>) };
  }
}

let db: MikroORM;
const sql = (text: string) => db.em.getConnection().execute(text);

beforeAll(async () => {
  db = await billingOrm();
  adminUrl = new URL(inject('databaseUrl'));
  await sql(`create database ${databaseName}`);
  const url = new URL(adminUrl);
  url.pathname = `/${databaseName}`;
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const ready = join(mkdtempSync(join(tmpdir(), 'gw-cli-alerts-')), 'billing.ready');
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
      EVENTS_NAMESPACE: `cl${randomBytes(4).toString('hex')}`,
      ALERT_WEBHOOK_ALLOW_LOOPBACK: 'true',
      ALERT_SENDER_INTERVAL_MS: '100',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  address = await waitForReadyFile(ready, child, 'billing', 60_000);
  // The catalog on the same database; its one provider is a port nothing answers on (its syncs fail, which is recorded).
  const catalogReady = join(mkdtempSync(join(tmpdir(), 'gw-cli-catalog-')), 'catalog.ready');
  catalog = spawn(process.execPath, [join(ROOT, 'services', 'catalog', 'src', 'main.ts')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_LEVEL: 'error',
      READY_FILE: catalogReady,
      GRPC_PORT: '0',
      DATABASE_URL: url.toString(),
      NATS_URL: inject('natsUrl'),
      EVENTS_NAMESPACE: `cl${randomBytes(4).toString('hex')}`,
      PROVIDERS: JSON.stringify([{ name: 'openai', kind: 'openai', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'none' }]),
      PROVIDER_SYNC_INTERVAL_MS: '3600000',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  catalogAddress = await waitForReadyFile(catalogReady, catalog, 'catalog', 60_000);
}, 120_000);

afterAll(async () => {
  for (const c of [child, catalog]) if (c && c.exitCode === null && c.signalCode === null) await stopChild(c, 10_000);
  await new Promise((r) => receiver?.close(r));
  await sql(`drop database if exists ${databaseName} with (force)`);
  await db?.close();
}, 60_000);

describe('pnpm admin alert and audit', () => {
  it('set (secret once), list, deliveries, clear; the audit trail names the operator', async () => {
    const { account_id } = (await admin('account', 'create', '--name', 'cli-alerts')) as { account_id: string };
    await admin('wallet', 'top-up', '--account', account_id, '--credits', '1000', '--reference', `r-${account_id}`);

    const set = await admin('alert', 'set', '--account', account_id, '--low-balance', '500', '--monthly-budget', '2000', '--budget-thresholds', '50,80,100', '--webhook', hookUrl);
    expect(Object.keys(set).sort()).toEqual(['alert_id', 'secret']);
    expect(set['secret']).toMatch(/^whsec_/);

    const list = (await admin('alert', 'list', '--account', account_id)) as { alerts: Array<Record<string, unknown>> };
    expect(list.alerts).toEqual([
      expect.objectContaining({ alert_id: set['alert_id'], low_balance: 500, low_balance_armed: true, monthly_budget: 2000, budget_thresholds: [50, 80, 100], budget_spent: 0, webhook: hookUrl }),
    ]);
    expect(JSON.stringify(list)).not.toContain('whsec_');

    expect(await admin('alert', 'deliveries', '--account', account_id)).toEqual({ deliveries: [] });
    const bad = await admin('alert', 'set', '--account', account_id, '--low-balance', '5', '--webhook', 'http://10.0.0.1/hook');
    expect(bad).toMatchObject({ exit: 1, error: { code: 'invalid_request', message: expect.stringContaining('must use https') } });
    const badList = await admin('alert', 'set', '--account', account_id, '--monthly-budget', '5', '--budget-thresholds', '50;80', '--webhook', hookUrl);
    expect(badList).toMatchObject({ exit: 2 });

    expect(await admin('alert', 'clear', '--alert', String(set['alert_id']))).toEqual({ alert_id: set['alert_id'], cleared: true });
    expect(await admin('alert', 'list', '--account', account_id)).toEqual({ alerts: [] });

    const { events } = (await admin('audit', '--account', account_id)) as { events: Array<Record<string, unknown>> };
    expect(events.map((e) => e['action'])).toEqual(['alerts.ClearAlert', 'alerts.SetAlert', 'billing.TopUp', 'billing.CreateAccount']);
    for (const e of events) expect(e).toMatchObject({ actor: `operator:${userInfo().username}`, origin: expect.stringMatching(/^cli@/), account_id });
    expect(events[2]!['details']).toEqual({ credits: '1000', reference: `r-${account_id}`, applied: true, balance_after: '1000' });
  }, 60_000);

  it('audit --catalog lists the catalog\'s changes; audit needs exactly one of --account and --catalog', async () => {
    await admin('catalog', 'listing', 'hide');
    await admin('catalog', 'listing', 'show');
    const { events } = (await admin('audit', '--catalog')) as { events: Array<Record<string, unknown>> };
    expect(events.slice(0, 2)).toEqual([
      expect.objectContaining({ action: 'catalog.SetListingHidden', actor: `operator:${userInfo().username}`, details: { hidden: false } }),
      expect.objectContaining({ action: 'catalog.SetListingHidden', details: { hidden: true } }),
    ]);
    expect(await admin('audit')).toMatchObject({ exit: 2 });
    expect(await admin('audit', '--catalog', '--account', 'none')).toMatchObject({ exit: 2 });
  }, 60_000);
});
