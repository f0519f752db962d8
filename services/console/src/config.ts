import { commonEnv, envBool, loadConfig, trustProxyEnv } from '@gw/service-kit';
import { z } from 'zod';
import { DEFAULT_THROTTLE } from './auth/throttle.ts';

const minutes = (fallback: number) => z.coerce.number().int().positive().default(fallback);

const schema = z.object({
  ...commonEnv,
  CONSOLE_HOST: z.string().default('127.0.0.1'),
  CONSOLE_PORT: z.coerce.number().int().min(0).max(65535).default(8081),
  /**
   * The origin browsers use to reach the console (e.g. `https://console.example.com`): the only
   * origin set-password links are built on (never the request's Host, which a client writes), and
   * the origin every form must come from. Unset: links use the address the console listens on
   * (local runs), and forms the request's own Host. The Helm chart sets it.
   */
  CONSOLE_PUBLIC_URL: z.url().optional(),
  DATABASE_URL: z.string().min(1),
  DB_POOL_MAX: z.coerce.number().int().positive().default(5),
  MIGRATE_ON_START: envBool(true),
  BILLING_ADDR: z.string().min(1),
  CATALOG_ADDR: z.string().min(1),
  /** Keys the HMACs of session ids, CSRF tokens, set-password tokens and throttle subjects. */
  SESSION_SECRET: z.string().min(32, 'must be at least 32 characters'),
  /**
   * Bearer token of the operator endpoint (`/internal/...`); unset or empty turns that endpoint
   * off (compose passes an empty value when the operator set none).
   */
  CONSOLE_ADMIN_TOKEN: z.preprocess((v) => (v === '' ? undefined : v), z.string().min(32, 'must be at least 32 characters').optional()),
  /**
   * A port of their own for the operator endpoints (`/internal/*`, used by `pnpm admin user` and
   * `member`), on CONSOLE_HOST: then the pages' port does not serve them at all. Unset: beside
   * the pages (answering direct connections only).
   */
  CONSOLE_ADMIN_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** Only for local plain-http runs: drops the `Secure` cookie attribute. */
  CONSOLE_INSECURE_COOKIES: envBool(false),
  /**
   * The proxies in front whose `X-Forwarded-For` entries are believed (the client address counts
   * sign-in failures per IP): `false` (none: the peer is the client), or their addresses, CIDRs or
   * proxy-addr's names (`loopback`, `linklocal`, `uniquelocal`: the private ranges an ingress
   * controller's pods usually have), comma-separated. The client is then the rightmost address
   * that is not one of them. Not `true`: that believes the leftmost entry, which the client writes
   * itself, so a client could count its failures under any address, another person's too.
   */
  CONSOLE_TRUST_PROXY: trustProxyEnv(),
  /** Most keys (not revoked) one account may have; the dashboard refuses to create more. */
  CONSOLE_MAX_KEYS_PER_ACCOUNT: z.coerce.number().int().positive().default(100),
  SESSION_IDLE_MINUTES: minutes(30),
  SESSION_MAX_MINUTES: minutes(12 * 60),
  /** Lifetime of an invitation link (a member who has no password yet). */
  SET_PASSWORD_TTL_MINUTES: minutes(72 * 60),
  /** Lifetime of a password reset link (a member who has a password). */
  RESET_PASSWORD_TTL_MINUTES: minutes(60),
  /** Sign-in throttling (growing delays, never a lock; see `src/auth/throttle.ts`). */
  LOGIN_FREE_FAILURES_PER_PAIR: z.coerce.number().int().positive().default(DEFAULT_THROTTLE.freePerPair),
  LOGIN_FREE_FAILURES_PER_EMAIL: z.coerce.number().int().positive().default(DEFAULT_THROTTLE.freePerEmail),
  LOGIN_FREE_FAILURES_PER_IP: z.coerce.number().int().positive().default(DEFAULT_THROTTLE.freePerIp),
  LOGIN_MAX_DELAY_MINUTES: minutes(DEFAULT_THROTTLE.maxDelayMs / 60_000),
  LOGIN_FAILURE_HALF_LIFE_MINUTES: minutes(DEFAULT_THROTTLE.halfLifeMs / 60_000),
});

export type ConsoleConfig = z.infer<typeof schema>;

export function consoleConfig(env: NodeJS.ProcessEnv = process.env): ConsoleConfig {
  return loadConfig(schema, env);
}
