import { randomUUID } from 'node:crypto';
import { create, toBinary } from '@bufbuild/protobuf';
import { eventsV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { enqueueEvent } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';
import { KEY_CHANGED_SUBJECT, revokeApiKey } from './api-keys.ts';
import { requireUuid } from './inputs.ts';
import { clearKeyLimit, setKeyLimit, type KeyLimitRow } from './key-limits.ts';

/**
 * Key management on behalf of an account (the dashboard). Every function takes the account id of
 * the signed-in member and treats a key of another account exactly like a key that does not exist
 * (`not_found`), so an account can neither act on nor detect another account's keys. A key never
 * changes account, so checking ownership before delegating to the operator functions is safe.
 */

/** Expiries further out than this are a typo, not a plan. */
const MAX_EXPIRY_MS = 100 * 365 * 24 * 3600_000;

export interface KeyDetailsRow {
  id: string;
  account_id: string;
  name: string;
  prefix: string;
  last_four: string;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  limits: KeyLimitRow[];
}

const DETAILS_SQL = `
  select k.id, k.account_id, k.name, k.prefix, k.last_four, k.created_at, k.expires_at, k.revoked_at, k.last_used_at,
         coalesce((select json_agg(json_build_object('limit_type', l.limit_type, 'period', l.period, 'value', l.value::text)
                                   order by l.limit_type, l.period)
                     from key_limit l where l.key_id = k.id), '[]'::json) as limits
    from api_key k`;

/** The account's keys with last use and limits, newest first. */
export async function listKeyDetails(em: EntityManager, accountId: string): Promise<KeyDetailsRow[]> {
  requireUuid(accountId, 'account');
  return em.execute<KeyDetailsRow[]>(`${DETAILS_SQL} where k.account_id = ? order by k.created_at desc, k.id`, [accountId]);
}

/** One key of the account, or `not_found` (also when the key belongs to another account). */
export async function keyDetails(em: EntityManager, accountId: string, keyId: string): Promise<KeyDetailsRow> {
  requireUuid(accountId, 'API key');
  requireUuid(keyId, 'API key');
  const rows = await em.execute<KeyDetailsRow[]>(`${DETAILS_SQL} where k.id = ? and k.account_id = ?`, [keyId, accountId]);
  const row = rows[0];
  if (!row) throw new GatewayError('not_found', 'No such API key.');
  return row;
}

export async function revokeAccountKey(em: EntityManager, accountId: string, keyId: string): Promise<Date> {
  await keyDetails(em, accountId, keyId);
  return revokeApiKey(em, keyId);
}

export async function setAccountKeyLimit(
  em: EntityManager,
  accountId: string,
  keyId: string,
  limitType: string,
  period: string,
  value: bigint,
  now: Date,
): Promise<KeyLimitRow[]> {
  await keyDetails(em, accountId, keyId);
  return setKeyLimit(em, keyId, limitType, period, value, now);
}

export async function clearAccountKeyLimit(
  em: EntityManager,
  accountId: string,
  keyId: string,
  limitType: string,
  period: string,
): Promise<KeyLimitRow[]> {
  await keyDetails(em, accountId, keyId);
  return clearKeyLimit(em, keyId, limitType, period);
}

/**
 * Sets (or with `null` removes) the expiry of an active key and, in the same transaction, queues
 * the event that makes every gateway drop its cached lookup, so the new expiry holds at once (a
 * cached lookup would carry the old one for up to its lifetime).
 */
export async function setKeyExpiry(
  em: EntityManager,
  accountId: string,
  keyId: string,
  expiresAt: Date | null,
  now: Date,
): Promise<KeyDetailsRow> {
  const key = await keyDetails(em, accountId, keyId);
  if (key.revoked_at) throw new GatewayError('invalid_request', 'The key is revoked; its expiry no longer matters.');
  if (expiresAt) {
    const ms = expiresAt.getTime();
    if (!Number.isFinite(ms) || ms <= now.getTime()) throw new GatewayError('invalid_request', 'The expiry must be in the future.');
    if (ms > now.getTime() + MAX_EXPIRY_MS) throw new GatewayError('invalid_request', 'The expiry is too far in the future.');
  }
  await em.transactional(async (tx) => {
    const rows = await tx.execute<Array<{ key_hash: Buffer }>>('update api_key set expires_at = ? where id = ? and account_id = ? returning key_hash', [
      expiresAt,
      keyId,
      accountId,
    ]);
    const keyHash = rows[0]?.key_hash;
    if (!keyHash) return;
    const event = create(eventsV1.ApiKeyChangedSchema, { eventId: `key-changed:${keyId}:${randomUUID()}`, keyId, keyHash });
    enqueueEvent(tx, { subject: KEY_CHANGED_SUBJECT, payload: toBinary(eventsV1.ApiKeyChangedSchema, event), msgId: event.eventId });
    await tx.flush();
  });
  return keyDetails(em, accountId, keyId);
}
