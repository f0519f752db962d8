import { commonEnv, loadConfig, trustProxyEnv } from '@gw/service-kit';
import { z } from 'zod';
import { KEY_CACHE_DEFAULTS } from './auth/key-cache.ts';
import { DEFAULT_HTTP_TIMEOUTS } from './http/timeouts.ts';

const schema = z.object({
  ...commonEnv,
  GATEWAY_HOST: z.string().default('127.0.0.1'),
  GATEWAY_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /** Public base path; `content_url` and every route live below it (DECISIONS.md). */
  PUBLIC_BASE_PATH: z
    .string()
    .regex(/^\/[A-Za-z0-9/_-]*[^/]$/, 'must start with / and not end with /')
    .default('/v1'),
  BILLING_ADDR: z.string().min(1),
  CATALOG_ADDR: z.string().min(1),
  TEXT_ADDR: z.string().min(1),
  MEDIA_ADDR: z.string().min(1),
  VIDEO_JOBS_ADDR: z.string().min(1),
  /** How long a key lookup is trusted without a revocation event (safety net for missed events). */
  KEY_CACHE_TTL_MS: z.coerce.number().int().positive().default(60_000),
  /**
   * How long a key lookup is trusted while the revocation feed (NATS) is disconnected or not
   * answering: a revoked key then fails within this plus one billing lookup, on every route.
   */
  KEY_CACHE_UNHEALTHY_TTL_MS: z.coerce.number().int().positive().default(KEY_CACHE_DEFAULTS.unhealthyTtlMs),
  /** How long billing's "no such key" is remembered (a key cannot be looked up before it exists but by guessing). */
  KEY_NEGATIVE_TTL_MS: z.coerce.number().int().positive().default(KEY_CACHE_DEFAULTS.negativeTtlMs),
  /**
   * The proxies in front whose `X-Forwarded-For` entries are believed (failed key lookups are
   * counted per client address): `false` (none: the peer is the client), or their addresses, CIDRs
   * or proxy-addr's names (`loopback`, `linklocal`, `uniquelocal`), comma-separated. Behind an
   * ingress without it, every client has the ingress's address and shares one count. Not `true`:
   * that believes the leftmost entry, which the client writes itself.
   */
  GATEWAY_TRUST_PROXY: trustProxyEnv(),
  /** Lookups of keys that do not exist one client address may cause per minute; then 429 until the minute ends. */
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().positive().default(KEY_CACHE_DEFAULTS.failuresPerMinute),
  /** Time from a connection (or its previous request) to the end of the request headers. */
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().positive().default(DEFAULT_HTTP_TIMEOUTS.headersTimeoutMs),
  /** Time to receive a whole request, body included (a steady 32 MiB upload at 110 KB/s fits 5 minutes). */
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(DEFAULT_HTTP_TIMEOUTS.requestTimeoutMs),
  /** A body that stops arriving is cut after this long without a byte (400, connection closed). */
  HTTP_BODY_IDLE_TIMEOUT_MS: z.coerce.number().int().positive().default(DEFAULT_HTTP_TIMEOUTS.bodyIdleTimeoutMs),
  /** An idle keep-alive connection is closed after this long (above load balancers' usual 60 s). */
  HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().positive().default(DEFAULT_HTTP_TIMEOUTS.keepAliveTimeoutMs),
  /** Safety-net reload of switches and the catalog snapshot, should an event be missed. */
  STATE_REFRESH_MS: z.coerce.number().int().positive().default(5_000),
  /**
   * Request body bytes held at once by this replica, and by one account on it, counted as they
   * arrive (a declared Content-Length reserves nothing). A request costs 4
   * to 6 times its body in memory: six 30 MiB chat requests at once took a replica to 892 MiB;
   * with these defaults (three of them admitted) it peaks near 590 MiB, under its 768 MiB pod limit.
   */
  BODY_BUDGET_BYTES: z.coerce.number().int().positive().default(96 * 1024 * 1024),
  BODY_BUDGET_PER_ACCOUNT_BYTES: z.coerce.number().int().positive().default(64 * 1024 * 1024),
});

export type GatewayConfig = z.infer<typeof schema>;

export function gatewayConfig(env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  return loadConfig(schema, env);
}
