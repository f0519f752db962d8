import type { billingV1, MethodsOf, ServiceImpl } from '@gw/contracts';
import { createAccount, topUp } from '../domain/accounts.ts';
import { listAccounts } from '../domain/account-profile.ts';
import { revokeApiKey } from '../domain/api-keys.ts';
import { auditLedger } from '../domain/audit.ts';
import { clearKeyLimit, setKeyLimit } from '../domain/key-limits.ts';
import { setAccountRateLimit } from '../domain/rate-limit.ts';
import { listReconciliations, resolveReconciliation } from '../domain/reconciliation.ts';
import { setSwitch } from '../domain/switches.ts';
import { usageOfKey } from '../domain/usage.ts';
import type { BillingDeps } from './billing.handler.ts';
import { limits, ms } from './shapes.ts';

/** The BillingAdminService rpcs: the operators' (any account, any key by its id). Each call works in its own forked EntityManager. */
export function billingAdminHandler(deps: Pick<BillingDeps, 'orm' | 'rateDefaults' | 'now'>): ServiceImpl<MethodsOf<typeof billingV1.BillingAdminService>> {
  const em = () => deps.orm.em.fork();
  return {
    createAccount: async (req) => ({ accountId: await createAccount(em(), req.name) }),
    topUp: async (req) => topUp(em(), req.accountId, req.credits, req.reference),
    revokeApiKey: async (req) => ({ revokedAtUnixMs: ms(await revokeApiKey(em(), req.keyId)) }),
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
    listAccounts: async (req) => ({
      accounts: (await listAccounts(em(), req.limit, req.nameContains)).map((a) => ({
        accountId: a.id,
        name: a.name,
        balance: BigInt(a.balance),
        liveKeys: a.live_keys,
        createdAtUnixMs: ms(a.created_at),
      })),
    }),
  };
}
