import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { getBalance, topUp } from '../src/domain/accounts.ts';
import { applyBatchNow, MoneyBatcher, type AccountOps, type MoneyOp } from '../src/domain/money.ts';
import { account, billingOrm, expectAuditClean } from './support.ts';

const hold = (requestId: string, keyId: string, amount: number): Extract<MoneyOp, { op: 'authorize' }> => ({
  op: 'authorize',
  request_id: requestId,
  key_id: keyId,
  amount: String(amount),
  worst_tokens: '0',
  text: false,
  endpoint: 'images/generations',
  model: 'm',
  unit: 'image',
  price: '1',
});
/** Settles `images` images of a hold priced 1 credit an image: a charge of `images`. */
const settle = (requestId: string, images: number): Extract<MoneyOp, { op: 'settle' }> => ({
  op: 'settle',
  request_id: requestId,
  units: String(images),
  input_tokens: '0',
  output_tokens: '0',
  reconcile: false,
});

/** How many of the promises settled within `ms`. */
async function settledWithin(promises: Promise<unknown>[], ms: number): Promise<number> {
  let done = 0;
  for (const p of promises) void p.then(() => done++, () => done++);
  await new Promise((r) => setTimeout(r, ms));
  return done;
}

describe('the money batcher: many accounts in one transaction, on real Postgres', () => {
  let orm: MikroORM;
  /** Every statement the batchers under test sent: the accounts of each. */
  let statements: string[][];
  const counted = (groups: AccountOps[], bounded: boolean) => {
    statements.push(groups.map((g) => g.accountId));
    return applyBatchNow(orm, groups, new Date(), bounded);
  };

  beforeAll(async () => {
    orm = await billingOrm();
  });
  afterEach(() => expectAuditClean(orm));
  afterAll(() => orm?.close());

  it('applies what queued behind a lone operation together: one statement for twenty accounts, each exact', async () => {
    statements = [];
    const batcher = new MoneyBatcher(counted, { lanes: 1 });
    const accounts = await Promise.all(Array.from({ length: 20 }, () => account(orm, 1_000n)));
    const requests = accounts.map((a) => ({ ...a, requestId: randomUUID() }));
    const held = await Promise.all(requests.map((r, i) => batcher.submit(r.accountId, hold(r.requestId, r.keyId, 100 + i))));
    expect(held.map((r) => r.balance_after)).toEqual(requests.map((_, i) => String(900 - i)));
    // The first went alone, at once; the other nineteen queued behind it and went as one.
    expect(statements.map((s) => s.length)).toEqual([1, 19]);

    const settled = await Promise.all(requests.map((r, i) => batcher.submit(r.accountId, settle(r.requestId, i))));
    expect(settled.map((r) => [r.credit_charged, r.balance_after])).toEqual(requests.map((_, i) => [String(i), String(1_000 - i)]));
    for (const [i, r] of requests.entries()) expect(await getBalance(orm.em.fork(), r.accountId)).toBe(1_000n - BigInt(i));
  });

  it('an operation sees what the operations before it in its batch did: a hold sent twice, a reconciliation opened, a key just used', async () => {
    const { accountId, keyId } = await account(orm, 1_000n);
    const [first, again, text] = [randomUUID(), randomUUID(), randomUUID()];
    await applyBatchNow(orm, [{ accountId, ops: [{ ...hold(first, keyId, 10), unit: 'million_tokens', text: true }] }], new Date());
    const lastUsed = async () => (await orm.em.fork().execute<{ t: string | null }[]>('select last_used_at as t from api_key where id = ?', [keyId]))[0]!.t;
    const used = await lastUsed();
    expect(used).toBeTruthy();
    const [results] = await applyBatchNow(
      orm,
      [
        {
          accountId,
          ops: [
            hold(again, keyId, 100),
            hold(again, keyId, 100), // the same request sent twice, both in this batch
            { ...settle(first, 5), reconcile: true }, // succeeded without usage: the minimum, and the key awaits reconciliation
            { ...hold(text, keyId, 1), text: true },
          ],
        },
      ],
      new Date(),
    );
    expect(results).toEqual([
      { ok: true, held: '100', balance_after: '890' },
      { ok: true, replay: true, held: '100', balance_after: '890', code: null },
      { ok: true, credit_charged: '1', balance_after: '899', unit: 'million_tokens' },
      { ok: false, code: 'api_key_quota_reconciliation_required' },
    ]);
    expect(await getBalance(orm.em.fork(), accountId)).toBe(899n);
    // Last use has a minute's precision: the batch a moment later did not write it again.
    expect(await lastUsed()).toEqual(used);
  });

  it("keeps each account's operations in the order they came, across lanes", async () => {
    statements = [];
    const batcher = new MoneyBatcher(counted, { lanes: 4 });
    const { accountId, keyId } = await account(orm, 10_000n);
    const ids = Array.from({ length: 30 }, () => randomUUID());
    // Each settle is submitted right behind its hold, without waiting: it must never come first.
    const results = await Promise.all(ids.flatMap((id) => [batcher.submit(accountId, hold(id, keyId, 50)), batcher.submit(accountId, settle(id, 10))]));
    expect(results.every((r) => r.ok)).toBe(true);
    expect(results.filter((_, i) => i % 2 === 1).map((r) => r.credit_charged)).toEqual(ids.map(() => '10'));
    expect(await getBalance(orm.em.fork(), accountId)).toBe(10_000n - 300n);
    // An account is in one lane at a time: its statements never overlapped, so they were serial.
    expect(statements.length).toBeGreaterThan(1);
  });

  it("one account's failure is not another's: a batch that fails as a whole is tried account by account", async () => {
    statements = [];
    const splits: number[] = [];
    const batcher = new MoneyBatcher(counted, { lanes: 1, onSplit: (_err, accounts) => splits.push(accounts) });
    const good = await Promise.all(Array.from({ length: 3 }, () => account(orm, 500n)));
    const blocker = await account(orm, 500n);
    const first = batcher.submit(blocker.accountId, hold(randomUUID(), blocker.keyId, 1));
    const outcomes = await Promise.allSettled([
      ...good.map((a) => batcher.submit(a.accountId, hold(randomUUID(), a.keyId, 200))),
      batcher.submit('not-an-account-id', hold(randomUUID(), good[0]!.keyId, 1)),
    ]);
    await first;
    expect(outcomes.slice(0, 3).map((o) => o.status === 'fulfilled' && o.value.balance_after)).toEqual(['300', '300', '300']);
    expect(outcomes[3]!.status).toBe('rejected');
    // The batch of four failed on the bad id, and said so once; then each account went alone.
    expect(statements.map((s) => s.length)).toEqual([1, 4, 1, 1, 1, 1]);
    expect(splits).toEqual([4]);
  });

  /** Another writer (a top-up, an event handler, a stuck transaction) holding wallets locked. */
  async function lockWallets(accountIds: string[]): Promise<Client> {
    const locker = new Client({ connectionString: inject('databaseUrl'), options: `-c search_path=${orm.config.get('schema') as string}` });
    await locker.connect();
    await locker.query('begin');
    await locker.query('select 1 from wallet where account_id = any($1::uuid[]) for update', [accountIds]);
    return locker;
  }

  it('wallets locked by another writer delay only their own accounts: not the lanes, not the accounts batched with them', async () => {
    statements = [];
    const batcher = new MoneyBatcher(counted);
    const locked = await Promise.all([account(orm, 1_000n), account(orm, 1_000n)]);
    const others = await Promise.all(Array.from({ length: 10 }, () => account(orm, 1_000n)));
    const locker = await lockWallets(locked.map((a) => a.accountId));
    // The two locked accounts take both lanes first; the others queue behind them, in one batch.
    const slow = locked.map((a) => batcher.submit(a.accountId, hold(randomUUID(), a.keyId, 1)));
    const fast = others.map((a) => batcher.submit(a.accountId, hold(randomUUID(), a.keyId, 1)));
    const answered = await settledWithin(fast, 1_500);
    // And a batch that holds a locked account with others: they are answered, and their wallets
    // are not left locked (a top-up of one goes through).
    const mixed = [locked[0]!, ...others.slice(0, 4)].map((a) => batcher.submit(a.accountId, hold(randomUUID(), a.keyId, 1)));
    const mixedAnswered = await settledWithin(mixed.slice(1), 1_000);
    const topUpDone = await settledWithin([topUp(orm.em.fork(), others[0]!.accountId, 5n, randomUUID())], 1_000);
    const slowAnswered = await settledWithin(slow, 0);
    await locker.query('rollback');
    await locker.end();
    await Promise.all([...slow, ...fast, ...mixed]);
    expect({ answered, mixedAnswered, topUpDone, slowAnswered }).toEqual({ answered: 10, mixedAnswered: 4, topUpDone: 1, slowAnswered: 0 });
  });

  it('two replicas batching the same accounts in any order neither deadlock nor lose a credit', async () => {
    const failures: unknown[] = [];
    const apply = (groups: AccountOps[], bounded: boolean) =>
      applyBatchNow(orm, groups, new Date(), bounded).catch((err: unknown) => Promise.reject(failures.push(err) && err));
    const replicas = [new MoneyBatcher(apply), new MoneyBatcher(apply)];
    const accounts = await Promise.all(Array.from({ length: 8 }, () => account(orm, 100_000n)));
    const charged = new Map(accounts.map((a) => [a.accountId, 0]));
    await Promise.all(
      Array.from({ length: 64 }, async (_, worker) => {
        const replica = replicas[worker % 2]!;
        for (let i = 0; i < 10; i++) {
          const a = accounts[Math.floor(Math.random() * accounts.length)]!;
          const id = randomUUID();
          const h = await replica.submit(a.accountId, hold(id, a.keyId, 30));
          expect(h.ok).toBe(true);
          const s = await replica.submit(a.accountId, settle(id, 7));
          expect(s.credit_charged).toBe('7');
          charged.set(a.accountId, charged.get(a.accountId)! + 7);
        }
      }),
    );
    for (const a of accounts) expect(await getBalance(orm.em.fork(), a.accountId)).toBe(100_000n - BigInt(charged.get(a.accountId)!));
    // Not one batch failed (a deadlock would have, and then gone account by account).
    expect(failures).toEqual([]);
  });
});
