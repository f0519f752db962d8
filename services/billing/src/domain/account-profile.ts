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
