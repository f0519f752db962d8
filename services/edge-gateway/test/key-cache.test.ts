import { describe, expect, it } from 'vitest';
import { GatewayError } from '@gw/errors';
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
    const cache = new KeyCache(lookup, { ttlMs: 60_000, feedHealthy: true });
    const both = Promise.all([cache.get(hash), cache.get(hash)]);
    expect(waiting).toHaveLength(1);
    waiting[0]!(record);
    expect(await both).toEqual([record, record]);
    expect(await cache.get(hash)).toBe(record);
    expect(waiting).toHaveLength(1);
  });

  it('does not cache a lookup that a revocation overtook, and no later request joins it', async () => {
    const { lookup, waiting } = controlledLookup();
    const cache = new KeyCache(lookup, { ttlMs: 60_000, feedHealthy: true });
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

  it('re-checks an expired entry once for all requests meanwhile; a clear during it keeps its answer out of the cache', async () => {
    let now = 0;
    const { lookup, waiting } = controlledLookup();
    const cache = new KeyCache(lookup, { ttlMs: 1_000, feedHealthy: true, now: () => now });
    const first = cache.get(hash);
    waiting[0]!(record);
    await first;
    now = 1_000; // expired: re-checked, and the requests meanwhile join that one lookup
    const again = Promise.all([cache.get(hash), cache.get(hash), cache.get(hash)]);
    expect(waiting).toHaveLength(2);
    cache.clear(); // a NATS reconnect while billing answers
    const renewed = { ...record, keyId: 'k1-renewed' };
    waiting[1]!(renewed);
    expect(await again).toEqual([renewed, renewed, renewed]);
    const after = cache.get(hash); // not cached: looked up again
    expect(waiting).toHaveLength(3);
    waiting[2]!(record);
    expect(await after).toBe(record);
  });
});

const unknown = () => Promise.reject(new GatewayError('auth_invalid', 'The API key does not exist.'));
const codeOf = (p: Promise<unknown>) => p.then(() => 'ok', (e: GatewayError) => e.code);
const h = (n: number) => Buffer.from([n]);

describe('KeyCache: unknown keys', () => {

  it('remembers "no such key" for its negative TTL only: a key created right after a miss works within it', async () => {
    let now = 0;
    let exists = false;
    let lookups = 0;
    const cache = new KeyCache(
      () => {
        lookups++;
        return exists ? Promise.resolve(record) : unknown();
      },
      { ttlMs: 60_000, negativeTtlMs: 5_000, feedHealthy: true, now: () => now },
    );
    expect(await codeOf(cache.get(hash))).toBe('auth_invalid');
    exists = true; // the key is created just after the miss
    now = 4_999;
    expect(await codeOf(cache.get(hash))).toBe('auth_invalid');
    expect(lookups).toBe(1);
    now = 5_000;
    expect(await cache.get(hash)).toEqual(record);
    expect(lookups).toBe(2);
  });

  it('a key event forgets a remembered miss at once', async () => {
    let exists = false;
    const cache = new KeyCache(() => (exists ? Promise.resolve(record) : unknown()), { ttlMs: 60_000, feedHealthy: true });
    expect(await codeOf(cache.get(hash))).toBe('auth_invalid');
    exists = true;
    cache.drop(hash);
    expect(await cache.get(hash)).toEqual(record);
  });

  it('keeps a bounded number of misses', async () => {
    let lookups = 0;
    const cache = new KeyCache(
      () => {
        lookups++;
        return unknown();
      },
      { ttlMs: 60_000, maxNegativeEntries: 2, failuresPerMinute: 1_000 },
    );
    for (const n of [1, 2, 3, 1]) await codeOf(cache.get(h(n)));
    expect(lookups).toBe(4); // 1 was pushed out by 3
  });

  it('throttles failed lookups per address per minute, then lets them through again', async () => {
    let now = 0;
    let lookups = 0;
    const cache = new KeyCache(
      () => {
        lookups++;
        return unknown();
      },
      { ttlMs: 60_000, failuresPerMinute: 3, now: () => now },
    );
    for (let n = 0; n < 3; n++) expect(await codeOf(cache.get(Buffer.from([n]), '1.2.3.4'))).toBe('auth_invalid');
    const refused = await cache.get(Buffer.from([9]), '1.2.3.4').catch((e: GatewayError) => e);
    expect(refused).toMatchObject({ code: 'rate_limit_exceeded', details: { limit_type: 'failed_authentications', retry_after_seconds: 60 } });
    expect(lookups).toBe(3);
    expect(await codeOf(cache.get(Buffer.from([9]), '5.6.7.8'))).toBe('auth_invalid');
    now = 60_000;
    expect(await codeOf(cache.get(Buffer.from([10]), '1.2.3.4'))).toBe('auth_invalid');
  });
});

describe('KeyCache: revocation fails closed (issue 20 finding 2)', () => {
  it('while the feed is not healthy an entry is trusted for a second only; healthy again, the cache is fresh', async () => {
    let now = 0;
    let current = record;
    let lookups = 0;
    const cache = new KeyCache(
      () => {
        lookups++;
        return Promise.resolve(current);
      },
      { ttlMs: 60_000, unhealthyTtlMs: 1_000, feedHealthy: true, now: () => now },
    );
    await cache.get(hash);
    now = 30_000;
    expect(await cache.get(hash)).toBe(record); // healthy: the revocation event would have dropped it
    expect(lookups).toBe(1);
    cache.setFeedHealthy(false); // NATS down: the key is revoked, and no event can say so
    current = { ...record, revokedAtMs: 1 };
    expect((await cache.get(hash)).revokedAtMs).toBe(1); // cached 30 s ago: re-checked at once
    now = 30_999;
    await cache.get(hash);
    expect(lookups).toBe(2);
    now = 31_000;
    await cache.get(hash);
    expect(lookups).toBe(3);
    cache.setFeedHealthy(true);
    await cache.get(hash);
    expect(lookups).toBe(4); // events may have been missed: nothing cached is kept
  });

  it('starts not healthy unless told otherwise', () => {
    expect(new KeyCache(() => Promise.resolve(record), { ttlMs: 1 }).feedHealthy).toBe(false);
  });
});

describe('KeyCache: a throttled address', () => {
  it('still re-checks a key known to exist (its entry expired), and refuses new lookups', async () => {
    let now = 0;
    const cache = new KeyCache((key) => (key[0] === 0xaa ? Promise.resolve(record) : unknown()), { ttlMs: 1_000, failuresPerMinute: 1, feedHealthy: true, now: () => now });
    await cache.get(hash, '1.2.3.4');
    expect(await codeOf(cache.get(h(1), '1.2.3.4'))).toBe('auth_invalid');
    now = 2_000; // the known key's entry expired; the address is over its failures
    expect(await cache.get(hash, '1.2.3.4')).toEqual(record);
    expect(await codeOf(cache.get(h(2), '1.2.3.4'))).toBe('rate_limit_exceeded');
  });
});
