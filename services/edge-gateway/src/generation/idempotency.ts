import { createHash } from 'node:crypto';
import { GatewayError } from '@gw/errors';

/** The request header of spec 7.3 (Node lower-cases header names). */
export const IDEMPOTENCY_HEADER = 'idempotency-key';

/** 1 to 255 visible ASCII characters, inner spaces allowed (UUIDs, ULIDs, "order-42 retry"...). */
const KEY_FORM = /^[\x21-\x7e](?:[\x20-\x7e]{0,253}[\x21-\x7e])?$/;

/**
 * The client's Idempotency-Key, or undefined when none was sent. A key that is present but not
 * 1 to 255 visible ASCII characters is refused rather than ignored: silently dropping it would
 * turn the client's retry into a second charge.
 */
export function idempotencyKeyOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const raw = headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return undefined;
  const value = Array.isArray(raw) ? undefined : raw;
  if (value === undefined || !KEY_FORM.test(value)) {
    throw new GatewayError('invalid_request', 'The Idempotency-Key header must be 1 to 255 visible ASCII characters, sent once.');
  }
  return value;
}

/** JSON with object keys sorted at every level, so key order and whitespace do not change the hash. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.keys(value)
      .sort()
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * SHA-256 of the parsed request body in canonical form: a retry of the same request matches
 * however its JSON was laid out; any change of a value does not.
 */
export function bodyHash(body: unknown): Buffer {
  return createHash('sha256').update(canonicalJson(body)).digest();
}
