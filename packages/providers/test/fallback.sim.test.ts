import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FallbackRouter } from '../src/routing.ts';
import type { Route } from '../src/routing.ts';
import type { ProviderAdapter, TextResult } from '../src/types.ts';
import { jsonBody, providerFailure } from './support/expect-failure.ts';
import { startSimulator } from './support/simulator.ts';
import type { RunningSimulator } from './support/simulator.ts';

let sim: RunningSimulator;
let adapters: Map<string, ProviderAdapter>;

beforeAll(async () => {
  sim = await startSimulator();
  adapters = new Map([
    ['openai', sim.adapter('openai')],
    ['compat', sim.adapter('compat')],
  ]);
});
afterEach(async () => {
  await sim.control('DELETE', '/settings');
});
afterAll(async () => {
  await sim.close();
});

const ROUTES: Route[] = [
  { provider: 'openai', upstreamModel: 'gpt-sim-mini', priority: 0, weight: 1 },
  { provider: 'compat', upstreamModel: 'compat-sim-chat', priority: 1, weight: 1 },
];

/** Runs one chat request through the router, recording which providers were called. */
async function ask(router: FallbackRouter, calls: string[]): Promise<TextResult> {
  return router.withFallback(ROUTES, (route) => {
    calls.push(route.provider);
    return adapters.get(route.provider)!.text(
      'chat',
      { model: route.upstreamModel, messages: [{ role: 'user', content: 'Hello' }] },
      { stream: false, timeoutMs: 300 },
    );
  });
}

describe('fallback against the simulator', () => {
  it.each(['503', 'timeout'])('first route %s → the second serves, each called once', async (fault) => {
    await sim.control('PUT', '/settings/openai/gpt-sim-mini', { fault });
    const calls: string[] = [];
    const body = jsonBody(await ask(new FallbackRouter(), calls));
    expect(body['model']).toBe('compat-sim-chat');
    expect(calls).toEqual(['openai', 'compat']);
  });

  it('throws the last route’s error when all fail', async () => {
    await sim.control('PUT', '/settings/openai/gpt-sim-mini', { fault: '503' });
    await sim.control('PUT', '/settings/compat/compat-sim-chat', { fault: '429' });
    const err = await providerFailure(ask(new FallbackRouter(), []));
    expect(err).toMatchObject({ code: 'upstream_rate_limited', provider: 'sim-compat' });
  });

  it('stops on a non-retryable error', async () => {
    await sim.control('PUT', '/settings/openai/gpt-sim-mini', { fault: '400' });
    const calls: string[] = [];
    expect(await providerFailure(ask(new FallbackRouter(), calls))).toMatchObject({ code: 'invalid_request' });
    expect(calls).toEqual(['openai']);
  });

  it('skips a cooled-down route until its cool-down ends', async () => {
    let now = 0;
    const router = new FallbackRouter({ failureThreshold: 2, coolDownMs: 60_000, now: () => now });
    await sim.control('PUT', '/settings/openai/gpt-sim-mini', { fault: '500' });
    await ask(router, []);
    await ask(router, []);
    const calls: string[] = [];
    await ask(router, calls);
    expect(calls).toEqual(['compat']);

    await sim.control('DELETE', '/settings');
    now += 60_000;
    calls.length = 0;
    expect(jsonBody(await ask(router, calls))['model']).toBe('gpt-sim-mini');
    expect(calls).toEqual(['openai']);
  });
});
