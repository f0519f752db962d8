import { randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { billingV1 } from '@gw/contracts';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getBalance } from '../src/domain/accounts.ts';
import { checkRateLimit, setAccountRateLimit } from '../src/domain/rate-limit.ts';
import { RequestMoney } from '../src/domain/requests.ts';
import { account, billingOrm } from './support.ts';

const defaults = { perSecond: 5, perMinute: 8 };

describe('per-account rate limits', () => {
  let orm: MikroORM;
  beforeAll(async () => {
    orm = await billingOrm();
  });
  afterAll(() => orm?.close());

  async function outcome(accountId: string, nowMs: number) {
    return checkRateLimit(orm.em.fork(), accountId, nowMs, defaults).then(
      () => 'ok',
      (e: { code: string; details: Record<string, unknown> }) => ({ code: e.code, ...e.details }),
    );
  }

  it('refuses past the per-second limit, then admits in the next second', async () => {
    const { accountId } = await account(orm, 0n);
    const t = 1_800_000_000_000; // whole second
    const seen = await Promise.all(Array.from({ length: 7 }, () => outcome(accountId, t + 100)));
    expect(seen.filter((s) => s === 'ok')).toHaveLength(5);
    expect(seen.find((s) => s !== 'ok')).toEqual({ code: 'rate_limit_exceeded', limit_type: 'per_second', retry_after_seconds: 1 });
    expect(await outcome(accountId, t + 1_100)).toBe('ok');
  });

  it('refuses past the per-minute limit with the seconds left in the minute', async () => {
    const { accountId } = await account(orm, 0n);
    const minute = 1_800_000_040_000 - (1_800_000_040_000 % 60_000);
    for (let i = 0; i < 8; i++) expect(await outcome(accountId, minute + i * 1_000)).toBe('ok');
    expect(await outcome(accountId, minute + 45_500)).toEqual({
      code: 'rate_limit_exceeded',
      limit_type: 'per_minute',
      retry_after_seconds: 15,
    });
    expect(await outcome(accountId, minute + 60_000)).toBe('ok');
  });

  it('past both limits at once, reports the minute and its wait: retrying after one second would be refused again', async () => {
    const { accountId } = await account(orm, 0n);
    const minute = 1_800_000_100_000 - (1_800_000_100_000 % 60_000);
    for (let i = 0; i < 7; i++) expect(await outcome(accountId, minute + i * 1_000)).toBe('ok');
    // The 8th of the minute and the 1st of its second pass; 6 more in that second pass both limits.
    const burst = await Promise.all(Array.from({ length: 7 }, () => outcome(accountId, minute + 10_200)));
    expect(burst.filter((s) => s === 'ok')).toHaveLength(1);
    expect(new Set(burst.filter((s) => s !== 'ok').map((s) => JSON.stringify(s)))).toEqual(
      new Set([JSON.stringify({ code: 'rate_limit_exceeded', limit_type: 'per_minute', retry_after_seconds: 50 })]),
    );
  });

  it('uses the account’s own limits when set, and the defaults again when cleared', async () => {
    const { accountId } = await account(orm, 0n);
    expect(await setAccountRateLimit(orm.em.fork(), accountId, 1, 100, defaults)).toEqual({ perSecond: 1, perMinute: 100 });
    const t = 1_800_000_100_000;
    expect(await outcome(accountId, t)).toBe('ok');
    expect(await outcome(accountId, t + 10)).toMatchObject({ code: 'rate_limit_exceeded', limit_type: 'per_second' });
    expect(await setAccountRateLimit(orm.em.fork(), accountId, 0, 0, defaults)).toEqual({ perSecond: 5, perMinute: 8 });
  });

  it('counts text requests inside Authorize with the same windows, and holds nothing when refused', async () => {
    const { accountId, keyId } = await account(orm, 1_000n);
    const t = 1_800_000_060_000; // a whole minute
    const money = new RequestMoney(orm, { now: () => new Date(t + 200), rateDefaults: defaults });
    const authorize = () =>
      money
        .authorize(create(billingV1.AuthorizeRequestSchema, { requestId: randomUUID(), accountId, keyId, endpoint: 'chat/completions', model: 'm', unit: billingV1.BillingUnit.IMAGE, pricePerUnit: 1n, worstUnits: 1n, checkRateLimit: true }))
        .then(
          () => 'held',
          (e: { code: string; details: Record<string, unknown> }) => ({ code: e.code, ...e.details }),
        );
    const seen = [];
    for (let i = 0; i < 6; i++) seen.push(await authorize());
    expect(seen.filter((s) => s === 'held')).toHaveLength(5);
    expect(seen[5]).toEqual({ code: 'rate_limit_exceeded', limit_type: 'per_second', retry_after_seconds: 1 });
    expect(await getBalance(orm.em.fork(), accountId)).toBe(995n);
    // One window for both paths: the stand-alone check sees the six already counted.
    expect(await outcome(accountId, t + 300)).toEqual({ code: 'rate_limit_exceeded', limit_type: 'per_second', retry_after_seconds: 1 });
  });
});
