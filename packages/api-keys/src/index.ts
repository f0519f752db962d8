import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * API key format, after GitHub's tokens: a fixed prefix, 32 random base62 characters (about 190
 * bits) and a 6-character base62 CRC32 of prefix and body. The checksum lets the gateway refuse a
 * mistyped or invented key without a database lookup, and lets secret scanners recognise ours.
 */
export const KEY_PREFIX = 'gwk_';
const BODY_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const KEY_LENGTH = KEY_PREFIX.length + BODY_LENGTH + CHECKSUM_LENGTH;
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${BODY_LENGTH + CHECKSUM_LENGTH}}$`);

function base62(value: number, width: number): string {
  let out = '';
  let v = value;
  for (let i = 0; i < width; i++) {
    out = ALPHABET[v % 62] + out;
    v = Math.floor(v / 62);
  }
  return out;
}

function checksum(prefixAndBody: string): string {
  return base62(crc32(prefixAndBody), CHECKSUM_LENGTH);
}

/** A new random key. Rejection sampling keeps every base62 character uniformly likely. */
export function generateApiKey(): string {
  let body = '';
  while (body.length < BODY_LENGTH) {
    for (const byte of randomBytes(BODY_LENGTH)) {
      if (byte < 248 && body.length < BODY_LENGTH) body += ALPHABET[byte % 62];
    }
  }
  const head = KEY_PREFIX + body;
  return head + checksum(head);
}

/** True when the text starts like one of our keys (the prefix), whatever follows. */
export function hasKeyPrefix(text: string): boolean {
  return text.startsWith(KEY_PREFIX);
}

/** True when the key has our shape and its checksum matches: it could exist. */
export function isWellFormedApiKey(key: string): boolean {
  if (!KEY_PATTERN.test(key)) return false;
  const head = key.slice(0, -CHECKSUM_LENGTH);
  const given = Buffer.from(key.slice(-CHECKSUM_LENGTH));
  return timingSafeEqual(given, Buffer.from(checksum(head)));
}

/** The stored form of a key: SHA-256 of its plaintext (high-entropy keys need no slow hash). */
export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

/** Constant-time comparison of two key hashes. */
export function sameKeyHash(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** What may be shown of a key after creation: its prefix part and last four characters. */
export function displayParts(key: string): { prefix: string; lastFour: string } {
  return { prefix: key.slice(0, KEY_PREFIX.length + 4), lastFour: key.slice(-4) };
}
