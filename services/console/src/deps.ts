import type { FastifyBaseLogger } from 'fastify';
import type { Sessions } from './auth/sessions.ts';
import type { LoginThrottle } from './auth/throttle.ts';
import type { Hmac } from './auth/secrets.ts';
import type { AlertsClient, BillingClient, CatalogClient } from './billing/clients.ts';
import type { CookieSettings } from './http/cookies.ts';
import type { Members } from './members/members.ts';
import type { Passkeys } from './auth/passkeys.ts';

/** What the app is built with (`main.ts` makes them, tests make their own). */
export interface ConsoleDeps {
  billing: BillingClient;
  alerts: AlertsClient;
  catalog: CatalogClient;
  sessions: Sessions;
  throttle: LoginThrottle;
  members: Members;
  /** Passkeys as a second factor; undefined (off) without `CONSOLE_PUBLIC_URL` (the relying party). */
  passkeys?: Passkeys | undefined;
  hmac: Hmac;
  logger: FastifyBaseLogger;
  /** Origin browsers use (config); undefined: the request's own scheme and Host. */
  publicOrigin: string | undefined;
  /**
   * The origin set-password links are built on: the configured public URL, else the address the
   * console listens on (known once it listens). Never the request's Host (a forged Host would
   * make a link to another site).
   */
  linkOrigin: () => string;
  secureCookies: boolean;
  /** Bearer token of `/internal/*`; undefined turns those routes off. */
  adminToken: string | undefined;
  /** `/internal/*` is served by `buildAdminApp` on a port of its own, not beside the pages. */
  adminOnOwnPort?: boolean;
  /** Fastify's `trustProxy`: none, or which proxies (see `CONSOLE_TRUST_PROXY`). */
  trustProxy: false | string[];
  /** Most keys (not revoked) an account may have; creating another is refused. */
  maxKeysPerAccount: number;
  isReady: () => boolean;
  now?: () => Date;
}

/** What every route plugin gets: the deps plus the derived cookie settings. */
export interface RouteDeps extends ConsoleDeps {
  cookies: CookieSettings;
  now: () => Date;
  /** The origin forms must come from, and links are built on. */
  originOf: (request: { protocol: string; host: string }) => string;
}
