import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { rmSync, writeFileSync } from 'node:fs';
import { create } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { addService, billingV1, bindServer, shutdownServer } from '@gw/contracts';
import { createLogger } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { getBalance } from '../src/domain/accounts.ts';
import { releaseOrphanHolds, renewLease, startHoldSweeper } from '../src/domain/hold-sweeper.ts';
import { RequestMoney } from '../src/domain/requests.ts';
import { billingHandler } from '../src/grpc/billing.handler.ts';
import { moneyExchange } from './money-exchange.ts';
import { account, billingOrm, expectAuditClean } from './support.ts';

const logger = createLogger('test', 'silent');
const clockNow = () => new Date();
/** `s` seconds after the first test's start. */
const at = (s: number) => new Date(Date.parse('2026-05-01T10:00:00Z') + s * 1000);
const { IMAGE } = billingV1.BillingUnit;

function holdReq(accountId: string, keyId: string, credits: bigint, leaseOwner = '') {
  return create(billingV1.AuthorizeRequestSchema, {
    requestId: randomUUID(),
    accountId,
    keyId,
    endpoint: 'images/generations',
    model: 'm',
    unit: IMAGE,
    pricePerUnit: credits,
    worstUnits: 1n,
    leaseOwner,
  });
}

async function statusOf(orm: MikroORM, requestId: string): Promise<string> {
  const rows = await orm.em.fork().execute<{ status: string }[]>('select "status" from "hold" where "request_id" = ?', [requestId]);
  return rows[0]!.status;
}

describe('hold leases: the holds of an owner that stopped renewing are released, on real Postgres', () => {
  let orm: MikroORM;
  beforeAll(async () => {
    orm = await billingOrm();
  });
  afterEach(() => expectAuditClean(orm));
  afterAll(() => orm?.close());

  it('a lapsed lease releases its holds; a renewed lease, a new hold and an unowned hold stay (until the maximum age)', async () => {
    let clock = new Date('2026-05-01T10:00:00Z');
    const money = new RequestMoney(orm, { now: () => clock });
    const lifetimes = { leaseMs: 60_000, maxAgeMs: 30 * 60_000 };
    const sweep = (leases = true) => releaseOrphanHolds(orm.em.fork(), money, lifetimes, clock, logger, leases);
    const { accountId, keyId } = await account(orm, 1_000n);
    const [alive, dead] = [`alive-${randomUUID()}`, `dead-${randomUUID()}`];

    const ofAlive = holdReq(accountId, keyId, 10n, alive);
    const ofDead = holdReq(accountId, keyId, 20n, dead);
    const unowned = holdReq(accountId, keyId, 40n);
    await Promise.all([money.authorize(ofAlive), money.authorize(ofDead), money.authorize(unowned)]);
    await renewLease(orm.em.fork(), alive, lifetimes.leaseMs, clock);
    await renewLease(orm.em.fork(), dead, lifetimes.leaseMs, clock);

    // 40 s on: both leases and every hold are young.
    clock = at(40);
    await renewLease(orm.em.fork(), alive, lifetimes.leaseMs, clock);
    expect(await sweep()).toBe(0);
    // A hold made by an owner that has not renewed yet counts as leased for a lease from its making.
    const newborn = holdReq(accountId, keyId, 80n, `new-${randomUUID()}`);
    await money.authorize(newborn);

    // 61 s: the dead owner's lease lapsed at 60 s; the living one renewed at 40 s (until 100 s).
    clock = at(61);
    expect(await sweep(false)).toBe(0); // not trusting leases (billing just started): the age rule only
    expect(await sweep()).toBe(1);
    expect(await statusOf(orm, ofDead.requestId)).toBe('released');
    for (const h of [ofAlive, unowned, newborn]) expect(await statusOf(orm, h.requestId)).toBe('open');
    expect(await getBalance(orm.em.fork(), accountId)).toBe(1_000n - 10n - 40n - 80n);

    // 101 s: the newborn's owner never renewed (lapsed at 100 s); the living one renews on.
    clock = at(101);
    await renewLease(orm.em.fork(), alive, lifetimes.leaseMs, clock);
    expect(await sweep()).toBe(1);
    expect(await statusOf(orm, newborn.requestId)).toBe('released');

    // 31 minutes: the maximum age takes every open hold, the renewed one and the unowned one too.
    clock = at(31 * 60);
    await renewLease(orm.em.fork(), alive, lifetimes.leaseMs, clock);
    expect(await sweep()).toBe(2);
    expect(await getBalance(orm.em.fork(), accountId)).toBe(1_000n);
    // The owner's late settle is a replay of the release: it charges nothing.
    const late = await money.settle(create(billingV1.SettleRequestSchema, { requestId: ofDead.requestId, accountId, units: 1n }));
    expect(late.creditCharged).toBe(0n);
    expect(await getBalance(orm.em.fork(), accountId)).toBe(1_000n);
  });

  it('a renewal never shortens a lease, and refuses an empty or oversized owner', async () => {
    const owner = `o-${randomUUID()}`;
    const now = new Date('2026-05-01T10:00:00Z');
    await renewLease(orm.em.fork(), owner, 60_000, now);
    await renewLease(orm.em.fork(), owner, 1_000, now); // a replica with a shorter setting
    const rows = await orm.em.fork().execute<{ until: Date }[]>('select "lease_until" as until from "hold_owner" where "owner" = ?', [owner]);
    expect(new Date(rows[0]!.until).getTime()).toBe(now.getTime() + 60_000);
    await expect(renewLease(orm.em.fork(), '', 60_000, now)).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(renewLease(orm.em.fork(), 'x'.repeat(201), 60_000, now)).rejects.toMatchObject({ code: 'invalid_request' });
  });

  describe('over gRPC, with owners that are processes (short lease and sweep for the test)', () => {
    const LEASE_MS = 600;
    const SWEEP_MS = 100;
    const RENEW_MS = 150;
    let server: grpc.Server;
    let address: string;
    let stopSweeper: () => Promise<void>;
    let money: RequestMoney;
    const children: ChildProcess[] = [];

    beforeAll(async () => {
      money = new RequestMoney(orm);
      server = new grpc.Server();
      addService(server, billingV1.BillingService, billingHandler({ orm, money, rateDefaults: { perSecond: 1_000, perMinute: 100_000 }, now: clockNow, holdLeaseMs: LEASE_MS }));
      address = `127.0.0.1:${await bindServer(server, '127.0.0.1', 0)}`;
      const lifetimes = { leaseMs: LEASE_MS, maxAgeMs: 30 * 60_000 };
      stopSweeper = startHoldSweeper((leases) => releaseOrphanHolds(orm.em.fork(), money, lifetimes, clockNow(), logger, leases), { intervalMs: SWEEP_MS, leaseMs: LEASE_MS, now: clockNow }, logger);
    });
    afterAll(async () => {
      for (const c of children) c.kill('SIGKILL');
      await stopSweeper?.();
      if (server) await shutdownServer(server, 1_000);
    });

    /** A process that holds credits through the gateway's billing client, prints the hold's id, and lives on. */
    function ownerProcess(accountId: string, keyId: string, requestId: string): ChildProcess {
      const script = new URL(`./.lease-owner-${randomUUID()}.ts`, import.meta.url);
      writeFileSync(
        script,
        `import { billingV1 } from '@gw/contracts';
import { moneyExchange } from './money-exchange.ts';
const money = moneyExchange(${JSON.stringify(address)}, { leaseRenewMs: ${RENEW_MS} });
await money.authorize({ requestId: ${JSON.stringify(requestId)}, accountId: ${JSON.stringify(accountId)}, keyId: ${JSON.stringify(keyId)},
  endpoint: 'images/generations', model: 'm', unit: billingV1.BillingUnit.IMAGE, pricePerUnit: 100n, worstUnits: 1n });
process.stdout.write('held ' + money.leaseOwner + '\\n');
setInterval(() => {}, 1_000);
`,
      );
      const child = spawn(process.execPath, [script.pathname], { stdio: ['ignore', 'pipe', 'inherit'] });
      child.once('exit', () => rmSync(script, { force: true }));
      children.push(child);
      return child;
    }

    it('an owner killed with -9: its hold is released within lease + sweep; a live owner keeps its hold and settles it', async () => {
      const { accountId, keyId } = await account(orm, 1_000n);
      const live = moneyExchange(address, { leaseRenewMs: RENEW_MS });
      try {
        const kept = randomUUID();
        await live.authorize({ requestId: kept, accountId, keyId, endpoint: 'images/generations', model: 'm', unit: IMAGE, pricePerUnit: 50n, worstUnits: 1n });

        const orphan = randomUUID();
        const child = ownerProcess(accountId, keyId, orphan);
        const [line] = (await once(child.stdout!, 'data')) as [Buffer];
        expect(line.toString()).toMatch(/^held /);
        await new Promise((r) => setTimeout(r, 3 * RENEW_MS)); // it renews a few times, then dies
        expect(await statusOf(orm, orphan)).toBe('open');
        child.kill('SIGKILL');
        await once(child, 'exit');

        // Released within a lease and two sweeps of its death (plus slack for a loaded machine).
        await vi.waitFor(async () => expect(await statusOf(orm, orphan)).toBe('released'), { timeout: LEASE_MS + 2 * SWEEP_MS + 1_500, interval: 25 });

        // The live owner renews: after two more leases its hold is still open, and it settles.
        await new Promise((r) => setTimeout(r, 2 * LEASE_MS));
        expect(await statusOf(orm, kept)).toBe('open');
        await expect(live.settle({ requestId: kept, accountId, units: 1n })).resolves.toMatchObject({ creditCharged: 50n, balanceAfter: 950n });
        expect(await getBalance(orm.em.fork(), accountId)).toBe(950n);
      } finally {
        live.close();
      }
    }, 20_000);
  });
});
