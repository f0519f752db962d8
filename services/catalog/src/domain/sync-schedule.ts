import { startPeriodic, type Logger } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { syncProviders, type ModelLister } from './provider-sync.ts';

export interface SyncDeps {
  orm: MikroORM;
  providers: ModelLister[];
  syncTimeoutMs: number;
  now: () => Date;
}

/**
 * Syncs every provider at start and then every `intervalMs` (rounds never overlap). A failed
 * listing is recorded and logged; the model stays served on its last good evidence until that is
 * older than the configured maximum age. Returns the stop function.
 */
export function startPeriodicSync(deps: SyncDeps, intervalMs: number, logger: Logger): () => Promise<void> {
  return startPeriodic({ name: 'provider sync', intervalMs, logger }, async () => {
    const results = await syncProviders(deps.orm.em.fork(), deps.providers, deps.now, deps.syncTimeoutMs);
    for (const r of results) {
      if (r.lastError) logger.warn({ provider: r.provider, error: r.lastError }, 'provider listing failed');
    }
  });
}
