import { GatewayError } from '@gw/errors';
import { afterEach, describe, expect, it } from 'vitest';
import { ProviderError } from '../src/errors.ts';
import { createAdapter } from '../src/registry.ts';
import { FallbackRouter, orderRoutes } from '../src/routing.ts';
import type { Route } from '../src/routing.ts';
import type { ProviderAdapter } from '../src/types.ts';
import { sendJson, sleep, startWireServer } from './support/wire-server.ts';
import type { WireHandler, WireServer } from './support/wire-server.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()));
});

function route(provider: string, priority = 0, weight = 1): Route {
  return { provider, upstreamModel: `${provider}-model`, priority, weight };
}

/** A deterministic RNG cycling through the given values. */
function rngOf(...values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length]!;
}

async function failAsA(): Promise<string> {
  throw retryable('a');
}

function retryable(provider: string, code: 'upstream_error' | 'upstream_rate_limited' = 'upstream_error'): ProviderError {
  return new ProviderError(code, 'failed', { provider, retryable: true });
}

describe('orderRoutes', () => {
  it('puts lower priorities first', () => {
    const routes = [route('c', 2), route('a', 0), route('b', 1)];
    expect(orderRoutes(routes, rngOf(0.5)).map((r) => r.provider)).toEqual(['a', 'b', 'c']);
  });

  it('draws equal priorities by weight', () => {
    const routes = [route('light', 0, 1), route('heavy', 0, 3)];
    // Total weight 4: a draw below 1 lands on `light`, above on `heavy`.
    expect(orderRoutes(routes, rngOf(0.1)).map((r) => r.provider)).toEqual(['light', 'heavy']);
    expect(orderRoutes(routes, rngOf(0.5)).map((r) => r.provider)).toEqual(['heavy', 'light']);
  });

  it('follows the weights over many draws, and keeps zero weights last', () => {
    let seed = 42;
    const lcg = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const routes = [route('a', 0, 1), route('b', 0, 3), route('z', 0, 0)];
    let heavyFirst = 0;
    for (let i = 0; i < 4_000; i++) {
      const order = orderRoutes(routes, lcg).map((r) => r.provider);
      expect(order[2]).toBe('z');
      if (order[0] === 'b') heavyFirst++;
    }
    expect(heavyFirst / 4_000).toBeGreaterThan(0.7);
    expect(heavyFirst / 4_000).toBeLessThan(0.8);
  });
});

describe('FallbackRouter.withFallback', () => {
  it('moves to the next route on a retryable error, calling each once', async () => {
    const calls: string[] = [];
    const router = new FallbackRouter({ random: rngOf(0) });
    const result = await router.withFallback([route('a', 0), route('b', 1)], async (r) => {
      calls.push(r.provider);
      if (r.provider === 'a') throw retryable('a');
      return 'served by b';
    });
    expect(result).toBe('served by b');
    expect(calls).toEqual(['a', 'b']);
  });

  it('throws the last error when every route fails', async () => {
    const router = new FallbackRouter();
    const err = await router
      .withFallback([route('a', 0), route('b', 1)], async (r) => {
        throw retryable(r.provider, r.provider === 'a' ? 'upstream_error' : 'upstream_rate_limited');
      })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'upstream_rate_limited', provider: 'b' });
  });

  it('stops at once on a non-retryable error', async () => {
    const calls: string[] = [];
    const router = new FallbackRouter();
    const err = await router
      .withFallback([route('a', 0), route('b', 1)], async (r) => {
        calls.push(r.provider);
        throw new ProviderError('invalid_request', 'bad', { provider: r.provider, retryable: false });
      })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'invalid_request' });
    expect(calls).toEqual(['a']);
  });

  it('stops at once when the caller aborts', async () => {
    const controller = new AbortController();
    const calls: string[] = [];
    const router = new FallbackRouter();
    const err = await router
      .withFallback(
        [route('a', 0), route('b', 1)],
        async (r) => {
          calls.push(r.provider);
          controller.abort();
          throw controller.signal.reason;
        },
        { signal: controller.signal },
      )
      .catch((e: unknown) => e);
    expect(err).toBe(controller.signal.reason);
    expect(calls).toEqual(['a']);
  });

  it('leaves route health alone for a caller trying the same work again (countFailures: false)', async () => {
    const router = new FallbackRouter({ failureThreshold: 2 });
    const only = [route('a')];
    for (let i = 0; i < 5; i++) await router.withFallback(only, failAsA, { countFailures: false }).catch(() => undefined);
    expect(router.isCoolingDown(only[0]!)).toBe(false);
    expect(router.unavailable(only)).toBeUndefined();
    for (let i = 0; i < 2; i++) await router.withFallback(only, failAsA).catch(() => undefined);
    expect(router.unavailable(only)).toMatchObject({ code: 'model_temporarily_unavailable', details: { retry_after_seconds: 30 } });
  });

  it('answers model_temporarily_unavailable when there is no route', async () => {
    const err = await new FallbackRouter().withFallback([], async () => 'x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ code: 'model_temporarily_unavailable' });
  });

  it('cools a route down after N failures in a row and brings it back later', async () => {
    let now = 1_000_000;
    const router = new FallbackRouter({ failureThreshold: 2, coolDownMs: 10_000, now: () => now });
    const routes = [route('a', 0), route('b', 1)];
    const calls: string[] = [];
    let aHealthy = false;
    const attempt = async (r: Route) => {
      calls.push(r.provider);
      if (r.provider === 'a' && !aHealthy) throw retryable('a');
      return r.provider;
    };

    expect(await router.withFallback(routes, attempt)).toBe('b');
    expect(await router.withFallback(routes, attempt)).toBe('b');
    expect(router.isCoolingDown(routes[0]!)).toBe(true);
    calls.length = 0;
    expect(await router.withFallback(routes, attempt)).toBe('b');
    expect(calls).toEqual(['b']);

    now += 10_000;
    aHealthy = true;
    calls.length = 0;
    expect(await router.withFallback(routes, attempt)).toBe('a');
    expect(calls).toEqual(['a']);

    // Success reset the count: one new failure does not cool it down again.
    aHealthy = false;
    await router.withFallback(routes, attempt);
    expect(router.isCoolingDown(routes[0]!)).toBe(false);
  });

  it('re-cools a route on its first failure after the cool-down, and fails fast when all cool', async () => {
    let now = 0;
    const router = new FallbackRouter({ failureThreshold: 2, coolDownMs: 1_000, now: () => now });
    const only = [route('a')];
    await router.withFallback(only, failAsA).catch(() => undefined);
    await router.withFallback(only, failAsA).catch(() => undefined);
    const cooled = await router.withFallback(only, failAsA).catch((e: unknown) => e);
    // It says when the first route is back (1 s), so callers can stop offering the model until then.
    expect(cooled).toMatchObject({ code: 'model_temporarily_unavailable', details: { retry_after_seconds: 1 } });
    now += 1_000;
    await router.withFallback(only, failAsA).catch(() => undefined);
    expect(router.isCoolingDown(only[0]!)).toBe(true);
  });
});

async function serve(handler: WireHandler): Promise<WireServer> {
  const server = await startWireServer(handler);
  open.push(server);
  return server;
}

function compat(name: string, server: WireServer): ProviderAdapter {
  const adapter = createAdapter({ name, kind: 'compat', baseUrl: `${server.url}/v1`, apiKey: `key-${name}` });
  open.push({ close: () => adapter.close?.() ?? Promise.resolve() });
  return adapter;
}

describe('fallback over real HTTP', () => {
  const answer = { id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' } }] };

  it.each([
    ['503', (_req: unknown, res: Parameters<WireHandler>[1]) => sendJson(res, 503, { error: { message: 'down' } })],
    [
      'a timeout',
      async (_req: unknown, res: Parameters<WireHandler>[1]) => {
        await sleep(2_000);
        sendJson(res, 200, answer);
      },
    ],
  ] as const)('first route %s → the second serves; each called once', async (_label, firstHandler) => {
    const first = await serve(firstHandler);
    const second = await serve((_req, res) => sendJson(res, 200, answer));
    const adapters = new Map([
      ['one', compat('one', first)],
      ['two', compat('two', second)],
    ]);
    const router = new FallbackRouter();
    const result = await router.withFallback([route('one', 0), route('two', 1)], (r) =>
      adapters.get(r.provider)!.text('chat', { model: r.upstreamModel, messages: [] }, { stream: false, timeoutMs: 200 }),
    );
    expect(result).toMatchObject({ kind: 'json', body: { choices: [{ message: { content: 'ok' } }] } });
    expect(first.requests).toHaveLength(1);
    expect(second.requests).toHaveLength(1);
    expect(JSON.parse(second.requests[0]!.body.toString())).toMatchObject({ model: 'two-model' });
  });
});
