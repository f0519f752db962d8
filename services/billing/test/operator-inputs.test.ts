import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, getBalance, topUp } from '../src/domain/accounts.ts';
import { createApiKey, revokeApiKey } from '../src/domain/api-keys.ts';
import { usageOfKey } from '../src/domain/usage.ts';
import { account, billingOrm, expectAuditClean, refusal } from './support.ts';

const INT64_MAX = 9_223_372_036_854_775_807n;

// What the operator CLI and the dashboard send billing: refused with a clear domain error, never
// an internal one, and never reported as done when nothing was done.
describe('operator inputs (real Postgres)', () => {
  let orm: MikroORM;
  beforeAll(async () => {
    orm = await billingOrm();
  });
  afterEach(() => expectAuditClean(orm));
  afterAll(() => orm?.close());

  it('a malformed account or key id names nothing: not_found, not an internal error', async () => {
    const { accountId } = await account(orm, 10n);
    const calls = [
      topUp(orm.em.fork(), 'not-a-uuid', 10n, `r-${randomUUID()}`),
      getBalance(orm.em.fork(), 'not-a-uuid'),
      createApiKey(orm.em.fork(), 'not-a-uuid', 'k', null),
      revokeApiKey(orm.em.fork(), 'not-a-uuid'),
      usageOfKey(orm.em.fork(), 'not-a-uuid', 10),
    ];
    for (const call of calls) expect((await refusal(call)).code).toBe('not_found');
    expect(await getBalance(orm.em.fork(), accountId)).toBe(10n);
  });

  it('a top-up past the largest balance is invalid_request, and moves nothing', async () => {
    const { accountId } = await account(orm, 100n);
    const err = await refusal(topUp(orm.em.fork(), accountId, INT64_MAX, `r-${randomUUID()}`));
    expect([err.code, err.message]).toEqual(['invalid_request', 'The top-up would take the balance past the largest amount a wallet holds.']);
    expect(await getBalance(orm.em.fork(), accountId)).toBe(100n);
  });

  it('a top-up reference repeated moves nothing; used for another account or amount, it is refused, not reported done', async () => {
    const a = await account(orm, 0n);
    const b = await account(orm, 0n);
    const ref = `invoice-${randomUUID()}`;
    expect(await topUp(orm.em.fork(), a.accountId, 100n, ref)).toEqual({ balance: 100n, applied: true });
    expect(await topUp(orm.em.fork(), a.accountId, 100n, ref)).toEqual({ balance: 100n, applied: false });
    for (const [accountId, credits] of [[b.accountId, 100n], [a.accountId, 50n]] as const) {
      const err = await refusal(topUp(orm.em.fork(), accountId, credits, ref));
      expect([err.code, err.message]).toEqual(['invalid_request', `The reference ${JSON.stringify(ref)} was used for another top-up (100 credits to account ${a.accountId}).`]);
    }
    expect([await getBalance(orm.em.fork(), a.accountId), await getBalance(orm.em.fork(), b.accountId)]).toEqual([100n, 0n]);
  });

  it('account and key names: trimmed, at most 200 characters, no control or format characters', async () => {
    const { accountId } = await account(orm, 0n);
    for (const name of ['a\u001b[31mred', 'two\nlines', 'rtl\u202Eevil', 'x'.repeat(201)]) {
      expect((await refusal(createAccount(orm.em.fork(), name))).code).toBe('invalid_request');
      expect((await refusal(createApiKey(orm.em.fork(), accountId, name, null))).code).toBe('invalid_request');
    }
    expect((await refusal(createAccount(orm.em.fork(), '   '))).message).toBe('An account needs a name.');
    const fine = await createAccount(orm.em.fork(), '  Công ty Ánh Dương 🌅 ');
    const [row] = await orm.em.fork().execute<{ name: string }[]>('select name from account where id = ?', [fine]);
    expect(row!.name).toBe('Công ty Ánh Dương 🌅');
    await expect(createApiKey(orm.em.fork(), accountId, '', null)).resolves.toMatchObject({ keyId: expect.any(String) }); // a key may be unnamed
  });
});
