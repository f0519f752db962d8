/** Time bounds of each phase of a request on the public port (config.ts names their settings). */
export interface HttpTimeouts {
  /** From the connection (or the previous request on it) to the end of the request headers. */
  headersTimeoutMs: number;
  /** The whole request (headers and body) received: a slow but steady 32 MiB upload needs minutes. */
  requestTimeoutMs: number;
  /** A body that stops arriving: no byte for this long (enforced by the body meter, `meterBody`). */
  bodyIdleTimeoutMs: number;
  /** An idle keep-alive connection between requests. */
  keepAliveTimeoutMs: number;
}

/**
 * The defaults. No deadline bounds the answer: a text answer may take minutes before its first
 * byte, bounded by the text service's own deadlines (upstream first byte included); a streamed
 * answer that its client stops reading is dropped by the SSE writer.
 */
export const DEFAULT_HTTP_TIMEOUTS: HttpTimeouts = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 300_000,
  bodyIdleTimeoutMs: 30_000,
  // Above the 60 s idle timeout of common load balancers, so that they close first (no request
  // sent on a connection this end is closing).
  keepAliveTimeoutMs: 72_000,
};

/**
 * How often Node checks the headers and request deadlines of open connections: a deadline is
 * enforced within this much after it passes (Node's default is 30 s).
 */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

/** Fastify's server options for these bounds (Fastify's own default `requestTimeout` is 0: none). */
export function serverTimeoutOptions(t: HttpTimeouts) {
  return {
    requestTimeout: t.requestTimeoutMs,
    keepAliveTimeout: t.keepAliveTimeoutMs,
    // A socket idle while its answer is computed is fine; each phase has its own bound above.
    connectionTimeout: 0,
    http: { headersTimeout: t.headersTimeoutMs, connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS },
  };
}
