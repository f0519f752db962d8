import { randomBytes } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { catalogV1, type CallContext } from '@gw/contracts';
import { audited, createOrm, runMigrations } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEMO_MODELS } from '../../../scripts/demo-models.ts';
import { catalogEntities } from '../src/db/entities.ts';
import { catalogMigrations } from '../src/db/migrations/index.ts';
import { CATALOG_AUDITED, recordCatalogAudit } from '../src/grpc/audited.ts';
import { catalogHandler } from '../src/grpc/catalog.handler.ts';

// The catalog's audit trail on its real schema: each change through its rpcs is recorded with the
// caller's gw-actor and gw-actor-origin metadata; failed changes and reads are not; the table only grows.

let orm: MikroORM;
let rpc: ReturnType<typeof catalogHandler>;

function ctx(actor?: string): CallContext {
  // The incoming metadata as grpc-js hands it over: values by key.
  const values: Record<string, string[]> = actor ? { 'gw-actor': [actor], 'gw-actor-origin': ['cli@ops-host'] } : {};
  const metadata = { get: (key: string) => values[key] ?? [] } as unknown as CallContext['metadata'];
  return { metadata, signal: new AbortController().signal, deadline: Infinity, draining: new AbortController().signal, reportUnexpected: () => {} };
}

beforeAll(async () => {
  orm = await createOrm({ databaseUrl: inject('databaseUrl'), schema: `catalog_t${randomBytes(4).toString('hex')}`, entities: catalogEntities, migrations: catalogMigrations });
  await runMigrations(orm);
  // A provider's model listing stands in for the provider (a sync is recorded too).
  const openai = { name: 'openai', listModels: async () => ['gpt-sim-mini'] };
  const handler = catalogHandler({ orm, providers: [openai], countsTokens: () => true, protocols: [], maxSyncAgeMs: 60_000, syncTimeoutMs: 1_000, now: () => new Date() });
  rpc = audited('catalog', handler, CATALOG_AUDITED, recordCatalogAudit, orm, { error: () => {} });
});

afterAll(() => orm?.close());

describe('catalog audit trail', () => {
  it('records models upserted, priced, enabled, aliased and the listing hidden, with who and from where', async () => {
    const model = DEMO_MODELS[0]!;
    await rpc.upsertModel(create(catalogV1.UpsertModelRequestSchema, { model }), ctx('operator:alice'));
    await rpc.setPrice(create(catalogV1.SetPriceRequestSchema, { modelId: model.id!, priceCreditPerUnit: 20_000n }), ctx('operator:alice'));
    await rpc.setEnabled(create(catalogV1.SetEnabledRequestSchema, { modelId: model.id!, enabled: false }), ctx('operator:bob'));
    await rpc.addAlias(create(catalogV1.AddAliasRequestSchema, { modelId: model.id!, alias: 'mini' }), ctx('operator:bob'));
    await rpc.removeAlias(create(catalogV1.RemoveAliasRequestSchema, { alias: 'mini' }), ctx('operator:bob'));
    await rpc.setListingHidden(create(catalogV1.SetListingHiddenRequestSchema, { hidden: true }), ctx());
    await rpc.syncProviders(create(catalogV1.SyncProvidersRequestSchema, {}), ctx('operator:alice'));
    // A refused change and a read record nothing.
    await expect(rpc.setPrice(create(catalogV1.SetPriceRequestSchema, { modelId: 'no-such-model', priceCreditPerUnit: 1n }), ctx('operator:eve'))).rejects.toThrow(/No model no-such-model/);
    await rpc.listModels(create(catalogV1.ListModelsRequestSchema, {}), ctx('operator:eve'));

    const { events } = (await rpc.listAuditEvents(create(catalogV1.ListAuditEventsRequestSchema, { limit: 0 }), ctx())) as catalogV1.ListAuditEventsResponse;
    expect(events.map((e) => [e.action, e.actor])).toEqual([
      ['catalog.SyncProviders', 'operator:alice'],
      ['catalog.SetListingHidden', 'unknown'],
      ['catalog.RemoveAlias', 'operator:bob'],
      ['catalog.AddAlias', 'operator:bob'],
      ['catalog.SetEnabled', 'operator:bob'],
      ['catalog.SetPrice', 'operator:alice'],
      ['catalog.UpsertModel', 'operator:alice'],
    ]);
    expect(events[6]!.origin).toBe('cli@ops-host');
    expect(JSON.parse(events[5]!.details)).toEqual({ model_id: model.id, price_credit_per_unit: '20000' });
    expect(JSON.parse(events[2]!.details)).toEqual({ alias: 'mini', model_id: model.id });
    expect(JSON.parse(events[6]!.details).model).toMatchObject({ id: model.id, upstreamModel: model.upstreamModel });
    expect(JSON.parse(events[0]!.details)).toEqual({ providers: [{ provider: 'openai', served_models: ['gpt-sim-mini'], last_error: '' }] });
    expect(events.every((e) => e.createdAtUnixMs > 0n)).toBe(true);

    await expect(orm.em.getConnection().execute('delete from audit_event')).rejects.toThrow(/append-only/);
  });
});
