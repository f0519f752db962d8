import type { MessageInitShape } from '@bufbuild/protobuf';
import { billingV1, serveExchange, type MethodsOf, type ServiceImpl } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { MikroORM } from '@mikro-orm/postgresql';
import { createAccount, getBalance, topUp } from '../domain/accounts.ts';
import { createApiKey, listApiKeys, lookupApiKey, revokeApiKey } from '../domain/api-keys.ts';
import { auditLedger } from '../domain/audit.ts';
import { clearKeyLimit, setKeyLimit, type KeyLimitRow } from '../domain/key-limits.ts';
import { checkRateLimit, setAccountRateLimit, type RateDefaults } from '../domain/rate-limit.ts';
import { listReconciliations, resolveReconciliation } from '../domain/reconciliation.ts';
import type { RequestMoney } from '../domain/requests.ts';
import { renewLease } from '../domain/hold-sweeper.ts';
import { getSwitches, setSwitch } from '../domain/switches.ts';
import { usageOfKey } from '../domain/usage.ts';
import {
  clearAccountKeyLimit,
  keyDetails,
  listKeyDetails,
  revokeAccountKey,
  setAccountKeyLimit,
  setKeyExpiry,
  type KeyDetailsRow,
} from '../domain/account-keys.ts';
import { getAccount, listAccounts } from '../domain/account-profile.ts';
import { listLedger } from '../domain/ledger-history.ts';
import { listActivity } from '../domain/activity.ts';
import { usageReport, type UsageGroup, type UsageSums } from '../domain/usage-report.ts';

const ms = (d: Date | null | undefined): bigint => (d ? BigInt(new Date(d).getTime()) : 0n);
const limits = (rows: KeyLimitRow[]) => rows.map((r) => ({ limitType: r.limit_type, period: r.period, value: BigInt(r.value) }));
const details = (k: KeyDetailsRow) => ({
  info: {
    keyId: k.id,
    accountId: k.account_id,
    name: k.name,
    prefix: k.prefix,
    lastFour: k.last_four,
    createdAtUnixMs: ms(k.created_at),
    expiresAtUnixMs: ms(k.expires_at),
    revokedAtUnixMs: ms(k.revoked_at),
  },
  lastUsedAtUnixMs: ms(k.last_used_at),
  limits: limits(k.limits),
});
const sums = (s: UsageSums) => ({
  requests: BigInt(s.requests),
  inputTokens: BigInt(s.input_tokens),
  outputTokens: BigInt(s.output_tokens),
  totalTokens: BigInt(s.total_tokens),
  images: BigInt(s.images),
  videoSeconds: BigInt(s.video_seconds),
  credits: BigInt(s.credits),
});
const GROUPS: Record<number, UsageGroup> = { 0: 'day', 1: 'day', 2: 'model', 3: 'key' };

export interface BillingDeps {
  orm: MikroORM;
  money: RequestMoney;
  rateDefaults: RateDefaults;
  now: () => Date;
  /** How long a hold owner's lease lasts after a renewal (default 60 s). */
  holdLeaseMs?: number;
}

const EXCHANGE_METHODS = { authorize: 'Authorize', settle: 'Settle', release: 'Release' } as const;

/** One exchange message: the same work as the unary rpc it stands for. */
async function exchangeCall(money: RequestMoney, req: billingV1.ExchangeRequest): Promise<MessageInitShape<typeof billingV1.ExchangeResponseSchema>['result']> {
  switch (req.call.case) {
    case 'authorize':
      return { case: 'authorize', value: await money.authorize(req.call.value) };
    case 'settle':
      return { case: 'settle', value: await money.settle(req.call.value) };
    case 'release':
      return { case: 'release', value: await money.release(req.call.value) };
    default:
      throw new GatewayError('invalid_request', 'An exchange message must carry a call.');
  }
}

/** The BillingService rpcs. Each call works in its own forked EntityManager. */
export function billingHandler(deps: BillingDeps): ServiceImpl<MethodsOf<typeof billingV1.BillingService>> {
  const em = () => deps.orm.em.fork();
  return {
    createAccount: async (req) => ({ accountId: await createAccount(em(), req.name) }),
    topUp: async (req) => topUp(em(), req.accountId, req.credits, req.reference),
    getWallet: async (req) => ({ balance: await getBalance(em(), req.accountId) }),
    createApiKey: async (req) =>
      createApiKey(em(), req.accountId, req.name, req.expiresAtUnixMs > 0n ? new Date(Number(req.expiresAtUnixMs)) : null),
    revokeApiKey: async (req) => ({ revokedAtUnixMs: ms(await revokeApiKey(em(), req.keyId)) }),
    listApiKeys: async (req) => ({
      keys: (await listApiKeys(em(), req.accountId)).map((k) => ({
        keyId: k.id,
        accountId: k.accountId,
        name: k.name,
        prefix: k.prefix,
        lastFour: k.lastFour,
        createdAtUnixMs: ms(k.createdAt),
        expiresAtUnixMs: ms(k.expiresAt),
        revokedAtUnixMs: ms(k.revokedAt),
      })),
    }),
    lookupApiKey: async (req) => {
      const k = await lookupApiKey(em(), req.keyHash);
      return { keyId: k.id, accountId: k.accountId, revokedAtUnixMs: ms(k.revokedAt), expiresAtUnixMs: ms(k.expiresAt) };
    },
    checkRateLimit: async (req) => {
      await checkRateLimit(em(), req.accountId, deps.now().getTime(), deps.rateDefaults);
      return {};
    },
    authorize: async (req) => deps.money.authorize(req),
    settle: async (req) => deps.money.settle(req),
    release: async (req) => deps.money.release(req),
    refund: async (req) => deps.money.refund(req),
    renewLease: async (req) => ({ leaseUntilUnixMs: ms(await renewLease(em(), req.owner, deps.holdLeaseMs ?? 60_000, deps.now())) }),
    exchange: (call, ctx) =>
      serveExchange(call, ctx, {
        service: billingV1.BillingService.typeName,
        methodOf: (req) => (req.call.case ? EXCHANGE_METHODS[req.call.case] : 'Exchange'),
        handle: (req) => exchangeCall(deps.money, req),
      }),
    getSwitches: async () => getSwitches(em()),
    setSwitch: async (req) => ({ switches: await setSwitch(em(), req.name, req.on) }),
    setKeyLimit: async (req) => ({ limits: limits(await setKeyLimit(em(), req.keyId, req.limitType, req.period, req.value, deps.now())) }),
    clearKeyLimit: async (req) => ({ limits: limits(await clearKeyLimit(em(), req.keyId, req.limitType, req.period)) }),
    setAccountRateLimit: async (req) =>
      setAccountRateLimit(em(), req.accountId, req.perSecond, req.perMinute, deps.rateDefaults),
    listReconciliations: async () => ({
      items: (await listReconciliations(em())).map((r) => ({ keyId: r.key_id, requestId: r.request_id, markedAtUnixMs: ms(r.marked_at) })),
    }),
    resolveReconciliation: async (req) => resolveReconciliation(em(), req.keyId, req.chargeCredits, req.note),
    getUsage: async (req) => ({
      records: (await usageOfKey(em(), req.keyId, req.limit)).map((u) => ({
        requestId: u.request_id,
        model: u.model,
        endpoint: u.endpoint,
        inputTokens: BigInt(u.input_tokens),
        outputTokens: BigInt(u.output_tokens),
        units: BigInt(u.units),
        credits: BigInt(u.credits),
        createdAtUnixMs: ms(u.created_at),
        clientRequestId: u.client_request_id ?? '',
      })),
    }),
    auditLedger: async () => {
      const r = await auditLedger(em());
      return {
        accounts: r.accounts,
        problems: r.problems.map((p) => ({ accountId: p.accountId, balance: p.balance, ledgerSum: p.ledgerSum, reason: p.reason })),
      };
    },
    // Dashboard rpcs: each is scoped to the member's account (see domain/account-keys.ts).
    getAccount: async (req) => {
      const a = await getAccount(em(), req.accountId);
      return { accountId: a.id, name: a.name, timeZone: a.time_zone, createdAtUnixMs: ms(a.created_at) };
    },
    // Operators' list of accounts (`pnpm admin account list`).
    listAccounts: async (req) => ({
      accounts: (await listAccounts(em(), req.limit, req.nameContains)).map((a) => ({
        accountId: a.id,
        name: a.name,
        balance: BigInt(a.balance),
        liveKeys: a.live_keys,
        createdAtUnixMs: ms(a.created_at),
      })),
    }),
    listKeyDetails: async (req) => ({ keys: (await listKeyDetails(em(), req.accountId)).map(details) }),
    getKeyDetails: async (req) => ({ key: details(await keyDetails(em(), req.accountId, req.keyId)) }),
    revokeAccountKey: async (req) => ({ revokedAtUnixMs: ms(await revokeAccountKey(em(), req.accountId, req.keyId)) }),
    setAccountKeyLimit: async (req) => ({
      limits: limits(await setAccountKeyLimit(em(), req.accountId, req.keyId, req.limitType, req.period, req.value, deps.now())),
    }),
    clearAccountKeyLimit: async (req) => ({
      limits: limits(await clearAccountKeyLimit(em(), req.accountId, req.keyId, req.limitType, req.period)),
    }),
    setKeyExpiry: async (req) => {
      const expiresAt = req.expiresAtUnixMs > 0n ? new Date(Number(req.expiresAtUnixMs)) : null;
      return { key: details(await setKeyExpiry(em(), req.accountId, req.keyId, expiresAt, deps.now())) };
    },
    usageReport: async (req) => {
      const groupBy = GROUPS[req.groupBy];
      if (!groupBy) throw new GatewayError('invalid_request', 'group_by is day, model or key.');
      const r = await usageReport(em(), {
        accountId: req.accountId,
        keyId: req.keyId,
        fromDate: req.fromDate,
        toDate: req.toDate,
        groupBy,
        timeZone: req.timeZone,
      });
      return { rows: r.rows.map((row) => ({ group: row.grp, totals: sums(row) })), totals: sums(r.totals), timeZone: r.timeZone };
    },
    listLedger: async (req) => {
      const page = await listLedger(em(), req.accountId, req.cursor, req.limit);
      return {
        items: page.items.map((e) => ({
          entryId: e.id,
          kind: e.kind,
          amount: BigInt(e.amount),
          balanceAfter: BigInt(e.balance_after),
          createdAtUnixMs: ms(e.created_at),
          keyId: e.key_id ?? '',
          model: e.model ?? '',
          reference: e.reference,
        })),
        nextCursor: page.nextCursor,
      };
    },
    listActivity: async (req) => {
      const page = await listActivity(em(), {
        accountId: req.accountId,
        keyId: req.keyId,
        model: req.model,
        status: req.status,
        fromDate: req.fromDate,
        toDate: req.toDate,
        timeZone: req.timeZone,
        cursor: req.cursor,
        limit: req.limit,
      });
      return {
        items: page.items.map((a) => ({
          requestId: a.request_id,
          clientRequestId: a.client_request_id ?? '',
          keyId: a.key_id ?? '',
          endpoint: a.endpoint,
          model: a.model,
          inputTokens: BigInt(a.input_tokens),
          outputTokens: BigInt(a.output_tokens),
          units: BigInt(a.units),
          credits: BigInt(a.credits),
          status: a.status,
          latencyMs: BigInt(a.latency_ms),
          createdAtUnixMs: ms(a.created_at),
        })),
        nextCursor: page.nextCursor,
        timeZone: page.timeZone,
      };
    },
  };
}
