import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { Hmac } from './secrets.ts';

/**
 * Time-based one-time codes (RFC 6238: SHA-1, 6 digits, 30 s), the second sign-in factor a
 * member can turn on. The shared secret is stored sealed (AES-256-GCM under a key derived from
 * the console's secret), so a copy of the table gives nobody the codes. A code is accepted one
 * period early or late (clock drift), and never twice: the period of the last accepted code is
 * kept, and a code of that period or an earlier one is refused.
 */
const ISSUER = 'Gateway console';
const PERIOD_S = 30;

export class TotpCodes {
  readonly #key: Buffer;

  constructor(hmac: Hmac) {
    this.#key = hmac.digest('totp-secret-key', '');
  }

  /** A fresh 160-bit secret in base32 (what authenticator apps take). */
  newSecret(): string {
    return new Secret({ size: 20 }).base32;
  }

  /** The `otpauth://` URI an authenticator app reads (typed in or from a QR code). */
  uri(email: string, secretBase32: string): string {
    return new TOTP({ issuer: ISSUER, label: email, secret: Secret.fromBase32(secretBase32), period: PERIOD_S }).toString();
  }

  seal(secretBase32: string): Buffer {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const sealed = Buffer.concat([cipher.update(secretBase32, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), sealed]);
  }

  open(sealed: Buffer): string {
    const decipher = createDecipheriv('aes-256-gcm', this.#key, sealed.subarray(0, 12));
    decipher.setAuthTag(sealed.subarray(12, 28));
    return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
  }

  /** The period (counter) of a valid code at `nowMs`, or null; whether it was used before is the caller's check. */
  check(secretBase32: string, code: string, nowMs: number): number | null {
    const token = code.replace(/\s/g, '');
    if (!/^\d{6}$/.test(token)) return null;
    const delta = TOTP.validate({ token, secret: Secret.fromBase32(secretBase32), period: PERIOD_S, timestamp: nowMs, window: 1 });
    return delta === null ? null : TOTP.counter({ period: PERIOD_S, timestamp: nowMs }) + delta;
  }

  /** The code of `nowMs` (tests and the enrolment check). */
  code(secretBase32: string, nowMs: number): string {
    return TOTP.generate({ secret: Secret.fromBase32(secretBase32), period: PERIOD_S, timestamp: nowMs });
  }
}
