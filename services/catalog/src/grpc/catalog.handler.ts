import type { catalogV1, MethodsOf, ServiceImpl } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { listAuditEvents } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { ProviderSync } from '../db/entities.ts';
import { addAlias, allModels, isListingHidden, removeAlias, setEnabled, setListingHidden, setPrice, storedToProto, toProto, upsertModel } from '../domain/models.ts';
import type { ModelLister } from '../domain/provider-sync.ts';
import { syncProviders } from '../domain/provider-sync.ts';

export interface CatalogDeps {
  orm: MikroORM;
  providers: ModelLister[];
  /** Whether a configured provider has its own token counter (what `messages/count_tokens` needs). */
  countsTokens: (provider: string) => boolean;
  /** The text protocols of each configured provider, as the snapshot tells the gateways. */
  protocols: Array<{ provider: string; textDialects: string[] }>;
  maxSyncAgeMs: number;
  syncTimeoutMs: number;
  now: () => Date;
}

const ms = (d: Date | null | undefined) => (d ? BigInt(new Date(d).getTime()) : 0n);
const syncProto = (s: ProviderSync) => ({
  provider: s.provider,
  lastSuccessUnixMs: ms(s.lastSuccessAt),
  servedModels: s.servedModels,
  lastAttemptUnixMs: ms(s.lastAttemptAt),
  lastError: s.lastError ?? '',
});

/** The CatalogService rpcs. Each call works in its own forked EntityManager. */
export function catalogHandler(deps: CatalogDeps): ServiceImpl<MethodsOf<typeof catalogV1.CatalogService>> {
  const em = () => deps.orm.em.fork();
  return {
    listModels: async (req) => {
      const e = em();
      const { models, routes, aliases } = await allModels(e);
      const listed = req.listableOnly ? models.filter((m) => m.enabled && m.price !== null) : models;
      return { models: listed.map((m) => toProto(m, routes, aliases)), listingHidden: await isListingHidden(e) };
    },
    upsertModel: async (req) => {
      if (!req.model) throw new GatewayError('invalid_request', 'model is required');
      const configured = (name: string) => deps.providers.some((p) => p.name === name);
      return { model: storedToProto(await upsertModel(em(), req.model, { configured, counts: deps.countsTokens })) };
    },
    setPrice: async (req) => ({ model: storedToProto(await setPrice(em(), req.modelId, req.priceCreditPerUnit)) }),
    setEnabled: async (req) => ({ model: storedToProto(await setEnabled(em(), req.modelId, req.enabled)) }),
    addAlias: async (req) => ({ model: storedToProto(await addAlias(em(), req.modelId, req.alias)) }),
    removeAlias: async (req) => ({ model: storedToProto(await removeAlias(em(), req.alias)) }),
    setListingHidden: async (req) => ({ hidden: await setListingHidden(em(), req.hidden) }),
    listAuditEvents: async (req) => ({
      events: (await listAuditEvents(em(), null, req.limit)).map((e) => ({
        eventId: e.id,
        actor: e.actor,
        origin: e.origin,
        action: e.action,
        details: e.details,
        createdAtUnixMs: ms(e.created_at),
      })),
    }),
    syncProviders: async () => ({
      providers: (await syncProviders(em(), deps.providers, deps.now, deps.syncTimeoutMs)).map(syncProto),
    }),
    getSnapshot: async () => {
      const e = em();
      const { models, routes, aliases } = await allModels(e);
      const syncs = await e.find(ProviderSync, {});
      return {
        models: models.map((m) => toProto(m, routes, aliases)),
        providers: syncs.map(syncProto),
        listingHidden: await isListingHidden(e),
        maxSyncAgeMs: BigInt(deps.maxSyncAgeMs),
        protocols: deps.protocols,
      };
    },
  };
}
