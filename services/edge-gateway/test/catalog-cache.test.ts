import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { catalogV1, eventsV1, textV1 } from '@gw/contracts';
import { describe, expect, it } from 'vitest';
import { CatalogCache } from '../src/state/catalog-cache.ts';

const NOW = 1_800_000_000_000;
const MAX_AGE = 600_000;
const { TEXT, IMAGE } = catalogV1.ModelKind;
const TEXT_CAPS = ['chat/completions', 'chat', 'messages', 'messages/count_tokens', 'responses'];

function model(id: string, init: Omit<MessageInitShape<typeof catalogV1.ModelSchema>, 'id' | '$typeName'> = {}) {
  return create(catalogV1.ModelSchema, {
    id,
    kind: TEXT,
    capabilities: TEXT_CAPS,
    priceCreditPerUnit: 100n,
    enabled: true,
    provider: 'p1',
    upstreamModel: `${id}-up`,
    ...init,
  });
}

function cache(models: catalogV1.Model[], syncs: Array<[string, number, string[]]>, hidden = false) {
  const c = new CatalogCache(() => NOW);
  c.replace(
    create(catalogV1.GetSnapshotResponseSchema, {
      models,
      providers: syncs.map(([provider, age, served]) => ({
        provider,
        lastSuccessUnixMs: age < 0 ? 0n : BigInt(NOW - age),
        servedModels: served,
      })),
      listingHidden: hidden,
      maxSyncAgeMs: BigInt(MAX_AGE),
      protocols: syncs.map(([provider]) => ({ provider, textDialects: ['messages'] })),
    }),
  );
  return c;
}

const codeOf = (fn: () => unknown) => {
  try {
    fn();
    return 'ok';
  } catch (e) {
    return (e as { code: string }).code;
  }
};

describe('model resolution, in the order of DECISIONS.md step 5', () => {
  const c = cache(
    [
      model('ok'),
      model('img', { kind: IMAGE, capabilities: ['images/generations'] }),
      model('off', { enabled: false }),
      model('off-unpriced', { enabled: false, priceCreditPerUnit: undefined }),
      model('unpriced', { priceCreditPerUnit: undefined }),
      model('stale', { provider: 'p-stale' }),
      model('never-synced', { provider: 'p-never' }),
      model('gone', { upstreamModel: 'not-listed' }),
      model('no-caps-and-off', { enabled: false, capabilities: ['chat'] }),
      model('img-off', { kind: IMAGE, capabilities: ['images/generations'], enabled: false }),
      model('second-route', {
        routes: [
          { provider: 'p-stale', upstreamModel: 'x', priority: 0, weight: 1 },
          { provider: 'p1', upstreamModel: 'second-route-up', priority: 1, weight: 1 },
        ] as catalogV1.Route[],
      }),
    ],
    [
      ['p1', 1_000, ['ok-up', 'img-up', 'off-up', 'unpriced-up', 'off-unpriced-up', 'no-caps-and-off-up', 'second-route-up']],
      ['p-stale', MAX_AGE + 1, ['stale-up', 'x']],
    ],
  );

  it.each([
    ['ok', 'chat/completions', 'ok'],
    ['missing', 'chat/completions', 'unknown_model'],
    ['img', 'chat/completions', 'capability_not_supported'],
    ['ok', 'images/generations', 'capability_not_supported'],
    ['off', 'chat/completions', 'model_disabled'],
    ['off', 'chat', 'unknown_model'], // spec 4.3: a disabled model is unknown on POST /chat
    ['off-unpriced', 'messages', 'model_disabled'], // disabled is reported before unpriced
    ['no-caps-and-off', 'responses', 'capability_not_supported'], // capability before enabled
    ['img-off', 'chat', 'unknown_model'], // on /chat a disabled model is unknown, whatever its capabilities
    ['unpriced', 'chat/completions', 'pricing_not_configured'],
    ['stale', 'chat/completions', 'provider_catalog_stale'],
    ['never-synced', 'chat/completions', 'provider_catalog_stale'],
    ['gone', 'chat/completions', 'model_temporarily_unavailable'],
    ['second-route', 'messages', 'ok'], // a stale first route does not block a fresh second one
  ])('%s on %s → %s', (id, endpoint, want) => {
    expect(codeOf(() => c.resolve(id, endpoint))).toBe(want);
  });

  it("returns only the live routes, with their providers' text dialects, price, unit and limits", () => {
    const r = c.resolve('second-route', 'messages');
    expect(r.routes).toEqual([{ provider: 'p1', upstreamModel: 'second-route-up', priority: 1, weight: 1, textDialects: ['messages'] }]);
    expect(r.price).toBe(100n);
    expect(r.kind).toBe('TEXT');
  });

  it('lists enabled, priced, currently served models only', () => {
    expect(c.listing().map((m) => m.id)).toEqual(['ok', 'img', 'second-route']);
  });

  it('answers model_catalog_disabled when the listing is hidden, while resolution keeps working', () => {
    const hidden = cache([model('ok')], [['p1', 0, ['ok-up']]], true);
    expect(codeOf(() => hidden.listing())).toBe('model_catalog_disabled');
    expect(codeOf(() => hidden.resolve('ok', 'chat'))).toBe('ok');
  });

  it('before its first snapshot (catalog away since start) knows no model, and says so as a retryable 502, not unknown_model', () => {
    const empty = new CatalogCache(() => NOW);
    expect(codeOf(() => empty.resolve('ok', 'chat'))).toBe('upstream_error');
    expect(codeOf(() => empty.listing())).toBe('upstream_error');
  });
});

function routeHealth(provider: string, upstreamModel: string, state: textV1.RouteState, untilUnixMs: number) {
  return create(textV1.RouteHealthSchema, { provider, upstreamModel, state, untilUnixMs: BigInt(untilUnixMs) });
}

describe('a model whose every route the text service has opened (route health)', () => {
  let now = NOW;
  const c = new CatalogCache(() => now);
  c.replace(
    create(catalogV1.GetSnapshotResponseSchema, {
      models: [model('ok', { routes: [{ provider: 'p1', upstreamModel: 'ok-up', priority: 0, weight: 1 }, { provider: 'p2', upstreamModel: 'ok-b', priority: 1, weight: 1 }] }), model('other')],
      providers: [
        { provider: 'p1', lastSuccessUnixMs: BigInt(NOW), servedModels: ['ok-up', 'other-up'] },
        { provider: 'p2', lastSuccessUnixMs: BigInt(NOW), servedModels: ['ok-b'] },
      ],
      maxSyncAgeMs: BigInt(MAX_AGE),
    }),
  );

  it('stays listed while one route serves; leaves the listing and is refused with Retry-After when all are open; is back when one closes', () => {
    c.routeHealth.replace([routeHealth('p1', 'ok-up', textV1.RouteState.OPEN, NOW + 30_000)]);
    expect(c.listing().map((m) => m.id)).toEqual(['ok', 'other']);
    expect(codeOf(() => c.resolve('ok', 'chat/completions'))).toBe('ok');

    c.routeHealth.apply(create(eventsV1.RouteHealthChangedSchema, { route: routeHealth('p2', 'ok-b', textV1.RouteState.HALF_OPEN, NOW + 2_000) }));
    expect(c.listing().map((m) => m.id)).toEqual(['other']);
    expect(() => c.resolve('ok', 'chat/completions')).toThrow(expect.objectContaining({ code: 'model_temporarily_unavailable', details: { retry_after_seconds: 2 } }));
    now += 2_500;
    // A probe is due but has not answered yet: still refused, asked back in a second.
    expect(() => c.resolve('ok', 'chat/completions')).toThrow(expect.objectContaining({ details: { retry_after_seconds: 1 } }));

    c.routeHealth.apply(create(eventsV1.RouteHealthChangedSchema, { route: routeHealth('p2', 'ok-b', textV1.RouteState.CLOSED, 0) }));
    expect(codeOf(() => c.resolve('ok', 'chat/completions'))).toBe('ok');
    expect(c.listing().map((m) => m.id)).toEqual(['ok', 'other']);
  });
});

describe('aliases: other public ids of one model', () => {
  const created = BigInt(NOW - 86_400_000);
  const c = cache(
    [
      model('canon', { aliases: ['nick', 'other/nick'], createdUnixMs: created }),
      model('off', { enabled: false, aliases: ['off-nick'] }),
      // An alias equal to another model's id never hides that model.
      model('clash', { aliases: ['canon'] }),
    ],
    [['p1', 1_000, ['canon-up', 'off-up', 'clash-up']]],
  );

  it('resolve to their model, which is what billing and the routes see, and remember the name asked for', () => {
    const r = c.resolve('nick', 'messages');
    expect([r.id, r.requested]).toEqual(['canon', 'nick']);
    expect(r.routes.map((x) => x.upstreamModel)).toEqual(['canon-up']);
    expect(c.resolve('canon', 'messages')).toMatchObject({ id: 'canon', requested: 'canon' });
    // A disabled model is disabled by every name, and its messages use the name the client sent.
    expect(() => c.resolve('off-nick', 'chat/completions')).toThrow(expect.objectContaining({ code: 'model_disabled', message: 'The model off-nick is disabled.' }));
    expect(codeOf(() => c.resolve('off-nick', 'chat'))).toBe('unknown_model');
  });

  it('are listed as items of their own with alias_of, and the SDK fields; the Anthropic ones only when asked', () => {
    const listing = c.listing();
    expect(listing.map((m) => m.id)).toEqual(['canon', 'nick', 'other/nick', 'clash']);
    expect(listing[1]).toEqual({
      id: 'nick',
      kind: 'TEXT',
      capabilities: TEXT_CAPS,
      price_credit_per_unit: 100,
      billing_unit: 'million_tokens',
      object: 'model',
      created: Number(created) / 1000,
      owned_by: 'p1',
      alias_of: 'canon',
    });
    expect(listing[0]).not.toHaveProperty('alias_of');
    expect(c.listed('canon', true)).toMatchObject({ id: 'canon', type: 'model', display_name: 'canon', created_at: new Date(Number(created)).toISOString() });
    expect(c.listed('other/nick')).toMatchObject({ id: 'other/nick', alias_of: 'canon' });
    expect(() => c.listed('off-nick')).toThrow(expect.objectContaining({ code: 'not_found' }));
    expect(() => c.listed('missing')).toThrow(expect.objectContaining({ code: 'not_found', message: expect.stringContaining('GET /v1/models') }));
  });
});
