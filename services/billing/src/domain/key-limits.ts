import { GatewayError } from '@gw/errors';
import type { EntityManager } from '@mikro-orm/postgresql';

const TYPES = ['spending', 'requests', 'tokens'];
const PERIODS = ['daily', 'monthly', 'lifetime'];

export interface KeyLimitRow {
  limit_type: string;
  period: string;
  value: string;
}

function check(limitType: string, period: string): void {
  if (!TYPES.includes(limitType)) throw new GatewayError('invalid_request', 'limit_type is spending, requests or tokens.');
  if (!PERIODS.includes(period)) throw new GatewayError('invalid_request', 'period is daily, monthly or lifetime.');
}

export async function listKeyLimits(em: EntityManager, keyId: string): Promise<KeyLimitRow[]> {
  return em.execute<KeyLimitRow[]>(
    'select limit_type, period, value::text as value from key_limit where key_id = ? order by limit_type, period',
    [keyId],
  );
}

async function keyExists(em: EntityManager, keyId: string): Promise<void> {
  const rows = await em.execute<unknown[]>('select 1 from api_key where id = ?', [keyId]);
  if (rows.length === 0) throw new GatewayError('not_found', 'No such API key.');
}

export async function setKeyLimit(em: EntityManager, keyId: string, limitType: string, period: string, value: bigint, now: Date = new Date()) {
  check(limitType, period);
  if (value < 0n) throw new GatewayError('invalid_request', 'A limit cannot be negative.');
  await keyExists(em, keyId);
  // Under the wallet lock; a key's first limit rebuilds its usage windows from its holds.
  await em.execute('select set_key_limit(?, ?, ?, ?, ?)', [keyId, limitType, period, value, now]);
  return listKeyLimits(em, keyId);
}

export async function clearKeyLimit(em: EntityManager, keyId: string, limitType: string, period: string) {
  check(limitType, period);
  await keyExists(em, keyId);
  await em.execute('delete from key_limit where key_id = ? and limit_type = ? and period = ?', [keyId, limitType, period]);
  return listKeyLimits(em, keyId);
}
