import { createHash } from 'node:crypto';
import { GatewayError } from '@gw/errors';
import canonicalize from 'canonicalize';

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

/**
 * SHA-256 of the parsed request body in its RFC 8785 canonical form (JCS: keys sorted at every
 * level, ECMAScript numbers and strings): a retry of the same request matches however its JSON was
 * laid out; any change of a value does not. For parsed JSON this is byte for byte the form hashed
 * before JCS was used, so claims stored earlier still compare.
 */
export function bodyHash(body: unknown): Buffer {
  let canonical: string | undefined;
  try {
    canonical = canonicalize(body);
  } catch {
    // JCS has no form for a string that is not Unicode text (a lone surrogate such as "\ud800").
    throw new GatewayError(
      'invalid_request',
      'A request sent with an Idempotency-Key must hold only well-formed Unicode text: a string has an unpaired surrogate escape (\\uD800 to \\uDFFF). Send the character whole, or drop the escape.',
    );
  }
  return createHash('sha256').update(canonical ?? 'null').digest();
}
