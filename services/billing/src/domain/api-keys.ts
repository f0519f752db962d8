import { randomUUID } from 'node:crypto';
import { create, toBinary } from '@bufbuild/protobuf';
import { displayParts, generateApiKey, hashApiKey, sameKeyHash } from '@gw/api-keys';
import { eventsV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { enqueueEvent } from '@gw/service-kit';
import { LockMode, type EntityManager } from '@mikro-orm/postgresql';
import { Account, ApiKey } from '../db/entities.ts';
import { checkedName, requireUuid } from './inputs.ts';

export const KEY_REVOKED_SUBJECT = 'billing.key.revoked';
/** A key's expiry was set, changed or removed. */
export const KEY_CHANGED_SUBJECT = 'billing.key.changed';

export interface CreatedKey {
  keyId: string;
  apiKey: string;
}

/** Creates a key; the plaintext leaves in the return value only, the table keeps its hash. */
export async function createApiKey(
  em: EntityManager,
  accountId: string,
  name: string,
  expiresAt: Date | null,
): Promise<CreatedKey> {
  requireUuid(accountId, 'account');
  const keyName = checkedName(name, 'key', false);
  if (!(await em.findOne(Account, { id: accountId }))) throw new GatewayError('not_found', 'No such account.');
  if (expiresAt && expiresAt.getTime() <= Date.now()) {
    throw new GatewayError('invalid_request', 'The expiry must be in the future.');
  }
  const apiKey = generateApiKey();
  const id = randomUUID();
  const { prefix, lastFour } = displayParts(apiKey);
  em.create(ApiKey, { id, accountId, name: keyName, keyHash: hashApiKey(apiKey), prefix, lastFour, expiresAt, revokedAt: null });
  await em.flush();
  return { keyId: id, apiKey };
}

/**
 * Revokes at once and, in the same transaction, queues the event that makes every gateway drop
 * its cached lookup. Revoking twice keeps the first time and announces nothing new.
 */
export async function revokeApiKey(em: EntityManager, keyId: string): Promise<Date> {
  requireUuid(keyId, 'API key');
  return em.transactional(async (tx) => {
    const key = await tx.findOne(ApiKey, { id: keyId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!key) throw new GatewayError('not_found', 'No such API key.');
    if (key.revokedAt) return key.revokedAt;
    key.revokedAt = new Date();
    const event = create(eventsV1.ApiKeyRevokedSchema, {
      eventId: `key-revoked:${keyId}`,
      keyId,
      keyHash: key.keyHash,
    });
    enqueueEvent(tx, { subject: KEY_REVOKED_SUBJECT, payload: toBinary(eventsV1.ApiKeyRevokedSchema, event), msgId: event.eventId });
    await tx.flush();
    return key.revokedAt;
  });
}

/** Finds a key by hash; the stored hash is compared in constant time before it is trusted. */
export async function lookupApiKey(em: EntityManager, keyHash: Uint8Array): Promise<ApiKey> {
  const key = await em.findOne(ApiKey, { keyHash: Buffer.from(keyHash) }, { disableIdentityMap: true });
  if (!key || !sameKeyHash(key.keyHash, keyHash)) throw new GatewayError('auth_invalid', 'The API key does not exist.');
  return key;
}
