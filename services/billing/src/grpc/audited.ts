import type { CallContext } from '@gw/contracts';
import type { Logger } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { actorOf, recordAudit, type AuditEntry } from '../domain/audit-trail.ts';

// What each administrative rpc records: the account (or key) it changed and what changed. Secrets
// (a key's plaintext, a webhook secret) are never recorded.
type Describe = (req: any, res: any) => Omit<AuditEntry, 'action'>; // eslint-disable-line @typescript-eslint/no-explicit-any

export const BILLING_AUDITED: Record<string, Describe> = {
  createAccount: (req, res) => ({ accountId: res.accountId, details: { name: req.name } }),
  topUp: (req, res) => ({ accountId: req.accountId, details: { credits: req.credits, reference: req.reference, applied: res.applied, balance_after: res.balance } }),
  createApiKey: (req, res) => ({ accountId: req.accountId, details: { key_id: res.keyId, name: req.name, expires_at_unix_ms: req.expiresAtUnixMs } }),
  revokeApiKey: (req) => ({ keyId: req.keyId, details: { key_id: req.keyId } }),
  setSwitch: (req) => ({ details: { name: req.name, on: req.on } }),
  setKeyLimit: (req) => ({ keyId: req.keyId, details: { key_id: req.keyId, limit_type: req.limitType, period: req.period, value: req.value } }),
  clearKeyLimit: (req) => ({ keyId: req.keyId, details: { key_id: req.keyId, limit_type: req.limitType, period: req.period } }),
  setAccountRateLimit: (req) => ({ accountId: req.accountId, details: { per_second: req.perSecond, per_minute: req.perMinute } }),
  resolveReconciliation: (req, res) => ({ keyId: req.keyId, details: { key_id: req.keyId, charge_credits: req.chargeCredits, note: req.note, resolved: res.resolved } }),
  revokeAccountKey: (req) => ({ accountId: req.accountId, details: { key_id: req.keyId } }),
  setAccountKeyLimit: (req) => ({ accountId: req.accountId, details: { key_id: req.keyId, limit_type: req.limitType, period: req.period, value: req.value } }),
  clearAccountKeyLimit: (req) => ({ accountId: req.accountId, details: { key_id: req.keyId, limit_type: req.limitType, period: req.period } }),
  setKeyExpiry: (req) => ({ accountId: req.accountId, details: { key_id: req.keyId, expires_at_unix_ms: req.expiresAtUnixMs } }),
};

export const ALERTS_AUDITED: Record<string, Describe> = {
  setAlert: (req, res) => ({
    accountId: req.accountId,
    details: { alert_id: res.alertId, low_balance: req.lowBalance, monthly_budget: req.monthlyBudget, budget_thresholds: req.budgetThresholds, webhook_url: req.webhookUrl },
  }),
  clearAlert: (req) => ({ alertId: req.alertId, details: { alert_id: req.alertId } }),
};

/**
 * The handler with each rpc of `audited` recording, once it succeeded, who made it (the caller's
 * `gw-actor` metadata), from where and what it changed. The record is written after the change
 * commits, in a statement of its own: should that write fail, the change stands and the failure
 * is logged (the caller's answer is not lost).
 */
export function audited<H extends Record<string, unknown>>(
  service: string,
  handler: H,
  describe: Record<string, Describe>,
  orm: MikroORM,
  logger: Pick<Logger, 'error'>,
): H {
  const out: Record<string, unknown> = { ...handler };
  for (const [name, what] of Object.entries(describe)) {
    const fn = handler[name] as ((req: unknown, ctx: CallContext) => Promise<unknown>) | undefined;
    if (!fn) throw new Error(`${service} has no rpc ${name}`);
    out[name] = async (req: unknown, ctx: CallContext) => {
      const res = await fn.call(handler, req, ctx);
      const action = `${service}.${name[0]!.toUpperCase()}${name.slice(1)}`;
      try {
        await recordAudit(orm.em.fork(), actorOf(ctx), { ...what(req, res), action });
      } catch (err) {
        logger.error({ err, action }, 'audit record failed; the change stands');
      }
      return res;
    };
  }
  return out as H;
}
