import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { getBalance } from '../src/domain/accounts.ts';
import { applyBatchNow, applyOps, type MoneyOp } from '../src/domain/money.ts';
import { checkRateLimit } from '../src/domain/rate-limit.ts';
import { account, billingOrm, expectAuditClean } from './support.ts';

const hold = (id: string, keyId: string, amount: number, extra: Partial<MoneyOp> = {}): MoneyOp => ({
  op: 'authorize',
  request_id: id,
  key_id: keyId,
  amount: String(amount),
  worst_tokens: '0',
  text: false,
  endpoint: 'images/generations',
  model: 'm',
  unit: 'image',
  price: String(amount),
  ...extra,
} as MoneyOp);
const settle = (id: string, units: number): MoneyOp => ({ op: 'settle', request_id: id, units: String(units), input_tokens: '0', output_tokens: '0', reconcile: false });

/** A sequence touching every in-batch case: replays, a hold closed in its own batch, a refund of it, a release, a refusal. */
function script(p: string, keyId: string): MoneyOp[] {
  return [
    hold(`${p}-1`, keyId, 30),
    hold(`${p}-1`, keyId, 30), // sent again: a replay of the hold just made
    hold(`${p}-2`, keyId, 50),
    settle(`${p}-1`, 1), // one image at 30: the hold's price
    settle(`${p}-1`, 1), // replay
    { op: 'refund', request_id: `${p}-1` },
    { op: 'refund', request_id: `${p}-1` }, // replay
    hold(`${p}-3`, keyId, 40), // 50 left: fits
    hold(`${p}-4`, keyId, 40), // 10 left: refused
    { op: 'release', request_id: `${p}-2` },
    settle(`${p}-2`, 1), // replay of the release: charges nothing
    hold(`${p}-4`, keyId, 40), // fits again after the release
    settle(`${p}-9`, 1), // no such hold
  ];
}

/**
 * apply_groups decides a batch's operations in memory and writes each table once: one statement
 * must answer and leave exactly what the same operations one statement each would.
 */
describe('money operations set-based (apply_groups)', () => {
  let orm: MikroORM;
  beforeAll(async () => {
    orm = await billingOrm();
  });
  afterEach(() => expectAuditClean(orm));
  afterAll(() => orm?.close());

  it('one statement answers and leaves what one statement per operation does', async () => {
    const one = await account(orm, 100n);
    const batch = await account(orm, 100n);
    const now = new Date();
    const apart: unknown[] = [];
    for (const op of script(`a${randomUUID()}`, one.keyId)) apart.push(...(await applyOps(orm.em.fork(), one.accountId, [op], now)));
    const [together] = await applyBatchNow(orm, [{ accountId: batch.accountId, ops: script(`b${randomUUID()}`, batch.keyId) }], now);
    expect(together).toEqual(apart);
    expect(together!.map((r) => r.ok)).toEqual([true, true, true, true, true, true, true, true, false, true, true, true, false]);
    expect(await getBalance(orm.em.fork(), batch.accountId)).toBe(await getBalance(orm.em.fork(), one.accountId));
    expect(await getBalance(orm.em.fork(), batch.accountId)).toBe(20n);
    const rows = async (accountId: string) =>
      orm.em.fork().execute<{ status: string; charged: string | null; refunded: string }[]>(
        `select status, charged::text, refunded::text from hold where account_id = ? order by request_id`,
        [accountId],
      );
    expect(await rows(batch.accountId)).toEqual(await rows(one.accountId));
    const usage = await orm.em.fork().execute<{ credits: string }[]>('select credits::text from usage_record where account_id = ?', [batch.accountId]);
    expect(usage).toEqual([{ credits: '0' }]);
  });

  it('several accounts in one statement, in any order, an unknown account refused on its own', async () => {
    const a = await account(orm, 10n);
    const b = await account(orm, 10n);
    const now = new Date();
    const ids = [randomUUID(), randomUUID()];
    const results = await applyBatchNow(
      orm,
      [
        { accountId: b.accountId, ops: [hold(ids[1]!, b.keyId, 4)] },
        { accountId: randomUUID(), ops: [hold(randomUUID(), a.keyId, 1)] },
        { accountId: a.accountId, ops: [hold(ids[0]!, a.keyId, 3), hold(ids[1]!, a.keyId, 3)] },
      ],
      now,
    );
    // Accounts are applied in the order of their ids (the order their wallets are locked in): the
    // first to reach the shared request id holds it, the other is refused, not held twice.
    const refusedSecond = expect.objectContaining({ ok: false, replay: true, code: 'invalid_request' });
    const aFirst = a.accountId < b.accountId;
    expect({ a: results[2], b: results[0] }).toEqual(
      aFirst
        ? { a: [{ ok: true, held: '3', balance_after: '7' }, { ok: true, held: '3', balance_after: '4' }], b: [refusedSecond] }
        : { a: [{ ok: true, held: '3', balance_after: '7' }, refusedSecond], b: [{ ok: true, held: '4', balance_after: '6' }] },
    );
    expect(results[1]).toEqual([{ ok: false, code: 'not_found' }]);
  });

  it("counts the account rate limit per operation within a batch, and the other path sees the batch's count", async () => {
    const { accountId, keyId } = await account(orm, 100n);
    const nowMs = Date.now();
    const rated = (id: string) => hold(id, keyId, 1, { rate_now_ms: nowMs, rate_per_second: 3, rate_per_minute: 1000 } as Partial<MoneyOp>);
    const [r] = await applyBatchNow(orm, [{ accountId, ops: Array.from({ length: 5 }, () => rated(randomUUID())) }], new Date());
    expect(r!.map((x) => x.code ?? 'ok')).toEqual(['ok', 'ok', 'ok', 'rate_limit_exceeded', 'rate_limit_exceeded']);
    // The windows follow the operations' clock: all five counted in the same second, refused ones included.
    const [w] = await orm.em.fork().execute<{ count: number }[]>(`select count from rate_window where account_id = ? and kind = 'second'`, [accountId]);
    expect(w!.count).toBe(5);
    await expect(checkRateLimit(orm.em.fork(), accountId, nowMs, { perSecond: 3, perMinute: 1000 })).rejects.toMatchObject({ code: 'rate_limit_exceeded' });
  });

  it("keeps the client's request id with the hold; a replay does not change it", async () => {
    const { accountId, keyId } = await account(orm, 10n);
    const id = randomUUID();
    await applyOps(orm.em.fork(), accountId, [hold(id, keyId, 1, { client_request_id: 'mine-1' } as Partial<MoneyOp>)], new Date());
    await applyOps(orm.em.fork(), accountId, [hold(id, keyId, 1, { client_request_id: 'mine-2' } as Partial<MoneyOp>)], new Date());
    const [row] = await orm.em.fork().execute<{ client_request_id: string }[]>('select client_request_id from hold where request_id = ?', [id]);
    expect(row!.client_request_id).toBe('mine-1');
    await applyOps(orm.em.fork(), accountId, [{ op: 'release', request_id: id }], new Date());
  });

  it('a hold naming an API key that does not exist fails its statement, and nothing of it is written', async () => {
    const { accountId, keyId } = await account(orm, 10n);
    const ok = randomUUID();
    await expect(
      applyBatchNow(orm, [{ accountId, ops: [hold(ok, keyId, 1), hold(randomUUID(), randomUUID(), 1)] }], new Date()),
    ).rejects.toThrow(/no such API key/);
    const rows = await orm.em.fork().execute<unknown[]>('select 1 from hold where request_id = ?', [ok]);
    expect(rows).toHaveLength(0);
    expect(await getBalance(orm.em.fork(), accountId)).toBe(10n);
  });
});
