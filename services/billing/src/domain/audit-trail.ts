import { appendAudit, listAuditEvents, type Actor, type AuditRow } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';
import { requireUuid } from './inputs.ts';

/** One change to billing's audit trail (`audit_event`, see service-kit's audit.ts). */
export interface AuditEntry {
  /** The account changed; absent for changes to no account (switches). */
  accountId?: string;
  /** When the request names no account: the key whose account it is. */
  keyId?: string;
  /** Likewise: the alert whose account it is. */
  alertId?: string;
  details: Record<string, unknown>;
}

/** Appends a change, with its account found from its key or alert when the request named neither. */
export async function recordAudit(em: EntityManager, who: Actor, action: string, entry: AuditEntry): Promise<void> {
  let accountId = entry.accountId ?? null;
  if (accountId === null && (entry.keyId !== undefined || entry.alertId !== undefined)) {
    const [row] = await em.execute<{ account_id: string }[]>(
      `select account_id from api_key where id::text = ? union all select account_id from alert where id::text = ? limit 1`,
      [entry.keyId ?? '', entry.alertId ?? ''],
    );
    accountId = row?.account_id ?? null;
  }
  await appendAudit(em, who, accountId, action, entry.details);
}

/** An account's audit trail, newest first; an empty account id: the changes to no account. */
export async function listAudit(em: EntityManager, accountId: string, limit: number): Promise<AuditRow[]> {
  if (accountId !== '') requireUuid(accountId, 'account');
  return listAuditEvents(em, accountId === '' ? null : accountId, limit);
}
