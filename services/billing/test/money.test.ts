import { randomUUID } from 'node:crypto';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { billingV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { getBalance } from '../src/domain/accounts.ts';
import { setKeyLimit } from '../src/domain/key-limits.ts';
import { resolveReconciliation } from '../src/domain/reconciliation.ts';
import { releaseOrphanHolds } from '../src/domain/hold-sweeper.ts';
import { applyOps, type MoneyOp } from '../src/domain/money.ts';
import { creditsFor, type BillingUnit } from '../src/domain/pricing.ts';
import { RequestMoney } from '../src/domain/requests.ts';
import { createLogger } from '@gw/service-kit';
import { account, billingOrm, expectAuditClean, refusal } from './support.ts';

const { IMAGE, MILLION_TOKENS, SECOND } = billingV1.BillingUnit;

type AuthorizeInit = Partial<Pick<billingV1.AuthorizeRequest, 'endpoint' | 'unit' | 'pricePerUnit' | 'worstUnits' | 'text'>>;

function authorizeReq(accountId: string, keyId: string, init: AuthorizeInit = {}) {
  return create(billingV1.AuthorizeRequestSchema, {
    requestId: randomUUID(),
    accountId,
    keyId,
    endpoint: 'images/generations',
    model: 'm',
    unit: IMAGE,
    pricePerUnit: 1n,
    worstUnits: 1n,
    ...init,
  });
}

describe('request money (holds, settlements, refunds) on real Postgres', () => {
  let orm: MikroORM;
  let money: RequestMoney;

  beforeAll(async () => {
    orm = await billingOrm();
    money = new RequestMoney(orm);
  });
  afterEach(() => expectAuditClean(orm));
  afterAll(() => orm?.close());

  it('200 concurrent holds on a wallet funded for exactly 100: exactly 100 succeed, balance ends at 0', async () => {
    const { accountId, keyId } = await account(orm, 100n);
    // Two independent batchers stand for two billing replicas racing on the same wallet.
    const replicas = [money, new RequestMoney(orm)];
    const outcomes = await Promise.allSettled(
      Array.from({ length: 200 }, (_, i) => replicas[i % 2]!.authorize(authorizeReq(accountId, keyId))),
    );
    const ok = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.filter((o) => o.status === 'rejected').map((o) => (o as PromiseRejectedResult).reason);
    expect(ok).toHaveLength(100);
    expect(refused).toHaveLength(100);
    for (const r of refused) expect(r).toMatchObject({ code: 'insufficient_balance' });
    expect(await getBalance(orm.em.fork(), accountId)).toBe(0n);
    const balances = ok.map((o) => (o as PromiseFulfilledResult<{ balanceAfter: bigint }>).value.balanceAfter);
    expect(Math.min(...balances.map(Number))).toBe(0);
    expect(new Set(balances).size).toBe(100); // every hold saw a distinct balance: no lost update
  });

  it('a hold is refused to a revoked or expired key (auth_revoked / auth_expired), whatever a gateway cached; its earlier hold still settles', async () => {
    const { accountId, keyId } = await account(orm, 1_000n);
    const earlier = authorizeReq(accountId, keyId);
    await money.authorize(earlier);
    await orm.em.fork().execute('update api_key set expires_at = ? where id = ?', [new Date(Date.now() - 1_000), keyId]);
    await expect(money.authorize(authorizeReq(accountId, keyId))).rejects.toMatchObject({ code: 'auth_expired', message: 'The API key has expired.' });
    await orm.em.fork().execute('update api_key set revoked_at = now() where id = ?', [keyId]);
    await expect(money.authorize(authorizeReq(accountId, keyId))).rejects.toMatchObject({ code: 'auth_revoked', message: 'The API key was revoked.' });
    // Sent again after its answer was lost, the earlier authorize finds its hold; the request it
    // belongs to passed auth in time and settles as usual.
    expect(await money.authorize(earlier)).toMatchObject({ held: 1n });
    const settle = { requestId: earlier.requestId, accountId, units: 1n };
    expect(await money.settle(create(billingV1.SettleRequestSchema, settle))).toEqual({ creditCharged: 1n, balanceAfter: 999n });
  });

  it('settles to the actual cost, releases in full, and a replay moves nothing', async () => {
    const { accountId, keyId } = await account(orm, 1_000n);
    const a = authorizeReq(accountId, keyId, { unit: IMAGE, pricePerUnit: 100n, worstUnits: 4n });
    expect(await money.authorize(a)).toEqual({ held: 400n, balanceAfter: 600n });
    const settle = { requestId: a.requestId, accountId, units: 1n };
    const first = await money.settle(create(billingV1.SettleRequestSchema, settle));
    expect(first).toEqual({ creditCharged: 100n, balanceAfter: 900n });
    expect(await money.settle(create(billingV1.SettleRequestSchema, { ...settle, units: 4n }))).toEqual(first);
    expect(await money.authorize(a)).toMatchObject({ held: 400n }); // replayed authorize holds nothing new
    expect(await getBalance(orm.em.fork(), accountId)).toBe(900n);

    const b = authorizeReq(accountId, keyId, { unit: IMAGE, pricePerUnit: 100n, worstUnits: 2n });
    await money.authorize(b);
    expect(await money.release(create(billingV1.ReleaseRequestSchema, { requestId: b.requestId, accountId }))).toEqual({ balanceAfter: 900n });
    expect(await money.release(create(billingV1.ReleaseRequestSchema, { requestId: b.requestId, accountId }))).toEqual({ balanceAfter: 900n });
  });

  it('refunds a settled charge exactly once, also when refunds race', async () => {
    const { accountId, keyId } = await account(orm, 50_000n);
    const a = authorizeReq(accountId, keyId, { endpoint: 'videos/generations', unit: SECOND, pricePerUnit: 5_000n, worstUnits: 8n });
    await money.authorize(a);
    await money.settle(create(billingV1.SettleRequestSchema, { requestId: a.requestId, accountId, units: 8n }));
    expect(await getBalance(orm.em.fork(), accountId)).toBe(10_000n);
    const refunds = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        (i % 2 ? money : new RequestMoney(orm)).refund(create(billingV1.RefundRequestSchema, { requestId: a.requestId, accountId })),
      ),
    );
    for (const r of refunds) expect(r.creditRefunded).toBe(40_000n);
    expect(await getBalance(orm.em.fork(), accountId)).toBe(50_000n);
  });

  it('charges text at max(1, ceil(tokens × price / 1e6)), at the price and unit stored with the hold', async () => {
    const { accountId, keyId } = await account(orm, 100n);
    const a = authorizeReq(accountId, keyId, { endpoint: 'chat/completions', unit: MILLION_TOKENS, pricePerUnit: 15_000n, worstUnits: 5_000n, text: true });
    expect((await money.authorize(a)).held).toBe(75n);
    const r = await money.settle(create(billingV1.SettleRequestSchema, { requestId: a.requestId, accountId, units: 67n, inputTokens: 60n, outputTokens: 7n }));
    expect(r).toEqual({ creditCharged: 2n, balanceAfter: 98n });
    const usage = await orm.em.fork().execute<{ total_tokens: string; images: number; credits: string }[]>(
      'select "total_tokens"::text, "images", "credits"::text from "usage_record" where "request_id" = ?',
      [a.requestId],
    );
    expect(usage).toEqual([{ total_tokens: '67', images: 0, credits: '2' }]);
  });

  it('a settle cannot choose its price: a price or unit sent by an older caller (fields 3 and 4) is ignored', async () => {
    const { accountId, keyId } = await account(orm, 1_000n);
    const a = authorizeReq(accountId, keyId, { unit: IMAGE, pricePerUnit: 100n, worstUnits: 2n });
    await money.authorize(a);
    // The wire bytes of an older SettleRequest: its fields plus unit = SECOND (3) and price_per_unit = 1 (4).
    const current = toBinary(billingV1.SettleRequestSchema, create(billingV1.SettleRequestSchema, { requestId: a.requestId, accountId, units: 2n }));
    const old = fromBinary(billingV1.SettleRequestSchema, new Uint8Array([...current, 3 << 3, 3, 4 << 3, 1]));
    expect(await money.settle(old)).toEqual({ creditCharged: 200n, balanceAfter: 800n });
  });

  it('the settle\'s rule (credits_for in SQL) is the hold\'s rule (creditsFor): equal on every case, far past int64', async () => {
    const cases: Array<[BillingUnit, bigint, bigint]> = [];
    for (const unit of ['million_tokens', 'image', 'second'] as const) {
      for (const q of [0n, 1n, 66n, 67n, 999_999n, 1_000_001n, 123_456_789n, 9_007_199_254_740_993n]) {
        for (const p of [0n, 1n, 15_000n, 75_000n, 9_223_372_036_854_775_807n]) cases.push([unit, q, p]);
      }
    }
    const rows = await orm.em
      .fork()
      .execute<{ c: string }[]>(
        `select "credits_for"(c->>0, (c->>1)::numeric, (c->>2)::numeric)::text as c from jsonb_array_elements(?::jsonb) with ordinality as t(c, i) order by i`,
        [JSON.stringify(cases.map((c) => c.map(String)))],
      );
    expect(rows.map((r) => BigInt(r.c))).toEqual(cases.map(([u, q, p]) => creditsFor(u, q, p)));
  });

  it('apply_ops prices a settle from its hold: a charge, price or unit in the operation changes nothing', async () => {
    const { accountId, keyId } = await account(orm, 1_000n);
    const a = authorizeReq(accountId, keyId, { unit: SECOND, pricePerUnit: 7n, worstUnits: 10n });
    await money.authorize(a);
    const forged = { op: 'settle', request_id: a.requestId, units: '4', input_tokens: '0', output_tokens: '0', reconcile: false, unit: 'image', price: '1', charge: '0' };
    const [r] = await applyOps(orm.em.fork(), accountId, [forged as MoneyOp], new Date());
    expect(r).toMatchObject({ ok: true, credit_charged: '28', balance_after: '972', unit: 'second' });
  });
});

describe('per-key limits, windows and reconciliation', () => {
  let orm: MikroORM;
  let clock: Date;
  let money: RequestMoney;

  beforeAll(async () => {
    orm = await billingOrm();
    money = new RequestMoney(orm, { now: () => clock });
  });
  afterEach(() => expectAuditClean(orm));
  afterAll(() => orm?.close());

  // 2026-03-31 23:30 in Asia/Ho_Chi_Minh (UTC+7) is 16:30 UTC.
  const lateLastDayOfMonth = new Date('2026-03-31T16:30:00Z');
  const nextDayNextMonth = new Date('2026-03-31T17:30:00Z'); // 00:30 on 1 April local time

  async function settleImage(accountId: string, requestId: string, units = 1n) {
    return money.settle(create(billingV1.SettleRequestSchema, { requestId, accountId, units }));
  }

  it.each(['daily', 'monthly', 'lifetime'] as const)('requests limit, %s window, with rollover', async (period) => {
    clock = lateLastDayOfMonth;
    const { accountId, keyId } = await account(orm, 1_000n);
    await setKeyLimit(orm.em.fork(), keyId, 'requests', period, 2n);
    for (let i = 0; i < 2; i++) {
      const a = authorizeReq(accountId, keyId);
      await money.authorize(a);
      await settleImage(accountId, a.requestId);
    }
    const third = await refusal(money.authorize(authorizeReq(accountId, keyId)));
    expect(third.code).toBe('api_key_limit_exceeded');
    expect(third.details).toEqual({ limit_type: 'requests', period });
    clock = nextDayNextMonth; // a new local day and a new local month
    // A lifetime window never resets; daily and monthly windows do.
    const after = await money.authorize(authorizeReq(accountId, keyId)).then(
      (held) => ({ held: held.held }),
      (err: unknown) => ({ refused: (err as GatewayError).details }),
    );
    expect(after).toEqual(period === 'lifetime' ? { refused: { limit_type: 'requests', period } } : { held: 1n });
  });

  it('spending limit counts open holds, so it never overshoots, and frees what a settle returns', async () => {
    clock = lateLastDayOfMonth;
    const { accountId, keyId } = await account(orm, 1_000n);
    await setKeyLimit(orm.em.fork(), keyId, 'spending', 'daily', 10n);
    const a = authorizeReq(accountId, keyId, { worstUnits: 8n });
    await money.authorize(a);
    const over = await refusal(money.authorize(authorizeReq(accountId, keyId, { worstUnits: 3n })));
    expect(over.details).toEqual({ limit_type: 'spending', period: 'daily' });
    // Only 8 are held and nothing is spent yet: the message says what the limit counts.
    expect(over.message).toMatch(/daily spending limit has no room left for this request's worst-case cost \(its hold\)/);
    await settleImage(accountId, a.requestId, 2n); // 6 of the 8 held come back
    await expect(money.authorize(authorizeReq(accountId, keyId, { worstUnits: 8n }))).resolves.toMatchObject({ held: 8n });
    const full = await refusal(money.authorize(authorizeReq(accountId, keyId, { worstUnits: 1n })));
    expect(full.code).toBe('api_key_limit_exceeded');
  });

  it('concurrent requests never overshoot a requests limit', async () => {
    clock = lateLastDayOfMonth;
    const { accountId, keyId } = await account(orm, 1_000n);
    await setKeyLimit(orm.em.fork(), keyId, 'requests', 'monthly', 7n);
    const outcomes = await Promise.allSettled(Array.from({ length: 40 }, () => money.authorize(authorizeReq(accountId, keyId))));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(7);
  });

  it('token limit: measured from actual usage, exceeded by at most one request', async () => {
    clock = lateLastDayOfMonth;
    const { accountId, keyId } = await account(orm, 1_000_000n);
    await setKeyLimit(orm.em.fork(), keyId, 'tokens', 'daily', 100n);
    const text = (worst: bigint) =>
      authorizeReq(accountId, keyId, { endpoint: 'chat/completions', unit: MILLION_TOKENS, pricePerUnit: 1_000n, worstUnits: worst, text: true });
    const a = text(60n);
    await money.authorize(a);
    // In-flight worst cases are reserved: 0 + 60 < 100 admits `b`; then 60 + 50 >= 100 refuses more.
    const b = text(50n);
    await money.authorize(b);
    const reserved = await refusal(money.authorize(text(10n)));
    expect(reserved.details).toEqual({ limit_type: 'tokens', period: 'daily' });
    expect(reserved.message).toMatch(/counting the worst case of its requests still in progress/);
    const settleText = (requestId: string, units: bigint) =>
      money.settle(create(billingV1.SettleRequestSchema, { requestId, accountId, units }));
    await settleText(a.requestId, 30n);
    await settleText(b.requestId, 20n);
    const c = text(500n); // 50 used < 100: allowed, although its own worst case is large
    await money.authorize(c);
    await settleText(c.requestId, 120n); // total 170: over by this one request only
    expect((await refusal(money.authorize(text(1n)))).code).toBe('api_key_limit_exceeded');
    // Token limits do not apply to image requests on the same key.
    await expect(money.authorize(authorizeReq(accountId, keyId))).resolves.toMatchObject({ held: 1n });
  });

  it('a success without usage charges the minimum, blocks text on the key until resolved, and is in the ledger', async () => {
    clock = lateLastDayOfMonth;
    const { accountId, keyId } = await account(orm, 1_000n);
    const a = authorizeReq(accountId, keyId, { endpoint: 'chat/completions', unit: MILLION_TOKENS, pricePerUnit: 15_000n, worstUnits: 10_000n, text: true });
    await money.authorize(a);
    const settled = await money.settle(
      create(billingV1.SettleRequestSchema, { requestId: a.requestId, accountId, units: 0n, reconcile: true }),
    );
    expect(settled).toEqual({ creditCharged: 1n, balanceAfter: 999n });
    const blocked = await refusal(money.authorize(authorizeReq(accountId, keyId, { unit: MILLION_TOKENS, pricePerUnit: 1n, worstUnits: 1n, text: true })));
    expect(blocked.code).toBe('api_key_quota_reconciliation_required');
    await expect(money.authorize(authorizeReq(accountId, keyId))).resolves.toMatchObject({ held: 1n }); // images unaffected
    const resolved = await resolveReconciliation(orm.em.fork(), keyId, 5n, 'provider invoice checked');
    expect(resolved.resolved).toBe(1);
    const entries = await orm.em.fork().execute<{ kind: string; amount: string }[]>(
      "select kind, amount::text from ledger_entry where account_id = ? and kind = 'adjustment'",
      [accountId],
    );
    expect(entries).toEqual([{ kind: 'adjustment', amount: '-5' }]);
    await expect(money.authorize(authorizeReq(accountId, keyId, { unit: MILLION_TOKENS, pricePerUnit: 1n, worstUnits: 1n, text: true }))).resolves.toBeTruthy();
  });

  it('a first limit counts the use the key already had in the window, open holds included', async () => {
    clock = lateLastDayOfMonth;
    const { accountId, keyId } = await account(orm, 1_000n);
    const done = authorizeReq(accountId, keyId, { worstUnits: 4n });
    await money.authorize(done);
    await settleImage(accountId, done.requestId, 3n); // spent 3, 1 request
    const released = authorizeReq(accountId, keyId, { worstUnits: 2n });
    await money.authorize(released);
    await money.release(create(billingV1.ReleaseRequestSchema, { requestId: released.requestId, accountId })); // counts nothing
    const open = authorizeReq(accountId, keyId, { worstUnits: 5n });
    await money.authorize(open); // spent 5 held, 1 request
    await setKeyLimit(orm.em.fork(), keyId, 'spending', 'daily', 10n, clock);
    await setKeyLimit(orm.em.fork(), keyId, 'requests', 'lifetime', 3n, clock);
    // 3 + 5 = 8 spent: a hold of 3 more would pass 10.
    expect((await refusal(money.authorize(authorizeReq(accountId, keyId, { worstUnits: 3n })))).details).toEqual({ limit_type: 'spending', period: 'daily' });
    await expect(money.authorize(authorizeReq(accountId, keyId, { worstUnits: 2n }))).resolves.toMatchObject({ held: 2n }); // 3rd request
    expect((await refusal(money.authorize(authorizeReq(accountId, keyId)))).details).toEqual({ limit_type: 'requests', period: 'lifetime' });
    // The open hold from before the limit settles against the rebuilt window: 3 + 1 + 2 = 6 spent.
    await settleImage(accountId, open.requestId, 1n);
    await expect(money.authorize(authorizeReq(accountId, keyId, { worstUnits: 4n }))).rejects.toMatchObject({ details: { limit_type: 'requests' } });
    const windows = await orm.em.fork().execute<{ spent: string }[]>(
      `select spent::text from key_usage_window where key_id = ? and period = 'daily'`,
      [keyId],
    );
    expect(windows).toEqual([{ spent: '6' }]);
  });

  it('releases holds that outlived any request, and only those', async () => {
    const { accountId, keyId } = await account(orm, 100n);
    clock = new Date('2026-03-31T10:00:00Z');
    const old = authorizeReq(accountId, keyId, { worstUnits: 30n });
    await money.authorize(old);
    clock = new Date('2026-03-31T10:50:00Z');
    const fresh = authorizeReq(accountId, keyId, { worstUnits: 20n });
    await money.authorize(fresh);
    expect(await getBalance(orm.em.fork(), accountId)).toBe(50n);
    const lifetimes = { leaseMs: 60_000, maxAgeMs: 30 * 60_000 };
    const released = await releaseOrphanHolds(orm.em.fork(), money, lifetimes, clock, createLogger('test', 'silent'));
    expect(released).toBeGreaterThanOrEqual(1);
    expect(await getBalance(orm.em.fork(), accountId)).toBe(80n);
    // A late settle of the released hold is a replay: it charges nothing.
    await expect(settleImage(accountId, old.requestId, 30n)).resolves.toEqual({ creditCharged: 0n, balanceAfter: 80n });
    await expect(settleImage(accountId, fresh.requestId, 20n)).resolves.toEqual({ creditCharged: 20n, balanceAfter: 80n });
  });
});
