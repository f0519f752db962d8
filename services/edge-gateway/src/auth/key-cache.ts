import type { billingV1 } from '@gw/contracts';

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

/**
 * Caches key lookups by key hash so that an authenticated request costs no billing round trip.
 * Revocation events drop entries at once; the TTL bounds staleness if an event is ever missed,
 * and a NATS reconnect clears everything. Concurrent misses for one key share one lookup.
 */
export class KeyCache {
  readonly #entries = new Map<string, { record: KeyRecord; at: number }>();
  readonly #pending = new Map<string, Promise<KeyRecord>>();
  readonly #lookup: Lookup;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  /** Counts drops and clears: a lookup that a drop overtook is answered but not cached. */
  #epoch = 0;

  constructor(lookup: Lookup, opts: { ttlMs: number; maxEntries?: number; now?: () => number }) {
    this.#lookup = lookup;
    this.#ttlMs = opts.ttlMs;
    this.#maxEntries = opts.maxEntries ?? 100_000;
    this.#now = opts.now ?? Date.now;
  }

  async get(hash: Buffer): Promise<KeyRecord> {
    const id = hash.toString('hex');
    const hit = this.#entries.get(id);
    if (hit && this.#now() - hit.at < this.#ttlMs) return hit.record;
    const inFlight = this.#pending.get(id);
    if (inFlight) return inFlight;
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
      .finally(() => {
        if (this.#pending.get(id) === p) this.#pending.delete(id);
      });
    this.#pending.set(id, p);
    return p;
  }

  /** Forgets a key (it was revoked): later requests look it up again, none joins a lookup already under way. */
  drop(hash: Uint8Array): void {
    const id = Buffer.from(hash).toString('hex');
    this.#epoch++;
    this.#entries.delete(id);
    this.#pending.delete(id);
  }

  clear(): void {
    this.#epoch++;
    this.#entries.clear();
    this.#pending.clear();
  }
}
