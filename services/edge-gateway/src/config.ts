import { commonEnv, loadConfig } from '@gw/service-kit';
import { z } from 'zod';

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
  /** Safety-net reload of switches and the catalog snapshot, should an event be missed. */
  STATE_REFRESH_MS: z.coerce.number().int().positive().default(5_000),
  /**
   * Request body bytes held at once by this replica, and by one account on it. A request costs 4
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
