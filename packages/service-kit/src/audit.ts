import type { CallContext } from '@gw/contracts';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from './logger.ts';

/**
 * The audit trail of administrative changes, one table per service schema (`audit_event`):
 * who (the caller's `gw-actor` metadata), from where (`gw-actor-origin`), when, which account,
 * the rpc and what it changed. Append-only: a trigger refuses updates, deletes and truncation.
 */

/** The metadata a caller names itself in: `operator:<name>` or `member:<id>`; and where it acts from. */
export const ACTOR_HEADER = 'gw-actor';
export const ORIGIN_HEADER = 'gw-actor-origin';

export interface Actor {
  actor: string;
  origin: string;
}

const clean = (v: unknown) => (typeof v === 'string' ? v.replace(/[\p{Cc}\p{Cf}]/gu, '').slice(0, 200) : '');

/** Who the call says it acts for; `unknown` when it says nothing. */
export function actorOf(ctx: Pick<CallContext, 'metadata'>): Actor {
  return { actor: clean(ctx.metadata.get(ACTOR_HEADER)[0]) || 'unknown', origin: clean(ctx.metadata.get(ORIGIN_HEADER)[0]) };
}

/** The table and its append-only guard, for a service's migration. */
export const AUDIT_TABLE_SQL = [
  `create table if not exists "audit_event" (
    "id" bigint generated always as identity primary key,
    "account_id" uuid,
    "actor" text not null,
    "origin" text not null default '',
    "action" text not null,
    "details" jsonb not null,
    "created_at" timestamptz not null default now()
  )`,
  `create index if not exists "audit_event_account_idx" on "audit_event" ("account_id", "id")`,
  `create or replace function "audit_event_append_only"() returns trigger language plpgsql as $fn$
    begin
      raise exception 'the audit trail is append-only';
    end
    $fn$`,
  `create or replace trigger "audit_event_append_only" before update or delete on "audit_event"
    for each row execute function "audit_event_append_only"()`,
  `create or replace trigger "audit_event_no_truncate" before truncate on "audit_event"
    for each statement execute function "audit_event_append_only"()`,
];

export const AUDIT_TABLE_DROP_SQL = ['drop table if exists "audit_event"', 'drop function if exists "audit_event_append_only"()'];

const json = (details: Record<string, unknown>) => JSON.stringify(details, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));

/** Appends one change. */
export async function appendAudit(em: EntityManager, who: Actor, accountId: string | null, action: string, details: Record<string, unknown>): Promise<void> {
  await em.execute(`insert into audit_event (account_id, actor, origin, action, details) values (?, ?, ?, ?, ?::jsonb)`, [
    accountId,
    who.actor,
    who.origin,
    action,
    json(details),
  ]);
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

/** The changes to one account (null: to no account), newest first; `limit` 0 = 200, at most 1000. */
export async function listAuditEvents(em: EntityManager, accountId: string | null, limit: number): Promise<AuditRow[]> {
  const n = limit <= 0 ? 200 : Math.min(limit, 1000);
  return em.execute<AuditRow[]>(
    `select id::text, account_id, actor, origin, action, details::text as details, created_at from audit_event
      where account_id is not distinct from ? order by id desc limit ?`,
    [accountId, n],
  );
}

/** What one rpc records from its request and answer: the account changed (if any) and the details. */
export type AuditDescribe<Entry> = (req: any, res: any) => Entry; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The handler with each rpc named in `describe` recording, once it succeeded, who made it, from
 * where and what it changed (`record`; the action is `<service>.<Rpc>`). The record is written
 * after the change, in a statement of its own: should it fail, the change stands (the caller's
 * answer is not lost) and the failure is logged.
 */
export function audited<H extends object, Entry>(
  service: string,
  handler: H,
  describe: Record<string, AuditDescribe<Entry>>,
  record: (em: EntityManager, who: Actor, action: string, entry: Entry) => Promise<void>,
  orm: MikroORM,
  logger: Pick<Logger, 'error'>,
): H {
  const out: Record<string, unknown> = { ...(handler as Record<string, unknown>) };
  for (const [name, what] of Object.entries(describe)) {
    const fn = (handler as Record<string, unknown>)[name] as ((req: unknown, ctx: CallContext) => Promise<unknown>) | undefined;
    if (typeof fn !== 'function') throw new Error(`${service} has no rpc ${name}`);
    const action = `${service}.${name[0]!.toUpperCase()}${name.slice(1)}`;
    out[name] = async (req: unknown, ctx: CallContext) => {
      const res = await fn.call(handler, req, ctx);
      try {
        await record(orm.em.fork(), actorOf(ctx), action, what(req, res));
      } catch (err) {
        logger.error({ err, action }, 'audit record failed; the change stands');
      }
      return res;
    };
  }
  return out as H;
}
