import { create } from '@bufbuild/protobuf';
import { billingV1, catalogV1, textV1 } from '@gw/contracts';
import { generateApiKey, hashApiKey } from '@gw/api-keys';
import { GatewayError } from '@gw/errors';
import { serviceSlot } from '@gw/translate';
import { BytesBudget } from '@gw/service-kit';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { buildApp, type GatewayDeps } from '../../src/app.ts';
import { KeyCache, type KeyCacheOptions, type KeyRecord } from '../../src/auth/key-cache.ts';
import { CatalogCache } from '../../src/state/catalog-cache.ts';
import { SwitchState } from '../../src/state/switches.ts';

/**
 * The edge app with fakes in place of its gRPC clients (unit level: `app.inject()` or a real
 * listening socket). Accounts `acct-a` and `acct-b` have one key each; billing knows no other key.
 * Every call the fakes do not answer below is refused with `insufficient_balance` (402), so a
 * request that gets past the edge's own checks ends in a documented 4xx, never a crash.
 */
export interface FakeGateway {
  app: FastifyInstance;
  deps: GatewayDeps;
  keys: { a: string; b: string };
  /** Key records by key, as billing holds them (tests revoke here). */
  records: Map<string, KeyRecord>;
  /** Billing's key lookups so far. */
  lookups: () => number;
}

const TEXT_CAPS = ['chat/completions', 'chat', 'messages', 'messages/count_tokens', 'responses'];

function snapshot(): catalogV1.GetSnapshotResponse {
  const now = BigInt(Date.now());
  return create(catalogV1.GetSnapshotResponseSchema, {
    models: [
      { id: 'm', kind: catalogV1.ModelKind.TEXT, capabilities: TEXT_CAPS, priceCreditPerUnit: 100n, enabled: true, provider: 'p-chat', upstreamModel: 'm-up', limits: { maxOutputTokens: 64 } },
      { id: 'img', kind: catalogV1.ModelKind.IMAGE, capabilities: ['images/generations', 'images/edits'], priceCreditPerUnit: 10n, enabled: true, provider: 'p-chat', upstreamModel: 'img-up' },
      { id: 'vid', kind: catalogV1.ModelKind.VIDEO, capabilities: ['videos/generations'], priceCreditPerUnit: 10n, enabled: true, provider: 'p-chat', upstreamModel: 'vid-up' },
    ],
    providers: [{ provider: 'p-chat', lastSuccessUnixMs: now + 3_600_000n, servedModels: ['m-up', 'img-up', 'vid-up'] }],
    maxSyncAgeMs: 3_600_000n,
    protocols: [{ provider: 'p-chat', textDialects: ['chat'] }],
  });
}

/** A client whose every method is refused with `insufficient_balance`, unless given. */
function fakeClient<T>(methods: Record<string, (...args: never[]) => unknown>): T {
  return new Proxy(methods, {
    get: (target, name) =>
      typeof name === 'string' && name in target
        ? target[name]
        : async () => {
            throw new GatewayError('insufficient_balance', 'The fake billing has no credits.');
          },
  }) as T;
}

export interface FakeOptions {
  bodyBudget?: { totalBytes: number; perOwnerBytes: number };
  keyCache?: Partial<KeyCacheOptions>;
  /** Overrides of the deps (a fake text answer, a lookup that counts...). */
  deps?: Partial<GatewayDeps>;
  /** Key lookups: answers billing's record, or throws. */
  lookup?: (hash: Buffer, records: Map<string, KeyRecord>) => Promise<KeyRecord>;
}

/** The text answer of the fake generate call: a chat completion with usage. */
export function chatAnswer(): textV1.GenerateResponse {
  const body = { id: 'c1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };
  // As the text service answers: JSON with a slot for the gateway's `service` object.
  const slot = serviceSlot('chat', body);
  return create(textV1.GenerateResponseSchema, { body: Buffer.from(slot.json), serviceAt: Buffer.byteLength(slot.json.slice(0, slot.at)), usage: { inputTokens: 1n, outputTokens: 1n, billableTokens: 2n } });
}

export async function fakeGateway(opts: FakeOptions = {}): Promise<FakeGateway> {
  const keys = { a: generateApiKey(), b: generateApiKey() };
  const records = new Map<string, KeyRecord>([
    [keys.a, { keyId: 'key-a', accountId: 'acct-a', revokedAtMs: 0, expiresAtMs: 0 }],
    [keys.b, { keyId: 'key-b', accountId: 'acct-b', revokedAtMs: 0, expiresAtMs: 0 }],
  ]);
  let lookups = 0;
  const byHash = async (hash: Buffer) => {
    for (const [key, record] of records) if (hashApiKey(key).equals(hash)) return { ...record };
    throw new GatewayError('auth_invalid', 'The API key does not exist.');
  };
  const lookup = async (hash: Buffer) => {
    lookups++;
    return opts.lookup ? opts.lookup(hash, records) : byHash(hash);
  };
  const catalogCache = new CatalogCache();
  catalogCache.replace(snapshot());
  const deps: GatewayDeps = {
    billing: fakeClient({ checkRateLimit: async () => create(billingV1.CheckRateLimitResponseSchema, {}) }),
    money: fakeClient({}),
    catalog: fakeClient({}),
    text: fakeClient({ countTokens: async () => create(textV1.CountTokensResponseSchema, { inputTokens: 3n }) }),
    generate: fakeClient({}),
    media: fakeClient({
      getImageJob: async () => {
        throw new GatewayError('not_found', 'No image job with this id.');
      },
    }),
    videoJobs: fakeClient({
      getJob: async () => {
        throw new GatewayError('not_found', 'No video job with this id.');
      },
      downloadContent: () => {
        throw new GatewayError('not_found', 'No video job with this id.');
      },
    }),
    keys: new KeyCache(lookup, { ttlMs: 60_000, ...opts.keyCache }),
    switches: new SwitchState(),
    catalogCache,
    bodyBudget: new BytesBudget(opts.bodyBudget ?? { totalBytes: 96 * 1024 * 1024, perOwnerBytes: 64 * 1024 * 1024 }),
    logger: pino({ level: 'silent' }),
    basePath: '/v1',
    isReady: () => true,
    ...opts.deps,
  };
  const app = await buildApp(deps);
  return { app, deps, keys, records, lookups: () => lookups };
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/**
 * What a client of an error answer acts on, for inline snapshots: the status, the headers SDKs read
 * (absent ones as null, so a snapshot shows they are absent) and the body as sent.
 */
export function wireError(res: { statusCode: number; headers: Record<string, unknown>; json: () => unknown }) {
  return { status: res.statusCode, 'retry-after': res.headers['retry-after'] ?? null, 'x-should-retry': res.headers['x-should-retry'] ?? null, body: res.json() };
}
