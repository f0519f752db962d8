import { randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { billingV1, type CallContext } from '@gw/contracts';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RequestMoney } from '../src/domain/requests.ts';
import { accountHandler } from '../src/grpc/account.handler.ts';
import { billingAdminHandler } from '../src/grpc/billing-admin.handler.ts';
import { account, billingOrm, expectAuditClean, refusal } from './support.ts';

const { IMAGE, MILLION_TOKENS } = billingV1.BillingUnit;
const ctx: CallContext = { metadata: new grpc.Metadata(), signal: new AbortController().signal, deadline: Infinity, draining: new AbortController().signal, reportUnexpected: () => {} };

/**
 * The activity log on billing's real schema: one row per hold, how it ended, what it cost in the
 * end, its latency from hold to settlement, the client's own request id; filtered and paged.
 */
describe('ListActivity and client request ids on real Postgres', () => {
  let orm: MikroORM;
  let clock = new Date();
  let money: RequestMoney;
  let rpc: ReturnType<typeof accountHandler> & ReturnType<typeof billingAdminHandler>;
  let a: { accountId: string; keyId: string };
  let b: { accountId: string; keyId: string };
  const ids: Record<string, string> = {};

  /** A request held at `at`, ended `ms` later as `end` says. */
  async function request(name: string, at: string, end: 'settle' | 'release' | 'open' | 'refund', opts: { ms?: number; client?: string; image?: boolean } = {}): Promise<void> {
    clock = new Date(at);
    const requestId = randomUUID();
    ids[name] = requestId;
    await money.authorize(
      create(billingV1.AuthorizeRequestSchema, {
        requestId, accountId: a.accountId, keyId: a.keyId, endpoint: opts.image ? 'images/generations' : 'chat/completions', model: opts.image ? 'image-a' : 'text-a',
        unit: opts.image ? IMAGE : MILLION_TOKENS, pricePerUnit: opts.image ? 100n : 1_000_000n, worstUnits: opts.image ? 2n : 100n, text: !opts.image, clientRequestId: opts.client ?? '',
      }),
    );
    if (end === 'open') return;
    clock = new Date(clock.getTime() + (opts.ms ?? 250));
    if (end === 'release') {
      await money.release(create(billingV1.ReleaseRequestSchema, { requestId, accountId: a.accountId }));
      return;
    }
    await money.settle(create(billingV1.SettleRequestSchema, { requestId, accountId: a.accountId, units: opts.image ? 1n : 10n, inputTokens: 4n, outputTokens: 6n }));
    if (end === 'refund') await money.refund(create(billingV1.RefundRequestSchema, { requestId, accountId: a.accountId }));
  }

  type Filter = { keyId?: string; model?: string; status?: string; fromDate?: string; toDate?: string; timeZone?: string; cursor?: string; limit?: number };
  const list = async (q: Filter = {}) =>
    (await rpc.listActivity(create(billingV1.ListActivityRequestSchema, { accountId: a.accountId, timeZone: 'UTC', ...q }), ctx)) as billingV1.ListActivityResponse;

  beforeAll(async () => {
    orm = await billingOrm();
    money = new RequestMoney(orm, { now: () => clock });
    const deps = { orm, rateDefaults: { perSecond: 1000, perMinute: 100_000 }, now: () => new Date() };
    rpc = { ...accountHandler(deps), ...billingAdminHandler(deps) };
    a = await account(orm, 1_000_000n);
    b = await account(orm, 1_000_000n);
    await request('settled', '2026-03-01T10:00:00Z', 'settle', { ms: 1500, client: 'my-trace-1' });
    await request('failed', '2026-03-01T11:00:00Z', 'release', { ms: 40 });
    await request('image', '2026-03-02T09:00:00Z', 'settle', { image: true });
    await request('refunded', '2026-03-03T09:00:00Z', 'refund');
    await request('open', '2026-03-04T09:00:00Z', 'open');
  });
  afterAll(async () => {
    await expectAuditClean(orm);
    await orm?.close();
  });

  it('lists every request newest first with its status, final cost, latency and ids', async () => {
    const { items, nextCursor } = await list();
    expect(nextCursor).toBe('');
    expect(items.map((i) => [i.requestId, i.status, i.credits, i.latencyMs, i.clientRequestId])).toEqual([
      [ids.open, 'in_progress', 100n, 0n, ''],
      [ids.refunded, 'refunded', 0n, 250n, ''],
      [ids.image, 'succeeded', 100n, 250n, ''],
      [ids.failed, 'failed', 0n, 40n, ''],
      [ids.settled, 'succeeded', 10n, 1500n, 'my-trace-1'],
    ]);
    expect(items[4]).toMatchObject({ keyId: a.keyId, endpoint: 'chat/completions', model: 'text-a', inputTokens: 4n, outputTokens: 6n, units: 10n });
    expect(items[4]!.createdAtUnixMs).toBe(BigInt(Date.parse('2026-03-01T10:00:00Z')));
  });

  it('pages by cursor and filters by status, model, key and days', async () => {
    const first = await list({ limit: 2 });
    const second = await list({ limit: 2, cursor: first.nextCursor });
    const third = await list({ limit: 2, cursor: second.nextCursor });
    expect([...first.items, ...second.items, ...third.items].map((i) => i.requestId)).toEqual([ids.open, ids.refunded, ids.image, ids.failed, ids.settled]);
    expect(third.nextCursor).toBe('');
    expect((await list({ status: 'succeeded' })).items.map((i) => i.requestId)).toEqual([ids.image, ids.settled]);
    expect((await list({ status: 'failed' })).items.map((i) => i.requestId)).toEqual([ids.failed]);
    expect((await list({ model: 'image-a' })).items.map((i) => i.requestId)).toEqual([ids.image]);
    expect((await list({ keyId: a.keyId, fromDate: '2026-03-02', toDate: '2026-03-03' })).items.map((i) => i.requestId)).toEqual([ids.refunded, ids.image]);
    // Days are the named zone's: 2 March in Pacific/Kiritimati (UTC+14) runs from 1 March 10:00 UTC to 2 March 10:00 UTC.
    expect((await list({ fromDate: '2026-03-02', toDate: '2026-03-02', timeZone: 'Pacific/Kiritimati' })).items.map((i) => i.requestId)).toEqual([ids.image, ids.failed, ids.settled]);
  });

  it("refuses another account's key, a cursor of another account, an unknown status", async () => {
    expect((await refusal(list({ keyId: b.keyId }))).code).toBe('not_found');
    expect((await refusal(rpc.listActivity(create(billingV1.ListActivityRequestSchema, { accountId: b.accountId, cursor: ids.open! }), ctx))).code).toBe('invalid_request');
    expect((await refusal(list({ status: 'lost' }))).message).toMatch(/status is one of succeeded, failed, refunded, in_progress/);
    expect(((await rpc.listActivity(create(billingV1.ListActivityRequestSchema, { accountId: b.accountId }), ctx)) as billingV1.ListActivityResponse).items).toEqual([]);
  });

  it("usage records carry the client's request id beside ours", async () => {
    const { records } = (await rpc.getUsage(create(billingV1.GetUsageRequestSchema, { keyId: a.keyId, limit: 10 }), ctx)) as billingV1.GetUsageResponse;
    expect(records.find((r) => r.requestId === ids.settled)?.clientRequestId).toBe('my-trace-1');
    expect(records.find((r) => r.requestId === ids.image)?.clientRequestId).toBe('');
  });
});
