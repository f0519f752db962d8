import { describe, expect, it } from 'vitest';
import { KEY_LENGTH, KEY_PREFIX, generateApiKey, hashApiKey, isWellFormedApiKey, sameKeyHash } from '../src/index.ts';

describe('api key format', () => {
  it('generates distinct well-formed keys with the prefix', () => {
    const keys = new Set(Array.from({ length: 500 }, generateApiKey));
    expect(keys.size).toBe(500);
    for (const k of keys) {
      expect(k.startsWith(KEY_PREFIX)).toBe(true);
      expect(k).toHaveLength(KEY_LENGTH);
      expect(isWellFormedApiKey(k)).toBe(true);
    }
  });

  it('refuses every single-character typo through the checksum', () => {
    const key = generateApiKey();
    for (let i = KEY_PREFIX.length; i < key.length; i++) {
      const swapped = key[i] === 'a' ? 'b' : 'a';
      expect(isWellFormedApiKey(key.slice(0, i) + swapped + key.slice(i + 1))).toBe(false);
    }
  });

  it('refuses wrong prefix, length and characters', () => {
    const key = generateApiKey();
    expect(isWellFormedApiKey(key.slice(1))).toBe(false);
    expect(isWellFormedApiKey(`${key}x`)).toBe(false);
    expect(isWellFormedApiKey(`sk_${key.slice(KEY_PREFIX.length)}`)).toBe(false);
    expect(isWellFormedApiKey(`${key.slice(0, -7)}-${key.slice(-6)}`)).toBe(false);
  });

  it('hashes deterministically and compares hashes', () => {
    const key = generateApiKey();
    expect(hashApiKey(key)).toHaveLength(32);
    expect(sameKeyHash(hashApiKey(key), hashApiKey(key))).toBe(true);
    expect(sameKeyHash(hashApiKey(key), hashApiKey(generateApiKey()))).toBe(false);
  });
});
