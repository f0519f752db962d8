import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { catalogV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
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

const cooling = (seconds?: number) =>
  new GatewayError('model_temporarily_unavailable', 'cooling', seconds === undefined ? {} : { retry_after_seconds: seconds });

describe('a model whose every route cools down in the text or media service', () => {
  let now = NOW;
  const c = new CatalogCache(() => now);
  c.replace(
    create(catalogV1.GetSnapshotResponseSchema, {
      models: [model('ok'), model('other')],
      providers: [{ provider: 'p1', lastSuccessUnixMs: BigInt(NOW), servedModels: ['ok-up', 'other-up'] }],
      maxSyncAgeMs: BigInt(MAX_AGE),
    }),
  );

  it('leaves the listing and is refused at once, with Retry-After, until it is back', () => {
    c.noteFailure('ok', new GatewayError('upstream_error', 'failed')); // other failures change nothing
    c.noteFailure('ok', cooling()); // nor a model with no route at all (the catalog says so itself)
    expect(c.listing().map((m) => m.id)).toEqual(['ok', 'other']);
    c.noteFailure('ok', cooling(30));
    expect(c.listing().map((m) => m.id)).toEqual(['other']);
    expect(() => c.resolve('ok', 'chat/completions')).toThrow(expect.objectContaining({ code: 'model_temporarily_unavailable', details: { retry_after_seconds: 30 } }));
    now += 29_500;
    expect(() => c.resolve('ok', 'chat/completions')).toThrow(expect.objectContaining({ details: { retry_after_seconds: 1 } }));
    now += 500;
    expect(codeOf(() => c.resolve('ok', 'chat/completions'))).toBe('ok');
    expect(c.listing().map((m) => m.id)).toEqual(['ok', 'other']);
  });
});
