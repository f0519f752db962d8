import type { billingV1, MethodsOf, ServiceImpl } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { getBalance } from '../domain/accounts.ts';
import {
  clearAccountKeyLimit,
  keyDetails,
  listKeyDetails,
  revokeAccountKey,
  setAccountKeyLimit,
  setKeyExpiry,
} from '../domain/account-keys.ts';
import { getAccount } from '../domain/account-profile.ts';
import { listActivity } from '../domain/activity.ts';
import { createApiKey } from '../domain/api-keys.ts';
import { listLedger } from '../domain/ledger-history.ts';
import { usageReport, type UsageGroup } from '../domain/usage-report.ts';
import type { BillingDeps } from './billing.handler.ts';
import { details, limits, ms, sums } from './shapes.ts';

const GROUPS: Record<number, UsageGroup> = { 0: 'day', 1: 'day', 2: 'model', 3: 'key' };

/**
 * The AccountService rpcs: one account's own view and changes, each scoped to the account it names
 * (see domain/account-keys.ts). Each call works in its own forked EntityManager.
 */
export function accountHandler(deps: Pick<BillingDeps, 'orm' | 'now'>): ServiceImpl<MethodsOf<typeof billingV1.AccountService>> {
  const em = () => deps.orm.em.fork();
  return {
    getAccount: async (req) => {
      const a = await getAccount(em(), req.accountId);
      return { accountId: a.id, name: a.name, timeZone: a.time_zone, createdAtUnixMs: ms(a.created_at) };
    },
    getWallet: async (req) => ({ balance: await getBalance(em(), req.accountId) }),
    createApiKey: async (req) =>
      createApiKey(em(), req.accountId, req.name, req.expiresAtUnixMs > 0n ? new Date(Number(req.expiresAtUnixMs)) : null),
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
