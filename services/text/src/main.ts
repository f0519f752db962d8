import { catalogV1, createClient, textV1 } from '@gw/contracts';
import { FallbackRouter, LocalRouteHealth, ProviderRegistry, RouteHealthBoard } from '@gw/providers';
import { BytesBudget, envBool, loadConfig, runGrpcService, subscribeBroadcast } from '@gw/service-kit';
import { z } from 'zod';
import { textHandler } from './grpc/text.handler.ts';
import { CATALOG_CHANGED_SUBJECT, CatalogFollower } from './health/live-routes.ts';
import { probeWith } from './health/probe.ts';
import { SharedRouteHealth } from './health/shared-route-health.ts';

const env = loadConfig(
  z.object({
    /** Route health (docs/routing.md). Off: no route is ever rested (tests of fallback itself). */
    ROUTE_HEALTH: envBool(true),
    /** The evidence window, and what in it opens a route. */
    ROUTE_WINDOW_MS: z.coerce.number().int().positive().default(30_000),
    ROUTE_MIN_FAILURES: z.coerce.number().int().positive().default(5),
    ROUTE_ERROR_RATE: z.coerce.number().gt(0).max(1).default(0.5),
    ROUTE_MIN_ACCOUNTS: z.coerce.number().int().positive().default(3),
    /** The first probe of an open route, doubling per failed probe up to the maximum. */
    ROUTE_PROBE_INTERVAL_MS: z.coerce.number().int().positive().default(1_000),
    ROUTE_MAX_PROBE_INTERVAL_MS: z.coerce.number().int().positive().default(5_000),
    ROUTE_PROBE_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
    /** The longest rest an upstream Retry-After imposes. */
    ROUTE_MAX_REST_MS: z.coerce.number().int().positive().default(300_000),
    /** An answer's first-event deadline per route (streamed or complete), for models that set none. */
    FIRST_BYTE_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
    /**
     * The catalog, to know which routes live models use: the others are no longer probed and
     * are forgotten. Unset: every route the service has seen is kept.
     */
    CATALOG_ADDR: z.string().min(1).optional(),
    /** How often the catalog is read again besides on its change events. */
    CATALOG_REFRESH_MS: z.coerce.number().int().positive().default(60_000),
    /** Request body bytes held at once, from every gateway: a request costs 4 to 6 times its body in memory (pod limit 768 MiB). */
    BODY_BUDGET_BYTES: z.coerce.number().int().positive().default(96 * 1024 * 1024),
  }),
);
const providers = ProviderRegistry.fromEnv();
const budget = new BytesBudget({ totalBytes: env.BODY_BUDGET_BYTES, perOwnerBytes: env.BODY_BUDGET_BYTES });
const board = new RouteHealthBoard({
  policy: {
    windowMs: env.ROUTE_WINDOW_MS,
    minFailures: env.ROUTE_MIN_FAILURES,
    errorRate: env.ROUTE_ERROR_RATE,
    minAccounts: env.ROUTE_MIN_ACCOUNTS,
    probeIntervalMs: env.ROUTE_PROBE_INTERVAL_MS,
    maxProbeIntervalMs: env.ROUTE_MAX_PROBE_INTERVAL_MS,
    probeTimeoutMs: env.ROUTE_PROBE_TIMEOUT_MS,
    maxRestMs: env.ROUTE_MAX_REST_MS,
  },
});
const router = new FallbackRouter({ health: env.ROUTE_HEALTH ? board : new LocalRouteHealth({ failureThreshold: Number.POSITIVE_INFINITY }) });

await runGrpcService({
  name: 'text',
  defaultPort: 50053,
  register: ({ env: serviceEnv, logger, meter, whenNats, onStop }) => {
    const health = new SharedRouteHealth({ board, probe: probeWith(providers), logger, meter, namespace: serviceEnv.EVENTS_NAMESPACE });
    health.run();
    whenNats((nats) => health.attach(nats));
    onStop(() => health.stop());
    if (env.CATALOG_ADDR !== undefined) {
      const catalog = createClient(catalogV1.CatalogService, env.CATALOG_ADDR, { defaultTimeoutMs: 10_000 });
      const follower = new CatalogFollower({ load: () => catalog.getSnapshot({}), retain: (routes) => health.retainOnly(routes), logger, refreshMs: env.CATALOG_REFRESH_MS });
      follower.start();
      whenNats((nats) => {
        const sub = subscribeBroadcast(nats, serviceEnv.EVENTS_NAMESPACE, CATALOG_CHANGED_SUBJECT, () => void follower.reload(), logger);
        // Changes announced before the subscription were missed.
        void follower.reload();
        return () => sub.unsubscribe();
      });
      onStop(() => {
        follower.stop();
        catalog.close();
      });
    }
    onStop(() => providers.close());
    return [[textV1.TextService, textHandler({ providers, router, now: Date.now, firstByteTimeoutMs: env.FIRST_BYTE_TIMEOUT_MS }, budget, () => health.list())]];
  },
});
