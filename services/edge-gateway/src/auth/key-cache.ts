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

/**
 * Caches key lookups by key hash so that an authenticated request costs no billing round trip.
 *
 * - Revocation events drop entries at once; the TTL bounds staleness if an event is ever missed,
 *   and a NATS reconnect clears everything. While the invalidation feed is not healthy (NATS
 *   disconnected or not answering, see `watchInvalidationFeed`), an entry is trusted for one
 *   second only, so a revoked key fails within about a second on every route (fails closed).
 * - Concurrent misses for one key share one lookup.
 * - Billing's "no such key" is remembered for a few seconds (bounded LRU), and each client address
 *   may cause only so many failed lookups a minute (`rate_limit_exceeded` past it), so random
 *   well-formed keys cannot each cost billing a database read.
 */
export class KeyCache {
  readonly #entries = new Map<string, { record: KeyRecord; at: number }>();
  readonly #pending = new Map<string, Promise<KeyRecord>>();
  /** Unknown key hashes, to when they are forgotten. */
  readonly #unknown: LRUCache<string, number>;
  /** Failed lookups per client address in its current minute. */
  readonly #failures = new LRUCache<string, { count: number; since: number }>({ max: KEY_CACHE_DEFAULTS.maxAddresses });
  readonly #lookup: Lookup;
  readonly #ttlMs: number;
  readonly #unhealthyTtlMs: number;
  readonly #negativeTtlMs: number;
  readonly #failuresPerMinute: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  #feedHealthy: boolean;
  /** Counts drops and clears: a lookup that a drop overtook is answered but not cached. */
  #epoch = 0;

  constructor(lookup: Lookup, opts: KeyCacheOptions) {
    this.#lookup = lookup;
    this.#ttlMs = opts.ttlMs;
    this.#unhealthyTtlMs = Math.min(opts.unhealthyTtlMs ?? KEY_CACHE_DEFAULTS.unhealthyTtlMs, opts.ttlMs);
    this.#negativeTtlMs = opts.negativeTtlMs ?? KEY_CACHE_DEFAULTS.negativeTtlMs;
    this.#failuresPerMinute = opts.failuresPerMinute ?? KEY_CACHE_DEFAULTS.failuresPerMinute;
    this.#maxEntries = opts.maxEntries ?? 100_000;
    this.#unknown = new LRUCache({ max: opts.maxNegativeEntries ?? KEY_CACHE_DEFAULTS.maxNegativeEntries });
    this.#feedHealthy = opts.feedHealthy ?? false;
    this.#now = opts.now ?? Date.now;
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
    const inFlight = this.#pending.get(id);
    if (inFlight) return inFlight;
    // A key known to exist (its entry only expired) is re-checked whatever its address did.
    if (!hit) this.#assertNotThrottled(address, now);
    const epoch = this.#epoch;
    const p = this.#lookup(hash)
      .then((record) => {
        // A revocation that arrived while billing answered may postdate what it read.
        if (epoch !== this.#epoch) return record;
        this.#entries.delete(id);
        if (this.#entries.size >= this.#maxEntries) {
          const oldest = this.#entries.keys().next().value;
          if (oldest !== undefined) this.#entries.delete(oldest);
        }
        this.#entries.set(id, { record, at: this.#now() });
        return record;
      })
      .catch((err: unknown) => {
        if (err instanceof GatewayError && err.code === 'auth_invalid') {
          if (epoch === this.#epoch) this.#unknown.set(id, this.#now() + this.#negativeTtlMs);
          this.#countFailure(address, this.#now());
        }
        throw err;
      })
      .finally(() => {
        if (this.#pending.get(id) === p) this.#pending.delete(id);
      });
    this.#pending.set(id, p);
    return p;
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
    this.#epoch++;
    this.#entries.delete(id);
    this.#pending.delete(id);
    this.#unknown.delete(id);
  }

  clear(): void {
    this.#epoch++;
    this.#entries.clear();
    this.#pending.clear();
    this.#unknown.clear();
  }
}
