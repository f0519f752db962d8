import { randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { billingV1, type CallContext } from '@gw/contracts';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../src/domain/api-keys.ts';
import { RequestMoney } from '../src/domain/requests.ts';
import { accountHandler } from '../src/grpc/account.handler.ts';
import { account, billingOrm, expectAuditClean, refusal } from './support.ts';

const { IMAGE, MILLION_TOKENS, SECOND } = billingV1.BillingUnit;
const { DAY, MODEL, KEY } = billingV1.UsageGroupBy;
const ctx: CallContext = { metadata: new grpc.Metadata(), signal: new AbortController().signal, deadline: Infinity, draining: new AbortController().signal, reportUnexpected: () => {} };

/**
 * The dashboard rpcs on billing's real schema: reports aggregated by Postgres in the account's
 * time zone, the ledger as the owner reads it, and key ownership (another account's key is
 * `not_found`, exactly like a missing one).
 */
describe('dashboard rpcs on real Postgres', () => {
  let orm: MikroORM;
  let clock = new Date();
  let money: RequestMoney;
  let rpc: ReturnType<typeof accountHandler>;
  let a: { accountId: string; keyId: string };
  let a2: string;
  let b: { accountId: string; keyId: string };

  /** One settled request at `at` (or left open with `open`). */
  async function request(
    accountId: string,
    keyId: string,
    at: string,
    opts: { model?: string; unit?: billingV1.BillingUnit; units?: bigint; price?: bigint; open?: boolean; release?: boolean } = {},
  ): Promise<string> {
    clock = new Date(at);
    const requestId = randomUUID();
    const unit = opts.unit ?? MILLION_TOKENS;
    const price = opts.price ?? 1_000_000n;
    await money.authorize(
      create(billingV1.AuthorizeRequestSchema, {
        requestId, accountId, keyId, endpoint: 'chat/completions', model: opts.model ?? 'text-a', unit, pricePerUnit: price, worstUnits: unit === MILLION_TOKENS ? 100n : (opts.units ?? 1n), text: unit === MILLION_TOKENS,
      }),
    );
    if (opts.open) return requestId;
    if (opts.release) {
      await money.release(create(billingV1.ReleaseRequestSchema, { requestId, accountId }));
      return requestId;
    }
    await money.settle(
      create(billingV1.SettleRequestSchema, { requestId, accountId, units: opts.units ?? 10n, inputTokens: 4n, outputTokens: 6n }),
    );
    return requestId;
  }

  beforeAll(async () => {
    orm = await billingOrm();
    money = new RequestMoney(orm, { now: () => clock });
    rpc = accountHandler({ orm, now: () => new Date() });
    a = await account(orm, 10_000n);
    a2 = (await createApiKey(orm.em.fork(), a.accountId, 'second', null)).keyId;
    b = await account(orm, 10_000n);
    // Account A (Asia/Ho_Chi_Minh, UTC+7): 23:30 on 1 March and 00:30 on 2 March local time.
    await request(a.accountId, a.keyId, '2025-03-01T16:30:00Z');
    await request(a.accountId, a.keyId, '2025-03-01T17:30:00Z', { units: 20n });
    await request(a.accountId, a2, '2025-03-03T05:00:00Z', { model: 'image-b', unit: IMAGE, units: 2n, price: 500n });
    await request(a.accountId, a2, '2025-03-04T05:00:00Z', { model: 'video-c', unit: SECOND, units: 4n, price: 100n });
    await request(a.accountId, a.keyId, '2025-03-05T05:00:00Z', { release: true });
    // Account B uses the same days: never part of A's report.
    await request(b.accountId, b.keyId, '2025-03-02T05:00:00Z', { units: 999n });
  });
  afterAll(async () => {
    await expectAuditClean(orm);
    await orm?.close();
  });

  it('GetAccount: name and time zone; unknown or malformed ids are not_found', async () => {
    const got = await rpc.getAccount(create(billingV1.GetAccountRequestSchema, { accountId: a.accountId }), ctx);
    expect(got).toMatchObject({ accountId: a.accountId, name: 'test', timeZone: 'Asia/Ho_Chi_Minh' });
    expect((await refusal(rpc.getAccount(create(billingV1.GetAccountRequestSchema, { accountId: randomUUID() }), ctx))).code).toBe('not_found');
    expect((await refusal(rpc.getAccount(create(billingV1.GetAccountRequestSchema, { accountId: 'nope' }), ctx))).code).toBe('not_found');
  });

  it('UsageReport by day: calendar days of the account\'s zone, empty days included, totals', async () => {
    const r = await rpc.usageReport(
      create(billingV1.UsageReportRequestSchema, { accountId: a.accountId, fromDate: '2025-02-28', toDate: '2025-03-05', groupBy: DAY }),
      ctx,
    );
    expect(r.timeZone).toBe('Asia/Ho_Chi_Minh');
    const days = Object.fromEntries((r.rows ?? []).map((row) => [row.group, row.totals]));
    expect(Object.keys(days)).toEqual(['2025-02-28', '2025-03-01', '2025-03-02', '2025-03-03', '2025-03-04', '2025-03-05']);
    expect(days['2025-02-28']).toMatchObject({ requests: 0n, credits: 0n });
    expect(days['2025-03-01']).toMatchObject({ requests: 1n, inputTokens: 4n, outputTokens: 6n, totalTokens: 10n, credits: 10n });
    expect(days['2025-03-02']).toMatchObject({ requests: 1n, totalTokens: 20n, credits: 20n });
    expect(days['2025-03-03']).toMatchObject({ requests: 1n, images: 2n, credits: 1_000n });
    expect(days['2025-03-04']).toMatchObject({ requests: 1n, videoSeconds: 4n, credits: 400n });
    expect(days['2025-03-05']).toMatchObject({ requests: 0n }); // a released request is not usage
    expect(r.totals).toMatchObject({ requests: 4n, totalTokens: 30n, images: 2n, videoSeconds: 4n, credits: 1_430n });
  });

  it('UsageReport in another zone moves requests across midnight', async () => {
    const r = await rpc.usageReport(
      create(billingV1.UsageReportRequestSchema, { accountId: a.accountId, fromDate: '2025-03-01', toDate: '2025-03-02', groupBy: DAY, timeZone: 'UTC' }),
      ctx,
    );
    expect((r.rows ?? []).map((row) => [row.group, row.totals?.requests])).toEqual([
      ['2025-03-01', 2n],
      ['2025-03-02', 0n],
    ]);
  });

  it('UsageReport by model and by key, and for one key', async () => {
    const base = { accountId: a.accountId, fromDate: '2025-03-01', toDate: '2025-03-31' };
    const byModel = await rpc.usageReport(create(billingV1.UsageReportRequestSchema, { ...base, groupBy: MODEL }), ctx);
    expect((byModel.rows ?? []).map((row) => [row.group, row.totals?.credits])).toEqual([
      ['image-b', 1_000n],
      ['video-c', 400n],
      ['text-a', 30n],
    ]);
    const byKey = await rpc.usageReport(create(billingV1.UsageReportRequestSchema, { ...base, groupBy: KEY }), ctx);
    expect((byKey.rows ?? []).map((row) => [row.group, row.totals?.requests])).toEqual([
      [a2, 2n],
      [a.keyId, 2n],
    ]);
    const oneKey = await rpc.usageReport(create(billingV1.UsageReportRequestSchema, { ...base, keyId: a.keyId, groupBy: MODEL }), ctx);
    expect(oneKey.totals).toMatchObject({ requests: 2n, credits: 30n });
  });

  it('UsageReport refuses another account\'s key, bad dates, long periods and unknown zones', async () => {
    const base = { accountId: a.accountId, fromDate: '2025-03-01', toDate: '2025-03-31', groupBy: DAY };
    const report = (init: Partial<typeof base> & { keyId?: string; timeZone?: string }) =>
      refusal(rpc.usageReport(create(billingV1.UsageReportRequestSchema, { ...base, ...init }), ctx));
    expect((await report({ keyId: b.keyId })).code).toBe('not_found');
    expect((await report({ keyId: 'not-a-uuid' })).code).toBe('not_found');
    expect((await report({ fromDate: '2025-02-30' })).code).toBe('invalid_request');
    expect((await report({ fromDate: '2025-04-01' })).code).toBe('invalid_request');
    expect((await report({ fromDate: '2024-01-01', toDate: '2025-01-01' })).code).toBe('invalid_request'); // 367 days
    expect((await report({ timeZone: 'Mars/Olympus' })).code).toBe('invalid_request');
  });

  it('ListLedger: one charge per request at what it cost, open holds, top-ups, refunds; paged', async () => {
    const refunded = await request(a.accountId, a2, '2025-03-06T05:00:00Z', { model: 'video-c', unit: SECOND, units: 4n, price: 100n });
    await money.refund(create(billingV1.RefundRequestSchema, { requestId: refunded, accountId: a.accountId }));
    const open = await request(a.accountId, a.keyId, '2025-03-07T05:00:00Z', { open: true });

    const all = await rpc.listLedger(create(billingV1.ListLedgerRequestSchema, { accountId: a.accountId, limit: 200 }), ctx);
    expect(all.nextCursor).toBe('');
    expect((all.items ?? []).map((e) => [e.kind, e.amount, e.model])).toEqual([
      ['hold', -100n, 'text-a'],
      ['refund', 400n, 'video-c'],
      ['charge', -400n, 'video-c'],
      ['charge', -400n, 'video-c'],
      ['charge', -1_000n, 'image-b'],
      ['charge', -20n, 'text-a'],
      ['charge', -10n, 'text-a'],
      ['top_up', 10_000n, ''],
    ]);
    expect((all.items ?? [])[0]?.reference).toBe(open);
    expect((all.items ?? [])[1]?.reference).toBe(refunded);
    expect((all.items ?? []).at(-1)?.reference).toBe(`seed-${a.accountId}`);
    // With no request in flight between them, each balance follows from the one before.
    const chronological = (all.items ?? []).toReversed().slice(0, -1);
    for (let i = 1; i < chronological.length; i++) {
      expect(chronological[i]!.balanceAfter).toBe((chronological[i - 1]!.balanceAfter ?? 0n) + (chronological[i]!.amount ?? 0n));
    }
    const wallet = await rpc.getWallet(create(billingV1.GetWalletRequestSchema, { accountId: a.accountId }), ctx);
    expect((all.items ?? [])[0]?.balanceAfter).toBe(wallet.balance);

    const pages: string[][] = [];
    let cursor = '';
    do {
      const page = await rpc.listLedger(create(billingV1.ListLedgerRequestSchema, { accountId: a.accountId, cursor, limit: 3 }), ctx);
      pages.push((page.items ?? []).map((e) => e.entryId ?? ''));
      cursor = page.nextCursor ?? '';
    } while (cursor !== '');
    expect(pages.map((p) => p.length)).toEqual([3, 3, 2]);
    expect(pages.flat()).toEqual((all.items ?? []).map((e) => e.entryId));
    // A cursor past int64 is not a ledger position (it reached the database as an error before).
    await expect(rpc.listLedger(create(billingV1.ListLedgerRequestSchema, { accountId: a.accountId, cursor: '9999999999999999999', limit: 3 }), ctx)).rejects.toMatchObject({ code: 'invalid_request' });

    await money.settle(create(billingV1.SettleRequestSchema, { requestId: open, accountId: a.accountId, units: 5n }));
    const after = await rpc.listLedger(create(billingV1.ListLedgerRequestSchema, { accountId: a.accountId, limit: 2 }), ctx);
    expect((after.items ?? [])[0]).toMatchObject({ kind: 'charge', amount: -5n, reference: open });
    expect((after.items ?? []).some((e) => e.kind === 'hold')).toBe(false);
  });

  const ledgerPage = (init: { accountId?: string; cursor?: string; limit?: number }) =>
    rpc.listLedger(create(billingV1.ListLedgerRequestSchema, { accountId: a.accountId, ...init }), ctx);

  it('ListLedger refuses bad cursors and page sizes; another account sees only its own entries', async () => {
    expect((await refusal(ledgerPage({ cursor: 'abc' }))).code).toBe('invalid_request');
    expect((await refusal(ledgerPage({ limit: 201 }))).code).toBe('invalid_request');
    const theirs = await ledgerPage({ accountId: b.accountId });
    expect((theirs.items ?? []).map((e) => e.kind)).toEqual(['charge', 'top_up']);
  });

  it('key details: last use and limits; ownership enforced on every key rpc', async () => {
    await rpc.setAccountKeyLimit(
      create(billingV1.SetAccountKeyLimitRequestSchema, { accountId: a.accountId, keyId: a2, limitType: 'spending', period: 'daily', value: 5_000n }),
      ctx,
    );
    const keys = (await rpc.listKeyDetails(create(billingV1.ListKeyDetailsRequestSchema, { accountId: a.accountId }), ctx)).keys ?? [];
    expect(keys.map((k) => k.info?.keyId).sort()).toEqual([a.keyId, a2].sort());
    const second = keys.find((k) => k.info?.keyId === a2)!;
    expect(second.info).toMatchObject({ name: 'second', accountId: a.accountId, revokedAtUnixMs: 0n });
    expect(second.lastUsedAtUnixMs).toBeGreaterThan(0n);
    expect(second.limits).toEqual([expect.objectContaining({ limitType: 'spending', period: 'daily', value: 5_000n })]);

    // Account B acting on A's key: not_found every time, and nothing changes.
    const asB = { accountId: b.accountId, keyId: a2 };
    const refusals = await Promise.all([
      refusal(rpc.getKeyDetails(create(billingV1.GetKeyDetailsRequestSchema, asB), ctx)),
      refusal(rpc.revokeAccountKey(create(billingV1.RevokeAccountKeyRequestSchema, asB), ctx)),
      refusal(rpc.setAccountKeyLimit(create(billingV1.SetAccountKeyLimitRequestSchema, { ...asB, limitType: 'requests', period: 'daily', value: 1n }), ctx)),
      refusal(rpc.clearAccountKeyLimit(create(billingV1.ClearAccountKeyLimitRequestSchema, { ...asB, limitType: 'spending', period: 'daily' }), ctx)),
      refusal(rpc.setKeyExpiry(create(billingV1.SetKeyExpiryRequestSchema, { ...asB, expiresAtUnixMs: BigInt(Date.now() + 3600_000) }), ctx)),
    ]);
    expect(refusals.map((e) => e.code)).toEqual(['not_found', 'not_found', 'not_found', 'not_found', 'not_found']);
    const unchanged = await rpc.getKeyDetails(create(billingV1.GetKeyDetailsRequestSchema, { accountId: a.accountId, keyId: a2 }), ctx);
    expect(unchanged.key?.info).toMatchObject({ revokedAtUnixMs: 0n, expiresAtUnixMs: 0n });
    expect(unchanged.key?.limits).toHaveLength(1);
    const bKeys = (await rpc.listKeyDetails(create(billingV1.ListKeyDetailsRequestSchema, { accountId: b.accountId }), ctx)).keys ?? [];
    expect(bKeys.map((k) => k.info?.keyId)).toEqual([b.keyId]);
  });

  it('SetKeyExpiry sets and clears a future expiry; ClearAccountKeyLimit and RevokeAccountKey work on own keys', async () => {
    const own = { accountId: a.accountId, keyId: a2 };
    const later = BigInt(Date.now() + 24 * 3600_000);
    const set = await rpc.setKeyExpiry(create(billingV1.SetKeyExpiryRequestSchema, { ...own, expiresAtUnixMs: later }), ctx);
    expect(set.key?.info?.expiresAtUnixMs).toBe(later);
    expect((await refusal(rpc.setKeyExpiry(create(billingV1.SetKeyExpiryRequestSchema, { ...own, expiresAtUnixMs: BigInt(Date.now() - 1000) }), ctx))).code).toBe(
      'invalid_request',
    );
    const cleared = await rpc.setKeyExpiry(create(billingV1.SetKeyExpiryRequestSchema, { ...own, expiresAtUnixMs: 0n }), ctx);
    expect(cleared.key?.info?.expiresAtUnixMs).toBe(0n);
    const limits = await rpc.clearAccountKeyLimit(create(billingV1.ClearAccountKeyLimitRequestSchema, { ...own, limitType: 'spending', period: 'daily' }), ctx);
    expect(limits.limits).toEqual([]);
    const revoked = await rpc.revokeAccountKey(create(billingV1.RevokeAccountKeyRequestSchema, own), ctx);
    expect(revoked.revokedAtUnixMs).toBeGreaterThan(0n);
    expect((await refusal(rpc.setKeyExpiry(create(billingV1.SetKeyExpiryRequestSchema, { ...own, expiresAtUnixMs: later }), ctx))).code).toBe('invalid_request');
  });
});
