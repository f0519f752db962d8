import type { AuditDescribe } from '@gw/service-kit';
import type { AuditEntry } from '../domain/audit-trail.ts';

// What each administrative rpc records (with service-kit's `audited`): the account (or the key or
// alert whose account it is) and what changed. Secrets (a key's plaintext, a webhook secret) are
// never recorded. The actions of BillingAdminService and AccountService are both `billing.<Rpc>`,
// as they were when the two were one service.
type Describe = AuditDescribe<AuditEntry>;

export const BILLING_ADMIN_AUDITED: Record<string, Describe> = {
  createAccount: (req, res) => ({ accountId: res.accountId, details: { name: req.name } }),
  topUp: (req, res) => ({ accountId: req.accountId, details: { credits: req.credits, reference: req.reference, applied: res.applied, balance_after: res.balance } }),
  revokeApiKey: (req) => ({ keyId: req.keyId, details: { key_id: req.keyId } }),
  setSwitch: (req) => ({ details: { name: req.name, on: req.on } }),
  setKeyLimit: (req) => ({ keyId: req.keyId, details: { key_id: req.keyId, limit_type: req.limitType, period: req.period, value: req.value } }),
  clearKeyLimit: (req) => ({ keyId: req.keyId, details: { key_id: req.keyId, limit_type: req.limitType, period: req.period } }),
  setAccountRateLimit: (req) => ({ accountId: req.accountId, details: { per_second: req.perSecond, per_minute: req.perMinute } }),
  resolveReconciliation: (req, res) => ({ keyId: req.keyId, details: { key_id: req.keyId, charge_credits: req.chargeCredits, note: req.note, resolved: res.resolved } }),
};

export const ACCOUNT_AUDITED: Record<string, Describe> = {
  createApiKey: (req, res) => ({ accountId: req.accountId, details: { key_id: res.keyId, name: req.name, expires_at_unix_ms: req.expiresAtUnixMs } }),
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
  testAlert: (req, res) => ({ alertId: req.alertId, details: { alert_id: req.alertId, delivery_id: res.deliveryId } }),
};
