import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { billingV1, RpcError } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { createOrm } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ROOT, stopChild, waitForReadyFile } from '../../../scripts/system.ts';
import { billingEntities } from '../src/db/entities.ts';
import { billingMigrations } from '../src/db/migrations/index.ts';
import { billingClients } from './clients.ts';
import { moneyExchange } from './money-exchange.ts';
import { billingOrm } from './support.ts';

// Billing's money invariants with billing as it runs: separate processes on one database, each with
// its own pool and batcher, called over gRPC the way gateways call it (issue: the billing engine's
// invariants under two replicas and a kill -9 in the middle of a batch).

const { IMAGE } = billingV1.BillingUnit;

interface Replica {
  child: ChildProcess;
  address: string;
  money: ReturnType<typeof moneyExchange>;
  rpc: ReturnType<typeof billingClients>;
}

let admin: MikroORM;
let databaseUrl: string;
let database: string;
let billing: MikroORM;
const started: Replica[] = [];

/** A billing process on this file's database, ready to serve. */
async function startBilling(): Promise<Replica> {
  const ready = join(mkdtempSync(join(tmpdir(), 'gw-billing-')), 'billing.ready');
  const child = spawn(process.execPath, [join(ROOT, 'services', 'billing', 'src', 'main.ts')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_LEVEL: 'error',
      READY_FILE: ready,
      GRPC_PORT: '0',
      DATABASE_URL: databaseUrl,
      NATS_URL: inject('natsUrl'),
      EVENTS_NAMESPACE: `bp${randomBytes(4).toString('hex')}`,
      RATE_LIMIT_PER_SECOND: '1000000',
      RATE_LIMIT_PER_MINUTE: '100000000',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const address = await waitForReadyFile(ready, child, 'billing', 60_000);
  const replica = { child, address, money: moneyExchange(address), rpc: billingClients(address) };
  started.push(replica);
  return replica;
}

async function kill9(replica: Replica): Promise<void> {
  const exited = new Promise((resolve) => replica.child.once('exit', resolve));
  replica.child.kill('SIGKILL');
  await exited;
  replica.money.close();
  replica.rpc.close();
}

async function fundedAccount(rpc: Replica['rpc'], credits: bigint): Promise<{ accountId: string; keyId: string }> {
  const { accountId } = await rpc.createAccount({ name: 'processes' });
  if (credits > 0n) await rpc.topUp({ accountId, credits, reference: `seed-${accountId}` });
  const { keyId } = await rpc.createApiKey({ accountId, name: 'k' });
  return { accountId, keyId };
}

const hold = (requestId: string, a: { accountId: string; keyId: string }, price: bigint) => ({
  requestId,
  accountId: a.accountId,
  keyId: a.keyId,
  endpoint: 'images/generations',
  model: 'm',
  unit: IMAGE,
  pricePerUnit: price,
  worstUnits: 1n,
});

async function expectAuditClean(rpc: Replica['rpc']): Promise<void> {
  const audit = await rpc.auditLedger({});
  expect(audit.problems).toEqual([]);
  expect(audit.accounts).toBeGreaterThan(0);
}

beforeAll(async () => {
  admin = await billingOrm();
  database = `gw_billing_${randomBytes(4).toString('hex')}`;
  await admin.em.getConnection().execute(`create database ${database}`);
  const url = new URL(inject('databaseUrl'));
  url.pathname = `/${database}`;
  databaseUrl = url.toString();
}, 60_000);

afterAll(async () => {
  for (const r of started) {
    r.money.close();
    r.rpc.close();
    if (r.child.exitCode === null && r.child.signalCode === null) await stopChild(r.child, 10_000);
  }
  await billing?.close();
  await admin?.em.getConnection().execute(`drop database if exists ${database} with (force)`);
  await admin?.close();
}, 60_000);

describe('billing processes on one database', () => {
  let a: Replica;
  let b: Replica;

  beforeAll(async () => {
    // Both migrate the fresh database at once: they take turns (advisory lock), neither fails.
    [a, b] = await Promise.all([startBilling(), startBilling()]);
    billing = await createOrm({ databaseUrl, schema: 'billing', entities: billingEntities, migrations: billingMigrations });
  }, 120_000);

  it('two replicas: 200 concurrent holds on a wallet funded for 100, alternating replicas: exactly 100 held, balance 0, audit clean', async () => {
    const account = await fundedAccount(a.rpc, 100n);
    const outcomes = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => [a, b][i % 2]!.money.authorize(hold(randomUUID(), account, 1n))));
    const held = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : []));
    expect(held).toHaveLength(100);
    for (const r of refused) expect(r).toMatchObject({ code: 'insufficient_balance' });
    expect((await b.rpc.getWallet({ accountId: account.accountId })).balance).toBe(0n);
    await expectAuditClean(a.rpc);
  }, 60_000);

  it('two replicas: a per-key requests limit is exact under concurrency, and each hold settles once on the other replica', async () => {
    const account = await fundedAccount(a.rpc, 10_000n);
    await b.rpc.setKeyLimit({ keyId: account.keyId, limitType: 'requests', period: 'daily', value: 30n });
    const ids = Array.from({ length: 90 }, () => randomUUID());
    const outcomes = await Promise.allSettled(ids.map((id, i) => [a, b][i % 2]!.money.authorize(hold(id, account, 10n))));
    const heldIds = ids.filter((_, i) => outcomes[i]!.status === 'fulfilled');
    expect(heldIds).toHaveLength(30);
    const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : []));
    expect(refused).toHaveLength(60);
    for (const r of refused) expect(r).toMatchObject({ code: 'api_key_limit_exceeded' });
    // Settled on the replica that did not hold, twice over (a resend): one charge each.
    const settles = await Promise.all(heldIds.flatMap((id, i) => [0, 1].map(() => [b, a][i % 2]!.money.settle({ requestId: id, accountId: account.accountId, units: 1n }))));
    expect(settles.every((s) => s.creditCharged === 10n)).toBe(true);
    expect((await a.rpc.getWallet({ accountId: account.accountId })).balance).toBe(10_000n - 30n * 10n);
    await expectAuditClean(b.rpc);
  }, 60_000);

  it('kill -9 in the middle of batches: every acknowledged hold and settle is there after the restart, nothing moved twice', async () => {
    const accounts = await Promise.all(Array.from({ length: 8 }, () => fundedAccount(a.rpc, 1_000_000n)));
    const acknowledged = { holds: new Map<string, { accountId: string; held: bigint }>(), settles: new Map<string, bigint>() };
    const run = { stop: false };
    const worker = async (w: number) => {
      for (let i = 0; !run.stop; i++) {
        const account = accounts[(w + i) % accounts.length]!;
        const id = randomUUID();
        try {
          const h = await a.money.authorize(hold(id, account, 7n), { timeoutMs: 2_000 });
          acknowledged.holds.set(id, { accountId: account.accountId, held: h.held });
          const s = await a.money.settle({ requestId: id, accountId: account.accountId, units: 1n }, { timeoutMs: 2_000 });
          acknowledged.settles.set(id, s.creditCharged);
        } catch (err) {
          if (!(err instanceof RpcError) && !(err instanceof GatewayError)) throw err;
          return; // billing died under this call: whatever it did is checked below
        }
      }
    };
    const workers = Array.from({ length: 32 }, (_, w) => worker(w));
    while (acknowledged.settles.size < 300) await new Promise((r) => setTimeout(r, 10));
    await kill9(a); // mid-stream: 32 calls in flight, batched together
    run.stop = true;
    await Promise.all(workers);
    expect(acknowledged.settles.size).toBeGreaterThanOrEqual(300);

    const restarted = await startBilling();
    // Every acknowledged hold exists; every acknowledged settle is settled at the charge answered.
    const rows = await billing.em
      .fork()
      .execute<{ request_id: string; status: string; charged: string | null; amount: string }[]>(
        `select "request_id", "status", "charged"::text, "amount"::text from "hold" where "request_id" in (?)`,
        [[...acknowledged.holds.keys()]],
      );
    const byId = new Map(rows.map((r) => [r.request_id, r]));
    for (const [id, h] of acknowledged.holds) {
      const row = byId.get(id);
      expect(row, `acknowledged hold ${id}`).toBeDefined();
      expect(BigInt(row!.amount)).toBe(h.held);
    }
    for (const [id, charged] of acknowledged.settles) {
      expect(byId.get(id)).toMatchObject({ status: 'settled', charged: String(charged) });
    }
    // Holds acknowledged but never settled (their settle died with billing) are released or settled
    // by a resend, exactly once: a settle sent now charges what was due, a replay changes nothing.
    for (const [id, h] of acknowledged.holds) {
      if (acknowledged.settles.has(id)) continue;
      const s = await restarted.money.settle({ requestId: id, accountId: h.accountId, units: 1n });
      expect(s.creditCharged).toBe(7n);
      expect((await restarted.money.settle({ requestId: id, accountId: h.accountId, units: 1n })).creditCharged).toBe(7n);
    }
    await expectAuditClean(restarted.rpc);
    // Each wallet is its funding less 7 per settled request less what open holds keep.
    for (const account of accounts) {
      const [sums] = await billing.em
        .fork()
        .execute<{ settled: string; open: string }[]>(
          `select coalesce(sum("charged") filter (where "status" = 'settled'), 0)::text as settled,
                  coalesce(sum("amount") filter (where "status" = 'open'), 0)::text as open
             from "hold" where "account_id" = ?`,
          [account.accountId],
        );
      const balance = (await restarted.rpc.getWallet({ accountId: account.accountId })).balance;
      expect(balance).toBe(1_000_000n - BigInt(sums!.settled) - BigInt(sums!.open));
    }
  }, 120_000);
});
