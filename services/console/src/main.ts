import { alertsV1, billingV1, catalogV1, createClient } from '@gw/contracts';
import { collectGarbageWhenIdle, collectStartupGarbage, createLogger, onShutdown, runMigrations, startTelemetry, writeReadyFile } from '@gw/service-kit';
import { buildAdminApp, buildApp } from './app.ts';
import { startHousekeeping } from './auth/housekeeping.ts';
import { Hmac } from './auth/secrets.ts';
import { Sessions } from './auth/sessions.ts';
import { LoginThrottle } from './auth/throttle.ts';
import { consoleConfig } from './config.ts';
import { consoleOrm } from './db/orm.ts';
import { listenOrigin } from './http/origins.ts';
import { Members } from './members/members.ts';
import { Passkeys } from './auth/passkeys.ts';

const config = consoleConfig();
const telemetry = startTelemetry({ serviceName: 'console', otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT, metricsPort: config.METRICS_PORT });
const logger = createLogger('console', config.LOG_LEVEL);
process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'));

const orm = await consoleOrm(config.DATABASE_URL, undefined, config.DB_POOL_MAX);
if (config.MIGRATE_ON_START) {
  const applied = await runMigrations(orm);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
}
const billing = createClient(billingV1.AccountService, config.BILLING_ADDR);
const alerts = createClient(alertsV1.AlertsService, config.BILLING_ADDR);
const catalog = createClient(catalogV1.CatalogService, config.CATALOG_ADDR);

const minute = 60_000;
const hmac = new Hmac(config.SESSION_SECRET);
const sessions = new Sessions(orm, hmac, { idleMs: config.SESSION_IDLE_MINUTES * minute, maxMs: config.SESSION_MAX_MINUTES * minute });
const throttle = new LoginThrottle(orm, hmac, {
  freePerPair: config.LOGIN_FREE_FAILURES_PER_PAIR,
  freePerEmail: config.LOGIN_FREE_FAILURES_PER_EMAIL,
  freePerIp: config.LOGIN_FREE_FAILURES_PER_IP,
  maxDelayMs: config.LOGIN_MAX_DELAY_MINUTES * minute,
  halfLifeMs: config.LOGIN_FAILURE_HALF_LIFE_MINUTES * minute,
});
const members = new Members(orm, hmac, sessions, {
  inviteMs: config.SET_PASSWORD_TTL_MINUTES * minute,
  resetMs: config.RESET_PASSWORD_TTL_MINUTES * minute,
});
const publicOrigin = config.CONSOLE_PUBLIC_URL ? new URL(config.CONSOLE_PUBLIC_URL).origin : undefined;
if (!publicOrigin) logger.warn('CONSOLE_PUBLIC_URL is not set: set-password links name the address the console listens on, and passkeys are off');
// The relying party of passkeys is the public URL: never the request's Host.
const passkeys = config.CONSOLE_PUBLIC_URL ? new Passkeys(orm, hmac, config.CONSOLE_PUBLIC_URL) : undefined;
const stopHousekeeping = startHousekeeping(
  { sessions: () => sessions.sweep(), throttle: () => throttle.sweep(), tokens: () => members.sweepTokens(), notices: () => members.sweepNotices() },
  10 * minute,
  logger,
);

let ready = false;
/** The origin of the address listened on (the port is known once listening): links when no public URL is set. */
let listening = listenOrigin(config.CONSOLE_HOST, config.CONSOLE_PORT);
const deps = {
  billing,
  alerts,
  catalog,
  sessions,
  throttle,
  members,
  passkeys,
  hmac,
  logger,
  publicOrigin,
  linkOrigin: () => publicOrigin ?? listening,
  secureCookies: !config.CONSOLE_INSECURE_COOKIES,
  adminToken: config.CONSOLE_ADMIN_TOKEN,
  adminOnOwnPort: config.CONSOLE_ADMIN_PORT !== undefined,
  trustProxy: config.CONSOLE_TRUST_PROXY,
  maxKeysPerAccount: config.CONSOLE_MAX_KEYS_PER_ACCOUNT,
  isReady: () => ready,
};
const app = await buildApp(deps);
const adminApp = config.CONSOLE_ADMIN_PORT === undefined ? undefined : await buildAdminApp(deps);
if (config.CONSOLE_INSECURE_COOKIES) logger.warn('CONSOLE_INSECURE_COOKIES=true: cookies are sent over plain http (local use only)');
collectStartupGarbage();
const address = await app.listen({ host: config.CONSOLE_HOST, port: config.CONSOLE_PORT });
listening = listenOrigin(config.CONSOLE_HOST, (app.server.address() as { port: number }).port);
if (adminApp) {
  const adminAddress = await adminApp.listen({ host: config.CONSOLE_HOST, port: config.CONSOLE_ADMIN_PORT });
  logger.info({ url: adminAddress }, 'console operator endpoints listening');
}
ready = true;
const url = address.replace('[::1]', '127.0.0.1');
logger.info({ url }, 'console listening');
writeReadyFile(config.READY_FILE, url);
collectGarbageWhenIdle(logger);

onShutdown(logger, config.SHUTDOWN_TIMEOUT_MS, [
  async () => {
    ready = false; // readiness drops first so load balancers stop sending
  },
  () => app.close(),
  async () => {
    await adminApp?.close();
  },
  () => stopHousekeeping(),
  () => {
    billing.close();
    alerts.close();
    catalog.close();
  },
  () => orm.close(),
  () => telemetry.shutdown(),
]);
