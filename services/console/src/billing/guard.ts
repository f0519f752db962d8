import type { CallOptions } from '@gw/contracts';
import type { SessionMember } from '../auth/sessions.ts';
import { can, ForbiddenError, type Permission } from '../members/roles.ts';
import type { AlertsClient, BillingClient } from './clients.ts';

/**
 * The billing calls a member's request may make, checked at the one place every such call goes
 * through (not only the pages that make them): each call needs a permission of the member's
 * role, must name the member's own account, and a change to a key needs either every key
 * (owners, admins) or a key the member created. A method not listed here is refused.
 */
const READS: Record<string, Permission | 'any'> = {
  getAccount: 'any',
  getWallet: 'any',
  // Key names label usage and the ledger, so whoever reads usage reads them too.
  listKeyDetails: 'usage.view',
  getKeyDetails: 'usage.view',
  usageReport: 'usage.view',
  listActivity: 'usage.view',
  listLedger: 'balance.view',
  createApiKey: 'keys.create',
};

const KEY_CHANGES = new Set(['revokeAccountKey', 'setAccountKeyLimit', 'clearAccountKeyLimit', 'setKeyExpiry']);

/** Whether the member may change this key: every key, or one they created. */
export function mayManageKey(member: SessionMember, creatorId: string | null | undefined): boolean {
  return can(member.role, 'keys.manage-all') || (can(member.role, 'keys.create') && creatorId === member.memberId);
}

/**
 * The call options of a member's billing call: its own, plus who makes it and from where
 * (`gw-actor: member:<id>`, `gw-actor-origin: <client address>`), so billing's audit trail names
 * the member for every change the console makes. Reads carry it too; billing records only changes.
 */
export function actorOptions(member: SessionMember, origin: string, opts?: CallOptions): CallOptions {
  return { ...opts, metadata: { ...opts?.metadata, 'gw-actor': `member:${member.memberId}`, 'gw-actor-origin': origin } };
}

export function guardedBilling(billing: BillingClient, member: SessionMember, keyCreator: (keyId: string) => Promise<string | null>, origin: string): BillingClient {
  return new Proxy(billing, {
    get(target, method) {
      // Not a thenable, and nothing but calls: every other property reads as absent.
      if (typeof method !== 'string' || method === 'then') return undefined;
      const call = (target as unknown as Record<string, (req: { accountId?: string; keyId?: string }, opts: CallOptions) => Promise<unknown>>)[method];
      return async (req: { accountId?: string; keyId?: string }, opts?: CallOptions) => {
        if (req.accountId !== member.accountId) throw new ForbiddenError(`billing ${method} for another account`);
        const needs = READS[method];
        if (needs !== undefined) {
          if (needs !== 'any' && !can(member.role, needs)) throw new ForbiddenError(`billing ${method} needs ${needs}`);
        } else if (KEY_CHANGES.has(method)) {
          if (!mayManageKey(member, await keyCreator(req.keyId ?? ''))) throw new ForbiddenError(`billing ${method}: not the member's key`);
        } else {
          throw new ForbiddenError(`billing ${method} is not a console call`);
        }
        if (typeof call !== 'function') throw new ForbiddenError(`billing ${method} is not a console call`);
        return call.call(target, req, actorOptions(member, origin, opts));
      };
    },
  });
}

/** The alerts calls a member's request may make, and what each needs (anything else is refused). */
const ALERT_CALLS: Record<string, Permission | 'any'> = {
  // Every page's banner says when an alert of the account has crossed: whoever is signed in reads it.
  listAlerts: 'any',
  listDeliveries: 'alerts.manage',
  setAlert: 'alerts.manage',
  clearAlert: 'alerts.manage',
  testAlert: 'alerts.manage',
  listAuditEvents: 'audit.view',
};

/**
 * Billing's AlertsService as the member may use it: each call needs its permission, names the
 * member's own account, and a call on one alert (clear, test) must be on an alert of that account
 * (looked up first: billing's rpcs take only the alert's id). Calls carry the member as actor.
 */
export function guardedAlerts(alerts: AlertsClient, member: SessionMember, origin: string): AlertsClient {
  const own = async (alertId: string) => (await alerts.listAlerts({ accountId: member.accountId })).alerts.some((a) => a.alertId === alertId);
  return new Proxy(alerts, {
    get(target, method) {
      if (typeof method !== 'string' || method === 'then') return undefined;
      const call = (target as unknown as Record<string, (req: { accountId?: string; alertId?: string }, opts: CallOptions) => Promise<unknown>>)[method];
      return async (req: { accountId?: string; alertId?: string }, opts?: CallOptions) => {
        const needs = ALERT_CALLS[method];
        if (needs === undefined || typeof call !== 'function') throw new ForbiddenError(`alerts ${method} is not a console call`);
        if (needs !== 'any' && !can(member.role, needs)) throw new ForbiddenError(`alerts ${method} needs ${needs}`);
        if ('alertId' in req) {
          if (!(await own(req.alertId ?? ''))) throw new ForbiddenError(`alerts ${method} on another account's alert`);
        } else if (req.accountId !== member.accountId) {
          throw new ForbiddenError(`alerts ${method} for another account`);
        }
        return call.call(target, req, actorOptions(member, origin, opts));
      };
    },
  });
}
