import type { EntityManager } from '@mikro-orm/postgresql';
import { ProviderSync } from '../db/entities.ts';
import { announceChange } from './models.ts';

/** The one thing sync needs of a provider adapter: its real model listing. */
export interface ModelLister {
  readonly name: string;
  listModels(opts?: { timeoutMs?: number }): Promise<string[]>;
}

/**
 * Asks each provider which models it serves now and records the evidence with its time. A failed
 * listing keeps the last good evidence (so staleness is judged from `last_success_at`) and records
 * why.
 */
export async function syncProviders(em: EntityManager, providers: ModelLister[], now: () => Date, timeoutMs: number): Promise<ProviderSync[]> {
  const results: ProviderSync[] = [];
  for (const provider of providers) {
    const listed = await provider.listModels({ timeoutMs }).then(
      (models) => ({ ok: true as const, models: [...new Set(models)].sort() }),
      (err: unknown) => ({ ok: false as const, error: err instanceof Error ? err.message : String(err) }),
    );
    const saved = await em.transactional(async (tx) => {
      const existing = await tx.findOne(ProviderSync, { provider: provider.name });
      const at = now();
      const row =
        existing ??
        tx.create(ProviderSync, { provider: provider.name, lastAttemptAt: at, lastSuccessAt: null, servedModels: [], lastError: null });
      row.lastAttemptAt = at;
      if (listed.ok) {
        row.lastSuccessAt = at;
        row.servedModels = listed.models;
        row.lastError = null;
        // Gateways judge staleness from the success time in their snapshot, so every success
        // (not only a changed listing) makes them reload.
        announceChange(tx, '');
      } else {
        row.lastError = listed.error.slice(0, 500);
      }
      await tx.flush();
      return row;
    });
    results.push(saved);
  }
  return results;
}
