import { fromBinary } from '@bufbuild/protobuf';
import { billingV1, catalogV1, createClient, eventsV1, LONG_ANSWERS_KEEPALIVE_TIMEOUT_MS, mediaV1, textV1, videoV1 } from '@gw/contracts';
import { BytesBudget, collectGarbageWhenIdle, collectStartupGarbage, connectNats, createLogger, onShutdown, startTelemetry, subscribeBroadcast, writeReadyFile, type NatsConnection, type Subscription } from '@gw/service-kit';
import { buildApp } from './app.ts';
import { watchInvalidationFeed } from './auth/invalidation-feed.ts';
import { KeyCache, toKeyRecord } from './auth/key-cache.ts';
import { gatewayConfig } from './config.ts';
import { createMoneyExchange } from './generation/billing-exchange.ts';
import { createGenerateExchange } from './generation/text-exchange.ts';
import { CatalogCache } from './state/catalog-cache.ts';
import { coalescedReload } from './state/reloader.ts';
import { SwitchState } from './state/switches.ts';

const config = gatewayConfig();
const telemetry = startTelemetry({
  serviceName: 'edge-gateway',
  otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
  metricsPort: config.METRICS_PORT,
});
const logger = createLogger('edge-gateway', config.LOG_LEVEL);

const billing = createClient(billingV1.BillingService, config.BILLING_ADDR);
const money = createMoneyExchange(config.BILLING_ADDR);
const catalog = createClient(catalogV1.CatalogService, config.CATALOG_ADDR);
const text = createClient(textV1.TextService, config.TEXT_ADDR);
// Every text answer shares one stream: a message past grpc-js's 4 MiB default would break it for all.
const generate = createGenerateExchange(config.TEXT_ADDR, { maxReceiveBytes: 64 * 1024 * 1024, keepaliveTimeoutMs: LONG_ANSWERS_KEEPALIVE_TIMEOUT_MS });
// Up to four images of up to 8 MB each come back in one answer.
const media = createClient(mediaV1.MediaService, config.MEDIA_ADDR, { maxReceiveBytes: 64 * 1024 * 1024, keepaliveTimeoutMs: LONG_ANSWERS_KEEPALIVE_TIMEOUT_MS });
const videoJobs = createClient(videoV1.VideoJobsService, config.VIDEO_JOBS_ADDR, { keepaliveTimeoutMs: LONG_ANSWERS_KEEPALIVE_TIMEOUT_MS });
// Fails closed: until NATS is connected and answering, a cached key is trusted for a second only.
const keys = new KeyCache(async (hash) => toKeyRecord(await billing.lookupApiKey({ keyHash: hash })), {
  ttlMs: config.KEY_CACHE_TTL_MS,
  unhealthyTtlMs: config.KEY_CACHE_UNHEALTHY_TTL_MS,
  negativeTtlMs: config.KEY_NEGATIVE_TTL_MS,
  failuresPerMinute: config.AUTH_FAILURES_PER_MINUTE,
  feedHealthy: false,
});
const switches = new SwitchState();
const catalogCache = new CatalogCache();
const warn = (what: string) => (err: unknown) => logger.warn({ err }, `${what} failed`);
const reloadSwitches = coalescedReload(async () => switches.set(await billing.getSwitches({})), warn('switch reload'));
const reloadCatalog = coalescedReload(async () => catalogCache.replace(await catalog.getSnapshot({})), warn('catalog reload'));
// Which text routes the deployment's route health has opened (docs/routing.md); events keep it current.
const reloadRouteHealth = coalescedReload(async () => catalogCache.routeHealth.replace((await text.listRouteHealth({})).routes), warn('route health reload'));
void reloadRouteHealth();
await Promise.all([reloadSwitches(), reloadCatalog()]);

// Revocations, switch and catalog changes reach every replica as broadcast events. Events missed
// while disconnected are covered by dropping the key cache and reloading on (re)connect, and by a
// periodic reload as a safety net. NATS is not waited for: a replica must start during a NATS
// outage too (billing refuses money to revoked and expired keys whatever this cache says).
const resync = () => {
  keys.clear();
  void reloadSwitches();
  void reloadCatalog();
  void reloadRouteHealth();
};
const ns = config.EVENTS_NAMESPACE;
const subscriptions: Subscription[] = [];
let nats: NatsConnection | undefined;
let stopFeedWatch = () => {};
void connectNats(config.NATS_URL, 'edge-gateway', { logger, onReconnect: resync }).then((nc) => {
  nats = nc;
  subscriptions.push(
    subscribeBroadcast(nc, ns, 'billing.key.revoked', (data) => keys.drop(fromBinary(eventsV1.ApiKeyRevokedSchema, data).keyHash), logger),
    subscribeBroadcast(nc, ns, 'billing.key.changed', (data) => keys.drop(fromBinary(eventsV1.ApiKeyChangedSchema, data).keyHash), logger),
    subscribeBroadcast(nc, ns, 'billing.switch.changed', (data) => switches.set(fromBinary(eventsV1.SwitchesChangedSchema, data)), logger),
    subscribeBroadcast(nc, ns, 'catalog.model.changed', () => void reloadCatalog(), logger),
    subscribeBroadcast(nc, ns, 'text.route.opened', (data) => catalogCache.routeHealth.apply(fromBinary(eventsV1.RouteHealthChangedSchema, data)), logger),
    subscribeBroadcast(nc, ns, 'text.route.closed', (data) => catalogCache.routeHealth.apply(fromBinary(eventsV1.RouteHealthChangedSchema, data)), logger),
  );
  logger.info('nats connected');
  resync(); // what was announced before the first connection was missed too
  stopFeedWatch = watchInvalidationFeed(nc, (healthy) => {
    if (healthy !== keys.feedHealthy) logger.warn({ healthy }, healthy ? 'revocation feed healthy: keys cached again' : 'revocation feed not healthy: keys re-checked with billing every second');
    keys.setFeedHealthy(healthy);
  });
});
const safetyNet = setInterval(() => {
  void reloadSwitches();
  void reloadCatalog();
  void reloadRouteHealth();
}, config.STATE_REFRESH_MS);
safetyNet.unref();

let ready = false;
const app = await buildApp({
  billing,
  money,
  catalog,
  text,
  generate,
  media,
  videoJobs,
  keys,
  switches,
  catalogCache,
  bodyBudget: new BytesBudget({ totalBytes: config.BODY_BUDGET_BYTES, perOwnerBytes: config.BODY_BUDGET_PER_ACCOUNT_BYTES }),
  logger,
  basePath: config.PUBLIC_BASE_PATH,
  trustProxy: config.GATEWAY_TRUST_PROXY,
  httpTimeouts: {
    headersTimeoutMs: config.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT_MS,
    bodyIdleTimeoutMs: config.HTTP_BODY_IDLE_TIMEOUT_MS,
    keepAliveTimeoutMs: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
  },
  isReady: () => ready && catalogCache.loaded,
});
collectStartupGarbage();
const address = await app.listen({ host: config.GATEWAY_HOST, port: config.GATEWAY_PORT });
ready = true;
const baseUrl = `${address.replace('[::1]', '127.0.0.1')}${config.PUBLIC_BASE_PATH}`;
logger.info({ url: baseUrl }, 'edge-gateway listening');
writeReadyFile(config.READY_FILE, baseUrl);
collectGarbageWhenIdle(logger);

onShutdown(logger, config.SHUTDOWN_TIMEOUT_MS, [
  async () => {
    ready = false; // readiness drops first so load balancers stop sending
  },
  () => app.close(),
  async () => {
    clearInterval(safetyNet);
    stopFeedWatch();
    for (const s of subscriptions) s.unsubscribe();
    await nats?.drain();
  },
  async () => {
    for (const client of [money, generate, billing, catalog, text, media, videoJobs]) client.close();
  },
  () => telemetry.shutdown(),
]);
