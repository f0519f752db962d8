import type { billingV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { LRUCache } from 'lru-cache';

/** What the gateway needs of a key to authenticate a request. */
export interface KeyRecord {
  keyId: string;
  accountId: string;
  revokedAtMs: number;
  expiresAtMs: number;
}

type Lookup = (hash: Buffer) => Promise<KeyRecord>;

export function toKeyRecord(res: billingV1.LookupApiKeyResponse): KeyRecord {
  return {
    keyId: res.keyId,
    accountId: res.accountId,
    revokedAtMs: Number(res.revokedAtUnixMs),
    expiresAtMs: Number(res.expiresAtUnixMs),
  };
}

export interface KeyCacheOptions {
  /** How long a lookup is trusted while the invalidation feed is healthy (a missed event's bound). */
  ttlMs: number;
  /** How long a lookup is trusted while the feed is not healthy: revocation then takes effect within this and one lookup. */
  unhealthyTtlMs?: number;
  /** How long billing's "no such key" is remembered (no key can be looked up before it is created but by guessing it). */
  negativeTtlMs?: number;
  /** Failed lookups (unknown keys) one client address may cause per minute; past it, 429 until the minute ends. */
  failuresPerMinute?: number;
  maxEntries?: number;
  maxNegativeEntries?: number;
  /** Whether the feed is healthy at start; a gateway starts without it (fails closed) until NATS is connected. */
  feedHealthy?: boolean;
  now?: () => number;
}

export const KEY_CACHE_DEFAULTS = {
  unhealthyTtlMs: 1_000,
  negativeTtlMs: 5_000,
  failuresPerMinute: 30,
  maxNegativeEntries: 10_000,
  /** Addresses whose failures are counted at once; the least recent are forgotten first. */
  maxAddresses: 100_000,
} as const;

const MINUTE_MS = 60_000;
const unknownKey = () => new GatewayError('auth_invalid', 'The API key does not exist.');

/** A looked-up key and when billing's answer came. */
interface Entry {
  record: KeyRecord;
  at: number;
}

/** What the request that starts a lookup gives it: the key's hash and the client's address. */
interface LookupContext {
  hash: Buffer;
  address: string;
}

/**
 * Caches key lookups by key hash so that an authenticated request costs no billing round trip.
 *
 * - Revocation events drop entries at once; the TTL bounds staleness if an event is ever missed,
 *   and a NATS reconnect clears everything. While the invalidation feed is not healthy (NATS
 *   disconnected or not answering, see `watchInvalidationFeed`), an entry is trusted for one
 *   second only, so a revoked key fails within about a second on every route (fails closed).
 * - Concurrent misses for one key share one lookup (lru-cache's `fetch`). A drop or clear aborts a
 *   lookup under way: its answer still goes to the requests that asked before, is not cached, and
 *   no later request joins it (`ignoreFetchAbort`).
 * - Billing's "no such key" is remembered for a few seconds (bounded LRU), and each client address
 *   may cause only so many failed lookups a minute (`rate_limit_exceeded` past it), so random
 *   well-formed keys cannot each cost billing a database read.
 */
export class KeyCache {
  /** Looked-up keys, least recently used forgotten first; how long one is trusted is decided on each read. */
  readonly #entries: LRUCache<string, Entry, LookupContext>;
  /** Unknown key hashes, to when they are forgotten. */
  readonly #unknown: LRUCache<string, number>;
  /** Failed lookups per client address in its current minute. */
  readonly #failures = new LRUCache<string, { count: number; since: number }>({ max: KEY_CACHE_DEFAULTS.maxAddresses });
  readonly #lookup: Lookup;
  readonly #ttlMs: number;
  readonly #unhealthyTtlMs: number;
  readonly #negativeTtlMs: number;
  readonly #failuresPerMinute: number;
  readonly #now: () => number;
  #feedHealthy: boolean;

  constructor(lookup: Lookup, opts: KeyCacheOptions) {
    this.#lookup = lookup;
    this.#ttlMs = opts.ttlMs;
    this.#unhealthyTtlMs = Math.min(opts.unhealthyTtlMs ?? KEY_CACHE_DEFAULTS.unhealthyTtlMs, opts.ttlMs);
    this.#negativeTtlMs = opts.negativeTtlMs ?? KEY_CACHE_DEFAULTS.negativeTtlMs;
    this.#failuresPerMinute = opts.failuresPerMinute ?? KEY_CACHE_DEFAULTS.failuresPerMinute;
    this.#unknown = new LRUCache({ max: opts.maxNegativeEntries ?? KEY_CACHE_DEFAULTS.maxNegativeEntries });
    this.#feedHealthy = opts.feedHealthy ?? false;
    this.#now = opts.now ?? Date.now;
    this.#entries = new LRUCache<string, Entry, LookupContext>({
      max: opts.maxEntries ?? 100_000,
      fetchMethod: (id, expired, { signal, context }) => this.#fetch(id, expired, signal, context),
      ignoreFetchAbort: true,
      // A lookup that fails (billing unreachable) leaves an expired entry as it was.
      noDeleteOnFetchRejection: true,
    });
  }

  get feedHealthy(): boolean {
    return this.#feedHealthy;
  }

  /**
   * The invalidation feed's health. Unhealthy: entries are trusted for `unhealthyTtlMs` only.
   * Healthy again: everything is forgotten, as events may have been missed meanwhile.
   */
  setFeedHealthy(healthy: boolean): void {
    if (healthy && !this.#feedHealthy) this.clear();
    this.#feedHealthy = healthy;
  }

  /** The key's record; `address` is the client's, whose failed lookups are counted and bounded. */
  async get(hash: Buffer, address = ''): Promise<KeyRecord> {
    const id = hash.toString('hex');
    const now = this.#now();
    const hit = this.#entries.get(id);
    if (hit && now - hit.at < (this.#feedHealthy ? this.#ttlMs : this.#unhealthyTtlMs)) return hit.record;
    const unknownUntil = this.#unknown.get(id);
    if (unknownUntil !== undefined && unknownUntil > now) {
      this.#countFailure(address, now);
      throw unknownKey();
    }
    // An expired entry is looked up again; a lookup already under way is joined.
    const entry = await this.#entries.fetch(id, { forceRefresh: hit !== undefined, context: { hash, address } });
    if (entry === undefined) throw new Error('key lookup gave no answer'); // the fetch method always answers or throws
    return entry.record;
  }

  /** One lookup of billing, started by the request `context` names. */
  async #fetch(id: string, expired: Entry | undefined, signal: AbortSignal, { hash, address }: LookupContext): Promise<Entry> {
    // A key known to exist (its entry only expired) is re-checked whatever its address did.
    if (!expired) this.#assertNotThrottled(address, this.#now());
    try {
      return { record: await this.#lookup(hash), at: this.#now() };
    } catch (err) {
      if (err instanceof GatewayError && err.code === 'auth_invalid') {
        // A drop or clear while billing answered may postdate what it read.
        if (!signal.aborted) this.#unknown.set(id, this.#now() + this.#negativeTtlMs);
        this.#countFailure(address, this.#now());
      }
      throw err;
    }
  }

  #countFailure(address: string, now: number): void {
    const window = this.#failures.get(address);
    if (window && now - window.since < MINUTE_MS) window.count++;
    else this.#failures.set(address, { count: 1, since: now });
  }

  /** 429 before a lookup when this address already caused its minute's failed lookups. */
  #assertNotThrottled(address: string, now: number): void {
    const window = this.#failures.get(address);
    if (!window || now - window.since >= MINUTE_MS || window.count < this.#failuresPerMinute) return;
    const retryAfter = Math.max(1, Math.ceil((window.since + MINUTE_MS - now) / 1000));
    throw new GatewayError(
      'rate_limit_exceeded',
      `Too many requests with API keys that do not exist came from this address. Check the key; retry in ${retryAfter} s.`,
      { limit_type: 'failed_authentications', retry_after_seconds: retryAfter },
    );
  }

  /** Forgets a key (revoked or changed): later requests look it up again, none joins a lookup already under way. */
  drop(hash: Uint8Array): void {
    const id = Buffer.from(hash).toString('hex');
    this.#entries.delete(id);
    this.#unknown.delete(id);
  }

  clear(): void {
    this.#entries.clear();
    this.#unknown.clear();
  }
}
