import { catalogV1 } from '@gw/contracts';
import { ProviderRegistry } from '@gw/providers';
import { audited, loadConfig, runGrpcService } from '@gw/service-kit';
import { z } from 'zod';
import { catalogEntities } from './db/entities.ts';
import { catalogMigrations } from './db/migrations/index.ts';
import { startPeriodicSync } from './domain/sync-schedule.ts';
import { CATALOG_AUDITED, recordCatalogAudit } from './grpc/audited.ts';
import { catalogHandler } from './grpc/catalog.handler.ts';

const env = loadConfig(
  z.object({
    /** How often each provider is asked what it serves. */
    PROVIDER_SYNC_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
    /** A provider without a successful sync for this long is stale (`provider_catalog_stale`). */
    PROVIDER_SYNC_MAX_AGE_MS: z.coerce.number().int().positive().default(600_000),
    PROVIDER_SYNC_TIMEOUT_MS: z.coerce.number().int().positive().default(15_000),
  }),
);
const providers = ProviderRegistry.fromEnv();
const now = () => new Date();

await runGrpcService({
  name: 'catalog',
  defaultPort: 50052,
  database: { schema: 'catalog', entities: catalogEntities, migrations: catalogMigrations },
  outbox: true,
  register: ({ orm, logger, onStop }) => {
    const deps = {
      orm,
      providers: providers.list(),
      countsTokens: (name: string) => providers.get(name)?.countTokens !== undefined,
      protocols: providers.list().map((p) => ({ provider: p.name, textDialects: [...p.textDialects] })),
      maxSyncAgeMs: env.PROVIDER_SYNC_MAX_AGE_MS,
      syncTimeoutMs: env.PROVIDER_SYNC_TIMEOUT_MS,
      now,
    };
    onStop(startPeriodicSync(deps, env.PROVIDER_SYNC_INTERVAL_MS, logger));
    onStop(() => providers.close());
    return [[catalogV1.CatalogService, audited('catalog', catalogHandler(deps), CATALOG_AUDITED, recordCatalogAudit, orm, logger)]];
  },
});
