import type { billingV1, catalogV1, mediaV1, MethodsOf, ServiceClient, textV1, videoV1 } from '@gw/contracts';
import type { BytesBudget } from '@gw/service-kit';
import type { FastifyBaseLogger } from 'fastify';
import type { KeyCache } from './auth/key-cache.ts';
import type { MoneyCalls } from './generation/billing-exchange.ts';
import type { GenerateCalls } from './generation/text-exchange.ts';
import type { HttpTimeouts } from './http/timeouts.ts';
import type { CatalogCache } from './state/catalog-cache.ts';
import type { SwitchState } from './state/switches.ts';

/** What the app and its routes are built with (`main.ts` makes them, tests make their own). */
export interface GatewayDeps {
  billing: ServiceClient<MethodsOf<typeof billingV1.BillingService>>;
  /** Authorize, settle and release of every billed request, over billing's exchange stream. */
  money: MoneyCalls;
  catalog: ServiceClient<MethodsOf<typeof catalogV1.CatalogService>>;
  text: ServiceClient<MethodsOf<typeof textV1.TextService>>;
  /** Text answers, complete or streamed, over the text service's exchange stream. */
  generate: GenerateCalls;
  media: ServiceClient<MethodsOf<typeof mediaV1.MediaService>>;
  videoJobs: ServiceClient<MethodsOf<typeof videoV1.VideoJobsService>>;
  keys: KeyCache;
  switches: SwitchState;
  catalogCache: CatalogCache;
  /** Request body bytes this replica holds at once, per account and in all, counted as they arrive. */
  bodyBudget: BytesBudget;
  /** Fastify's `trustProxy`: none, or which proxies in front (`GATEWAY_TRUST_PROXY`); the client address counts failed key lookups. */
  trustProxy?: false | string[];
  /** Time bounds of the phases of a request; `DEFAULT_HTTP_TIMEOUTS` for those not given. */
  httpTimeouts?: Partial<HttpTimeouts>;
  logger: FastifyBaseLogger;
  basePath: string;
  /** Readiness: false before start-up completes and from the first moment of shutdown. */
  isReady: () => boolean;
  now?: () => number;
}
