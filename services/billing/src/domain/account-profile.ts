import { GatewayError } from '@gw/errors';
import type { EntityManager } from '@mikro-orm/postgresql';
import { requireUuid } from './inputs.ts';

export interface AccountProfile {
  id: string;
  name: string;
  time_zone: string;
  created_at: Date;
}

/** An account's name and the time zone of its calendar (key windows, usage days). */
export async function getAccount(em: EntityManager, accountId: string): Promise<AccountProfile> {
  requireUuid(accountId, 'account');
  const rows = await em.execute<AccountProfile[]>('select id, name, time_zone, created_at from account where id = ?', [accountId]);
  const row = rows[0];
  if (!row) throw new GatewayError('not_found', 'No such account.');
  return row;
}

export interface AccountSummary {
  id: string;
  name: string;
  balance: string;
  live_keys: number;
  created_at: Date;
}

/** Accounts newest first, with their balance and live keys (the operator's list); `limit` 1..1000, default 100. */
export async function listAccounts(em: EntityManager, limit: number, nameContains: string): Promise<AccountSummary[]> {
  if (!Number.isInteger(limit) || limit < 0 || limit > 1000) throw new GatewayError('invalid_request', 'limit must be 0 (the default, 100) to 1000.');
  if (nameContains.length > 200) throw new GatewayError('invalid_request', 'name_contains is at most 200 characters.');
  const pattern = `%${nameContains.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return em.execute<AccountSummary[]>(
    `select a.id, a.name, coalesce(w.balance, 0)::text as balance, a.created_at,
            (select count(*)::int from api_key k where k.account_id = a.id and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())) as live_keys
       from account a left join wallet w on w.account_id = a.id
      where a.name ilike ?
      order by a.created_at desc, a.id
      limit ?`,
    [pattern, limit === 0 ? 100 : limit],
  );
}
