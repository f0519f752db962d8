import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { billingV1, catalogV1, createClient } from '@gw/contracts';
import { DATA_DIR, ensureDatabase, resolveNats, resolvePostgres } from './infra.ts';
import { DEMO_MODELS } from './demo-models.ts';
import { startSystem } from './system.ts';

/**
 * `pnpm start`: the whole gateway on local defaults. Finds or starts PostgreSQL and NATS, starts
 * every service and the provider simulator, seeds a demo account, key and models on first start,
 * and stops everything it started on Ctrl-C.
 */
const log = (line: string) => process.stdout.write(`[start] ${line}\n`);
const SEED_FILE = join(DATA_DIR, 'seed.json');

const postgres = await resolvePostgres(log);
await ensureDatabase(postgres.url);
const nats = await resolveNats(log);
const gatewayPort = Number(process.env.GATEWAY_PORT ?? 8080);

const system = await startSystem({
  databaseUrl: postgres.url,
  natsUrl: nats.url,
  gatewayPort,
  // Internal gRPC ports are picked free: fixed ones in the ephemeral range (50051+) can be taken by any
  // outgoing connection. `pnpm admin` finds them in .data/local-run.json.
  internalPorts: 'random',
  logs: 'inherit',
}).catch(async (err: unknown) => {
  await nats.stop?.();
  await postgres.stop?.();
  throw err;
});
mkdirSync(DATA_DIR, { recursive: true });
writeFileSync(
  join(DATA_DIR, 'local-run.json'),
  JSON.stringify({ billing: system.billingAddr, catalog: system.catalogAddr, baseUrl: system.baseUrl }),
);

const billing = createClient(billingV1.BillingService, system.billingAddr);
const catalog = createClient(catalogV1.CatalogService, system.catalogAddr);

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
  ];
}

const lines = await seed();
billing.close();
catalog.close();
log('----------------------------------------------------------------');
log(`generation gateway ready at ${system.baseUrl}`);
for (const l of lines) log(l);
log(`try: curl -H "Authorization: Bearer <key>" ${system.baseUrl}/models`);
log('press Ctrl-C to stop everything this command started');
log('----------------------------------------------------------------');

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
