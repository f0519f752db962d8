import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Everything secret the console hands out (session ids, set-password tokens) is 256 random bits
 * and is stored only as an HMAC under the console's secret: a leaked table lets nobody in, and
 * high-entropy values need no slow hash. The same key derives CSRF tokens, bound to a session.
 */
export class Hmac {
  readonly #key: Buffer;

  constructor(secret: string) {
    this.#key = Buffer.from(secret, 'utf8');
  }

  /** HMAC-SHA256 of `value`, separated by `purpose` so one kind of value never verifies as another. */
  digest(purpose: string, value: string | Buffer): Buffer {
    return createHmac('sha256', this.#key).update(purpose).update('\0').update(value).digest();
  }
}

/** A fresh 256-bit random value, URL- and cookie-safe. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Constant-time equality of two strings of any length (compares fixed-size digests). */
export function safeEqual(a: string, b: string): boolean {
  const key = randomBytes(32);
  const da = createHmac('sha256', key).update(a).digest();
  const db = createHmac('sha256', key).update(b).digest();
  return timingSafeEqual(da, db);
}
