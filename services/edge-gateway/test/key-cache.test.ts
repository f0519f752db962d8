import { describe, expect, it } from 'vitest';
import { KeyCache, type KeyRecord } from '../src/auth/key-cache.ts';

const record: KeyRecord = { keyId: 'k1', accountId: 'a1', revokedAtMs: 0, expiresAtMs: 0 };
const hash = Buffer.from('aa', 'hex');

/** A lookup whose answers the test releases one by one. */
function controlledLookup() {
  const waiting: Array<(r: KeyRecord) => void> = [];
  const lookup = () => new Promise<KeyRecord>((resolve) => waiting.push(resolve));
  return { lookup, waiting };
}

describe('KeyCache', () => {
  it('caches a lookup, and shares one lookup among concurrent misses', async () => {
    const { lookup, waiting } = controlledLookup();
    const cache = new KeyCache(lookup, { ttlMs: 60_000 });
    const both = Promise.all([cache.get(hash), cache.get(hash)]);
    expect(waiting).toHaveLength(1);
    waiting[0]!(record);
    expect(await both).toEqual([record, record]);
    expect(await cache.get(hash)).toBe(record);
    expect(waiting).toHaveLength(1);
  });

  it('does not cache a lookup that a revocation overtook, and no later request joins it', async () => {
    const { lookup, waiting } = controlledLookup();
    const cache = new KeyCache(lookup, { ttlMs: 60_000 });
    const before = cache.get(hash); // billing read the key before it was revoked...
    cache.drop(hash); // ...and the revocation event arrives before its answer
    const after = cache.get(hash);
    expect(waiting).toHaveLength(2); // the request after the drop looks the key up again
    waiting[0]!(record);
    expect(await before).toBe(record); // answered for the request that asked before
    const revoked = { ...record, revokedAtMs: 1 };
    waiting[1]!(revoked);
    expect(await after).toBe(revoked);
    expect(await cache.get(hash)).toBe(revoked); // the stale answer was never cached
    expect(waiting).toHaveLength(2);
  });
});
