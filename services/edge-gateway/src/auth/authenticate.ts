import { hasKeyPrefix, hashApiKey, isWellFormedApiKey, KEY_PREFIX } from '@gw/api-keys';
import { GatewayError } from '@gw/errors';
import type { FastifyRequest } from 'fastify';
import { headerValues } from '../http/headers.ts';
import type { KeyCache, KeyRecord } from './key-cache.ts';

/** `Bearer <key>`; the scheme's case does not matter (RFC 9110 §11.1), the key's does. */
const BEARER = /^bearer (\S+)$/i;

const HOW = 'Send the API key as `Authorization: Bearer <API_KEY>`.';

/** What each way of getting the header wrong is told; every one is `auth_missing_or_malformed`. */
export const AUTH_MESSAGES = {
  missing: HOW,
  malformed: HOW,
  repeated: `The request has more than one Authorization header. ${HOW} once.`,
  xApiKey:
    'This gateway reads the API key from `Authorization: Bearer <API_KEY>`, not from `x-api-key`. ' +
    'Claude Code: set ANTHROPIC_AUTH_TOKEN instead of ANTHROPIC_API_KEY. Anthropic SDKs (and the AI SDK, LangChain): pass the key as `authToken` instead of `apiKey`.',
  foreign: `The bearer token is not an API key of this gateway (its keys begin with \`${KEY_PREFIX}\`). ${HOW}`,
} as const;

const refuse = (message: string) => new GatewayError('auth_missing_or_malformed', message);

/**
 * Spec section 5: header missing, sent twice, or not `Bearer <key>` with our prefix →
 * auth_missing_or_malformed, with a message that says how to send it (a client sending
 * `x-api-key`, as Anthropic clients do by default, is told the setting that fixes it); a key that
 * cannot exist (bad checksum) or is unknown → auth_invalid; then revoked, then expired. A key
 * failing its checksum is refused here, with no lookup; lookups of unknown keys are throttled per
 * client address (`KeyCache`).
 */
export async function authenticate(request: FastifyRequest, cache: KeyCache, now: number): Promise<KeyRecord> {
  const given = headerValues(request.raw, 'authorization');
  if (given.length > 1) throw refuse(AUTH_MESSAGES.repeated);
  const header = given[0];
  if (header === undefined) throw refuse(request.headers['x-api-key'] !== undefined ? AUTH_MESSAGES.xApiKey : AUTH_MESSAGES.missing);
  const key = BEARER.exec(header)?.[1];
  if (key === undefined) throw refuse(AUTH_MESSAGES.malformed);
  if (!hasKeyPrefix(key)) throw refuse(AUTH_MESSAGES.foreign);
  if (!isWellFormedApiKey(key)) throw new GatewayError('auth_invalid', 'The API key does not exist.');
  const record = await cache.get(hashApiKey(key), request.ip);
  if (record.revokedAtMs > 0) throw new GatewayError('auth_revoked', 'The API key was revoked.');
  if (record.expiresAtMs > 0 && record.expiresAtMs <= now) throw new GatewayError('auth_expired', 'The API key has expired.');
  return record;
}
