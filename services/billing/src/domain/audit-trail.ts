import type { CallContext } from '@gw/contracts';
import type { EntityManager } from '@mikro-orm/postgresql';
import { requireUuid } from './inputs.ts';

/** Who made a change and from where, as the caller said in its metadata. */
export interface Actor {
  actor: string;
  origin: string;
}

/** The metadata a caller names itself in: `operator:<name>` or `member:<id>`; and where it acts from. */
export const ACTOR_HEADER = 'gw-actor';
export const ORIGIN_HEADER = 'gw-actor-origin';

const clean = (v: unknown) => (typeof v === 'string' ? v.replace(/[\p{Cc}\p{Cf}]/gu, '').slice(0, 200) : '');

export function actorOf(ctx: Pick<CallContext, 'metadata'>): Actor {
  return { actor: clean(ctx.metadata.get(ACTOR_HEADER)[0]) || 'unknown', origin: clean(ctx.metadata.get(ORIGIN_HEADER)[0]) };
}

export interface AuditEntry {
  /** The account changed; absent for changes to no account (switches). */
  accountId?: string;
  /** When the account is not known to the caller: the key whose account it is. */
  keyId?: string;
  /** Likewise: the alert whose account it is. */
  alertId?: string;
  action: string;
  details: Record<string, unknown>;
}

const json = (details: Record<string, unknown>) => JSON.stringify(details, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));

/** Appends one change to the audit trail (append-only: the table refuses updates and deletes). */
export async function recordAudit(em: EntityManager, who: Actor, entry: AuditEntry): Promise<void> {
  await em.execute(
    `insert into audit_event (account_id, actor, origin, action, details)
     values (coalesce(?::uuid, (select account_id from api_key where id::text = ?), (select account_id from alert where id::text = ?)),
             ?, ?, ?, ?::jsonb)`,
    [entry.accountId ?? null, entry.keyId ?? '', entry.alertId ?? '', who.actor, who.origin, entry.action, json(entry.details)],
  );
}

export interface AuditRow {
  id: string;
  account_id: string | null;
  actor: string;
  origin: string;
  action: string;
  details: string;
  created_at: Date;
}

/** An account's audit trail, newest first; an empty account id: the changes to no account. */
export async function listAudit(em: EntityManager, accountId: string, limit: number): Promise<AuditRow[]> {
  if (accountId !== '') requireUuid(accountId, 'account');
  const n = limit <= 0 ? 200 : Math.min(limit, 1000);
  return em.execute<AuditRow[]>(
    `select id::text, account_id, actor, origin, action, details::text as details, created_at from audit_event
      where account_id is not distinct from ? order by id desc limit ?`,
    [accountId === '' ? null : accountId, n],
  );
}
