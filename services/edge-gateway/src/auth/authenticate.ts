import { hasKeyPrefix, hashApiKey, isWellFormedApiKey } from '@gw/api-keys';
import { GatewayError } from '@gw/errors';
import type { KeyCache, KeyRecord } from './key-cache.ts';

/** `Bearer <key>`; the scheme's case does not matter (RFC 9110 §11.1), the key's does. */
const BEARER = /^bearer (\S+)$/i;

/**
 * Spec section 5: header missing or not `Bearer <key>` with our prefix → auth_missing_or_malformed;
 * a key that cannot exist (bad checksum) or is unknown → auth_invalid; then revoked, then expired.
 * A key failing its checksum is refused here, with no lookup.
 */
export async function authenticate(header: string | undefined, cache: KeyCache, now: number): Promise<KeyRecord> {
  const match = header === undefined ? null : BEARER.exec(header);
  const key = match?.[1];
  if (key === undefined || !hasKeyPrefix(key)) {
    throw new GatewayError('auth_missing_or_malformed', 'Send the API key as `Authorization: Bearer <API_KEY>`.');
  }
  if (!isWellFormedApiKey(key)) throw new GatewayError('auth_invalid', 'The API key does not exist.');
  const record = await cache.get(hashApiKey(key));
  if (record.revokedAtMs > 0) throw new GatewayError('auth_revoked', 'The API key was revoked.');
  if (record.expiresAtMs > 0 && record.expiresAtMs <= now) throw new GatewayError('auth_expired', 'The API key has expired.');
  return record;
}
