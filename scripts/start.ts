import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { billingV1, catalogV1, createClient } from '@gw/contracts';
import { DATA_DIR, ensureDatabase, resolveNats, resolvePostgres } from './infra.ts';
import { DEMO_MODELS } from './demo-models.ts';
import { startSystem } from './system.ts';

/**
 * `pnpm start`: the whole gateway on local defaults. Finds or starts PostgreSQL and NATS, starts
 * every service, the account dashboard and the provider simulator, seeds a demo account, key,
 * dashboard member and models on first start, and stops everything it started on Ctrl-C.
 */
const log = (line: string) => process.stdout.write(`[start] ${line}\n`);
const SEED_FILE = join(DATA_DIR, 'seed.json');

const postgres = await resolvePostgres(log);
await ensureDatabase(postgres.url);
const nats = await resolveNats(log);
const gatewayPort = Number(process.env.GATEWAY_PORT ?? 8080);
const consolePort = Number(process.env.CONSOLE_PORT ?? 8081);

/** The dashboard's session secret, made once and kept (owner-only) so sign-ins survive a restart. */
function consoleSessionSecret(): string {
  const file = join(DATA_DIR, 'console-session-secret');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(DATA_DIR, { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(file, secret, { mode: 0o600 });
  return secret;
}

const system = await startSystem({
  databaseUrl: postgres.url,
  natsUrl: nats.url,
  gatewayPort,
  consolePort,
  consoleSessionSecret: consoleSessionSecret(),
  // Internal gRPC ports are picked free: fixed ones in the ephemeral range (50051+) can be taken by any
  // outgoing connection. `pnpm admin` finds them in .data/local-run.json.
  internalPorts: 'random',
  logs: 'inherit',
}).catch(async (err: unknown) => {
  await nats.stop?.();
  await postgres.stop?.();
  throw err;
});
// From here on, Ctrl-C (or SIGTERM) stops everything this command started, seeding included.
let stopping = false;
async function stopAll(): Promise<void> {
  if (stopping) return;
  stopping = true;
  log('stopping...');
  await system.stop();
  await nats.stop?.();
  await postgres.stop?.();
  log('stopped');
  process.exit(0);
}
process.on('SIGINT', () => void stopAll());
process.on('SIGTERM', () => void stopAll());
mkdirSync(DATA_DIR, { recursive: true });
// Read by `pnpm admin` (git-ignored, local only): the addresses, and the console's operator token.
writeFileSync(
  join(DATA_DIR, 'local-run.json'),
  JSON.stringify({
    billing: system.billingAddr,
    catalog: system.catalogAddr,
    baseUrl: system.baseUrl,
    console: system.consoleUrl,
    consoleAdminToken: system.consoleAdminToken,
  }),
  { mode: 0o600 },
);

const billing = createClient(billingV1.BillingService, system.billingAddr);
const catalog = createClient(catalogV1.CatalogService, system.catalogAddr);

const DEMO_EMAIL = 'demo@example.com';

/**
 * The dashboard member of the demo account, with a generated password printed once. Made through
 * the console's operator endpoint (the console owns members); null when it exists already.
 */
async function demoMember(accountId: string): Promise<string | null> {
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
    : [`dashboard login: ${DEMO_EMAIL} (its password was printed when it was made;`, `  a new member: pnpm admin user create --account <id> --email <e> --json)`];
}

/** Seeds once per database: the seed file remembers which database got the demo account. */
async function seed(): Promise<string[]> {
  let previous: { databaseUrl?: string; accountId?: string } = {};
  try {
    previous = JSON.parse(readFileSync(SEED_FILE, 'utf8')) as typeof previous;
  } catch {
    // first start
  }
  for (const model of DEMO_MODELS) await catalog.upsertModel({ model });
  if (previous.databaseUrl === postgres.url && previous.accountId) {
    const ok = await billing.getWallet({ accountId: previous.accountId }).then(() => true, () => false);
    if (ok) {
      return [
        `demo account: ${previous.accountId} (its key was printed at first start;`,
        `  make another: pnpm admin key create --account ${previous.accountId} --json)`,
        // A seed from before the dashboard existed gets its member now.
        ...memberLines(await demoMember(previous.accountId)),
      ];
    }
  }
  const { accountId } = await billing.createAccount({ name: 'demo' });
  await billing.topUp({ accountId, credits: 1_000_000n, reference: `demo-seed:${accountId}` });
  const { apiKey } = await billing.createApiKey({ accountId, name: 'demo' });
  writeFileSync(SEED_FILE, JSON.stringify({ databaseUrl: postgres.url, accountId }));
  return [
    `demo account: ${accountId} with 1,000,000 credits`,
    `demo API key (shown once, keep it): ${apiKey}`,
    ...memberLines(await demoMember(accountId)),
  ];
}

const lines = await seed();
billing.close();
catalog.close();
log('----------------------------------------------------------------');
log(`generation gateway ready at ${system.baseUrl}`);
log(`account dashboard at ${system.consoleUrl}`);
for (const l of lines) log(l);
log(`try: curl -H "Authorization: Bearer <key>" ${system.baseUrl}/models`);
log('press Ctrl-C to stop everything this command started');
log('----------------------------------------------------------------');
