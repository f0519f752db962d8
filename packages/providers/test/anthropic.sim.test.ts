import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderAdapter } from '../src/types.ts';
import { events, jsonBody, providerFailure } from './support/expect-failure.ts';
import { startSimulator } from './support/simulator.ts';
import type { RunningSimulator } from './support/simulator.ts';
import { collect } from './support/wire-server.ts';

let sim: RunningSimulator;
let anthropic: ProviderAdapter;

beforeAll(async () => {
  sim = await startSimulator();
  anthropic = sim.adapter('anthropic');
});
afterEach(async () => {
  await sim.control('DELETE', '/models/anthropic');
});
afterAll(async () => {
  await sim.close();
});

const messages = (content: string) => ({
  model: 'claude-sim-sonnet',
  max_tokens: 256,
  system: 'Be brief.',
  messages: [{ role: 'user', content }],
});

describe('anthropic', () => {
  it('lists models across pages', async () => {
    expect(await anthropic.listModels()).toEqual(['claude-sim-sonnet', 'claude-sim-haiku']);
    const many = Array.from({ length: 1_003 }, (_, i) => `claude-sim-${i}`);
    await sim.control('PUT', '/models/anthropic', many);
    expect(await anthropic.listModels()).toEqual(many);
  });

  it('answers messages as JSON and as a stream ending in message_stop', async () => {
    const body = jsonBody(await anthropic.text('messages', messages('Hello'), { stream: false }));
    expect(body).toMatchObject({ type: 'message', role: 'assistant', content: expect.any(Array), usage: { input_tokens: expect.any(Number) } });
    const all = await collect(events(await anthropic.text('messages', messages('Hello'), { stream: true })));
    expect(all[0]).toMatchObject({ event: 'message_start' });
    expect(all.at(-1)).toMatchObject({ event: 'message_stop', data: { type: 'message_stop' } });
  });

  it('counts tokens, dropping fields count_tokens refuses', async () => {
    const tokens = await anthropic.countTokens!('messages', { ...messages('Count me please'), stream: true, temperature: 0.2 });
    expect(tokens).toBeGreaterThan(0);
    await expect(anthropic.countTokens!('chat', messages('x'))).rejects.toMatchObject({ code: 'capability_not_supported' });
  });

  it.each([
    ['429', 'upstream_rate_limited', true],
    ['529', 'upstream_error', true],
    ['400', 'invalid_request', false],
  ] as const)('maps fault %s → %s', async (fault, code, retryable) => {
    const err = await providerFailure(anthropic.text('messages', messages(`x [[sim:fault=${fault}]]`), { stream: false }));
    expect(err).toMatchObject({ code, retryable });
  });

  it('maps a hang to upstream_timeout', async () => {
    const err = await providerFailure(anthropic.text('messages', messages('x [[sim:fault=timeout]]'), { stream: true, timeoutMs: 200 }));
    expect(err).toMatchObject({ code: 'upstream_timeout', retryable: true });
  });

  it.each(['stream_error', 'malformed'])('throws a mid-stream %s from the iterator', async (fault) => {
    const stream = events(await anthropic.text('messages', messages(`x [[sim:fault=${fault}; words=20]]`), { stream: true }));
    expect(await providerFailure(collect(stream))).toMatchObject({ code: 'upstream_error', retryable: false });
  });

  it('refuses a dialect it does not speak', async () => {
    await expect(anthropic.text('chat', messages('x'), { stream: false })).rejects.toMatchObject({ code: 'capability_not_supported' });
  });
});
