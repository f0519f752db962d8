import type { Provider } from './types.ts';

/** One request as received, so tests can assert what the gateway forwarded. */
export interface LoggedRequest {
  seq: number;
  time: string;
  provider: Provider;
  method: string;
  /** URL path and query, with any `key=` credential removed. */
  path: string;
  model: string | null;
  /** A few correlation headers (never credentials). */
  headers: Record<string, string>;
  /** Parsed JSON body, multipart fields (files summarised), or null. Long strings are shortened. */
  body: unknown;
}

/** Bodies above this size are copied with long strings shortened, so the log stays small in memory. */
const LARGE_BODY_BYTES = 64 * 1024;
const KEPT_STRING_CHARS = 256;

function shortenStrings(value: unknown): unknown {
  if (typeof value === 'string') {
    return value.length > KEPT_STRING_CHARS ? `${value.slice(0, KEPT_STRING_CHARS)}...(${value.length} chars)` : value;
  }
  if (Array.isArray(value)) return value.map(shortenStrings);
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = shortenStrings(v);
    return out;
  }
  return value;
}

/** A ring buffer of recent requests. */
export class RequestLog {
  private readonly capacity: number;
  private entries: LoggedRequest[] = [];
  private seq = 0;

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  record(entry: Omit<LoggedRequest, 'seq' | 'time' | 'body'>, body: unknown, bodyBytes: number): void {
    this.seq += 1;
    // Small bodies are kept by reference: handlers never mutate request bodies.
    const kept = bodyBytes > LARGE_BODY_BYTES ? shortenStrings(body) : body;
    this.entries.push({ seq: this.seq, time: new Date().toISOString(), ...entry, body: kept ?? null });
    if (this.entries.length > this.capacity * 2) this.entries = this.entries.slice(-this.capacity);
  }

  /** The most recent `limit` entries, oldest first, optionally filtered. */
  list(limit: number, filter: { provider?: string; model?: string; path?: string }): LoggedRequest[] {
    const matching = this.entries.filter(
      (e) =>
        (filter.provider === undefined || e.provider === filter.provider) &&
        (filter.model === undefined || e.model === filter.model) &&
        (filter.path === undefined || e.path.includes(filter.path)),
    );
    return matching.slice(-Math.min(limit, this.capacity));
  }

  clear(): void {
    this.entries = [];
  }
}
