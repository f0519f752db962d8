import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** A path as the user can type it: relative to where they are when under it. */
const shown = (path: string) => (path.startsWith(`${process.cwd()}/`) ? relative(process.cwd(), path) : path);
import { billingV1, catalogV1, createClient } from '@gw/contracts';
import { DATA_DIR, deploymentIdFor, EMBEDDED_PG_PORT, ensureDatabase, eventsNamespaceFor, needsEmbeddedPostgres, needsOwnNats, OWN_NATS_PORT, resolveNats, resolvePostgres, type Infra } from './infra.ts';
import { DEMO_MODELS } from './demo-models.ts';
import { checkPorts, freePort, portFromEnv, StartRefusal, type PortNeed } from './ports.ts';
import { startSystem, type RunningSystem, type ServiceName } from './system.ts';

/**
 * `pnpm start`: the whole gateway on local defaults. Checks every port it needs, finds or starts
 * PostgreSQL and NATS, starts every service, the account dashboard and the provider simulator
 * (their logs go to .data/logs), restarts a service that dies, seeds a demo account, key, dashboard
 * member and models on first start, prints what to do next last, and stops everything it started
 * on Ctrl-C.
 */
const log = (line: string) => process.stdout.write(`[start] ${line}\n`);
const SEED_FILE = join(DATA_DIR, 'seed.json');
const LOG_DIR = join(DATA_DIR, 'logs');
const DEMO_EMAIL = 'demo@example.com';
/** Processes that serve metrics (the simulator stands in for the providers and has none). */
const METERED: ServiceName[] = ['billing', 'catalog', 'text', 'media', 'video-jobs', 'edge-gateway', 'console'];

/** The dashboard's session secret, made once and kept (owner-only) so sign-ins survive a restart. */
function consoleSessionSecret(): string {
  const file = join(DATA_DIR, 'console-session-secret');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(DATA_DIR, { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(file, secret, { mode: 0o600 });
  return secret;
}

/**
 * The token every service asks of its callers (SERVICE_TOKEN), made once per data folder and kept
 * owner-only: the services, this script's seeding and `pnpm admin` (through local-run.json) send it.
 * An operator's own SERVICE_TOKEN wins.
 */
function serviceToken(): string {
  if (process.env.SERVICE_TOKEN) return process.env.SERVICE_TOKEN;
  const file = join(DATA_DIR, 'service-token');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(DATA_DIR, { recursive: true });
  const token = randomBytes(32).toString('base64url');
  writeFileSync(file, token, { mode: 0o600 });
  return token;
}

/** The last run's logs are kept as .data/logs.previous; this run writes .data/logs/<service>.log. */
function freshLogDir(): string {
  const previous = `${LOG_DIR}.previous`;
  if (existsSync(LOG_DIR)) {
    rmSync(previous, { recursive: true, force: true });
    renameSync(LOG_DIR, previous);
  }
  mkdirSync(LOG_DIR, { recursive: true });
  return LOG_DIR;
}

async function main(): Promise<void> {
  const gatewayPort = portFromEnv('GATEWAY_PORT', 8080);
  const consolePort = portFromEnv('CONSOLE_PORT', 8081);
  // Every port is checked before anything starts.
  const needs: PortNeed[] = [
    { variable: 'GATEWAY_PORT', port: gatewayPort },
    { variable: 'CONSOLE_PORT', port: consolePort },
  ];
  if (await needsEmbeddedPostgres()) {
    needs.push({ variable: 'DATABASE_URL', port: EMBEDDED_PG_PORT, label: `port ${EMBEDDED_PG_PORT} (for the embedded PostgreSQL)`, remedy: 'set DATABASE_URL to a PostgreSQL server' });
  }
  if (await needsOwnNats()) {
    needs.push({ variable: 'NATS_URL', port: OWN_NATS_PORT, label: `port ${OWN_NATS_PORT} (for a NATS server of our own)`, remedy: 'set NATS_URL to a NATS server with JetStream' });
  }
  await checkPorts(needs);

  const infra: Infra[] = [];
  const stopInfra = async () => {
    for (const i of infra.toReversed()) await i.stop?.();
  };
  let system: RunningSystem;
  let postgresUrl: string;
  let eventsNamespace: string;
  const metricsPorts: Partial<Record<ServiceName, number>> = {};
  try {
    const postgres = await resolvePostgres(log);
    infra.push(postgres);
    postgresUrl = postgres.url;
    await ensureDatabase(postgres.url);
    infra.push(await resolveNats(log));
    eventsNamespace = eventsNamespaceFor(postgres.url);
    for (const name of METERED) metricsPorts[name] = await freePort();
    // Set here too: the seeding below calls billing and catalog, whose clients read it.
    process.env.SERVICE_TOKEN = serviceToken();
    const logs = process.env.START_LOGS === 'inherit' ? 'inherit' : freshLogDir();
    log(`starting the services (logs: ${logs === 'inherit' ? 'here' : `${shown(logs)}/<service>.log`})...`);
    system = await startSystem({
      databaseUrl: postgres.url,
      natsUrl: infra[1]!.url,
      eventsNamespace,
      deploymentId: deploymentIdFor(postgres.url),
      gatewayPort,
      consolePort,
      consoleSessionSecret: consoleSessionSecret(),
      env: { SERVICE_TOKEN: process.env.SERVICE_TOKEN },
      // Internal gRPC ports are picked free: fixed ones in the ephemeral range (50051+) can be taken by any
      // outgoing connection. `pnpm admin` finds them in .data/local-run.json.
      internalPorts: 'random',
      logs,
      metricsPorts,
      supervise: { report: log },
    });
  } catch (err) {
    await stopInfra();
    throw err;
  }

  // From here on, Ctrl-C (or SIGTERM) stops everything this command started, seeding included.
  let stopping = false;
  async function stopAll(): Promise<void> {
    if (stopping) return;
    stopping = true;
    log('stopping...');
    await system.stop();
    await stopInfra();
    log('stopped');
    process.exit(0);
  }
  process.on('SIGINT', () => void stopAll());
  process.on('SIGTERM', () => void stopAll());

  try {
    await announce(system, postgresUrl, eventsNamespace, metricsPorts);
  } catch (err) {
    await system.stop();
    await stopInfra();
    throw err;
  }
}

/** Records the run for `pnpm admin`, seeds the demo account on first start, and prints the banner last. */
async function announce(system: RunningSystem, postgresUrl: string, eventsNamespace: string, metricsPorts: Partial<Record<ServiceName, number>>): Promise<void> {
  const metrics = Object.fromEntries(METERED.map((name) => [name, `http://127.0.0.1:${metricsPorts[name]}/metrics`]));
  mkdirSync(DATA_DIR, { recursive: true });
  // Read by `pnpm admin` (git-ignored, local only): the addresses, and the console's operator token.
  writeFileSync(
    join(DATA_DIR, 'local-run.json'),
    JSON.stringify(
      {
        billing: system.billingAddr,
        catalog: system.catalogAddr,
        text: system.textAddr,
        baseUrl: system.baseUrl,
        console: system.consoleUrl,
        consoleAdminToken: system.consoleAdminToken,
        serviceToken: process.env.SERVICE_TOKEN,
        eventsNamespace,
        metrics,
        logs: process.env.START_LOGS === 'inherit' ? null : LOG_DIR,
      },
      null,
      2,
    ),
    { mode: 0o600 },
  );

  const seeded = await seed(system, postgresUrl);
  const key = seeded.apiKey ?? '<your gwk_ key>';
  const lines = [
    '----------------------------------------------------------------',
    `generation gateway ready at ${system.baseUrl}  (API reference: ${system.baseUrl}/docs)`,
    `account dashboard at ${system.consoleUrl}`,
    ...seeded.lines,
    ...(process.env.PROVIDERS
      ? ['PROVIDERS is set: no demo models were added; add yours: pnpm admin model upsert --id <id> --kind TEXT --route <provider>:<upstream model> --price <credits>']
      : []),
    `try: curl -H "Authorization: Bearer ${key}" ${system.baseUrl}/models`,
    `metrics: ${METERED.map((n) => `${n} :${metricsPorts[n]}`).join(', ')} (http://127.0.0.1:<port>/metrics)`,
    `logs: ${process.env.START_LOGS === 'inherit' ? 'above' : `${shown(LOG_DIR)}/<service>.log`}; addresses: ${shown(join(DATA_DIR, 'local-run.json'))}`,
    'in another shell, first: source scripts/toolchain.sh   (puts node and pnpm on PATH), then: pnpm admin --help',
    'press Ctrl-C to stop everything this command started',
    '----------------------------------------------------------------',
  ];
  for (const l of lines) log(l);
}

/**
 * The dashboard member of the demo account, with a generated password printed once. Made through
 * the console's operator endpoint (the console owns members); null when it exists already.
 */
async function demoMember(system: RunningSystem, accountId: string): Promise<string | null> {
  const res = await fetch(`${system.consoleUrl}/internal/members`, {
    method: 'POST',
    headers: { authorization: `Bearer ${system.consoleAdminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ account_id: accountId, email: DEMO_EMAIL, generate_password: true }),
  });
  if (res.status === 409) return null;
  if (!res.ok) throw new Error(`creating the demo dashboard member failed: HTTP ${res.status}`);
  return ((await res.json()) as { password: string }).password;
}

function memberLines(password: string | null): string[] {
  return password
    ? [`dashboard login (shown once, keep it): ${DEMO_EMAIL} / ${password}`]
    : [
        `dashboard login: ${DEMO_EMAIL} (its password was shown at first start)`,
        `  lost it? pnpm admin user reset-password --email ${DEMO_EMAIL}   (prints a one-time link to choose a new one)`,
      ];
}

/** Seeds once per database: the seed file remembers which database got the demo account. */
async function seed(system: RunningSystem, databaseUrl: string): Promise<{ lines: string[]; apiKey?: string }> {
  const billingAdmin = createClient(billingV1.BillingAdminService, system.billingAddr);
  const accounts = createClient(billingV1.AccountService, system.billingAddr);
  const catalog = createClient(catalogV1.CatalogService, system.catalogAddr);
  try {
    let previous: { databaseUrl?: string; accountId?: string } = {};
    try {
      previous = JSON.parse(readFileSync(SEED_FILE, 'utf8')) as typeof previous;
    } catch {
      // first start
    }
    // The demo models are served by the simulator; with real providers the operator adds their own.
    if (!process.env.PROVIDERS) for (const model of DEMO_MODELS) await catalog.upsertModel({ model });
    if (previous.databaseUrl === databaseUrl && previous.accountId) {
      const ok = await accounts.getWallet({ accountId: previous.accountId }).then(() => true, () => false);
      if (ok) {
        return {
          lines: [
            `demo account: ${previous.accountId} (its API key was shown at first start)`,
            `  lost it? pnpm admin key create --account ${previous.accountId}   (a new key; revoke the old: pnpm admin key list / key revoke)`,
            // A seed from before the dashboard existed gets its member now.
            ...memberLines(await demoMember(system, previous.accountId)),
          ],
        };
      }
    }
    const { accountId } = await billingAdmin.createAccount({ name: 'demo' });
    await billingAdmin.topUp({ accountId, credits: 1_000_000n, reference: `demo-seed:${accountId}` });
    const { apiKey } = await accounts.createApiKey({ accountId, name: 'demo' });
    writeFileSync(SEED_FILE, JSON.stringify({ databaseUrl, accountId }));
    return {
      apiKey,
      lines: [
        `demo account: ${accountId} with 1,000,000 credits`,
        `demo API key (shown once, keep it): ${apiKey}`,
        ...memberLines(await demoMember(system, accountId)),
      ],
    };
  } finally {
    billingAdmin.close();
    accounts.close();
    catalog.close();
  }
}

try {
  await main();
} catch (err) {
  // One line for the user, never a stack trace: a refusal says what to change.
  const message = err instanceof StartRefusal ? err.message : `could not start: ${(err as Error).message}`;
  process.stderr.write(`[start] ${message}\n`);
  process.exit(1);
}
