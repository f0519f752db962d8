import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderAdapter } from '../src/types.ts';
import { events, jsonBody, providerFailure } from './support/expect-failure.ts';
import { startSimulator } from './support/simulator.ts';
import type { RunningSimulator } from './support/simulator.ts';
import { collect } from './support/wire-server.ts';

let sim: RunningSimulator;
let compat: ProviderAdapter;

beforeAll(async () => {
  sim = await startSimulator();
  compat = sim.adapter('compat');
});
afterAll(async () => {
  await sim.close();
});

const chat = (content: string) => ({ model: 'compat-sim-chat', messages: [{ role: 'user', content }] });

describe('compat', () => {
  it('lists models and has no token counter', async () => {
    expect(await compat.listModels()).toEqual(['compat-sim-chat']);
    expect(compat.countTokens).toBeUndefined();
    expect(compat.generateImages).toBeUndefined();
  });

  it('answers chat completions, streamed or not', async () => {
    expect(jsonBody(await compat.text('chat', chat('Hi'), { stream: false }))).toMatchObject({ choices: [{ message: { role: 'assistant' } }] });
    const all = await collect(events(await compat.text('chat', chat('Hi'), { stream: true })));
    expect(all.at(-1)?.data).toBe('[DONE]');
  });

  it('sends the output cap as max_tokens, the name every compatible server honours', async () => {
    const body = { ...chat('Write on [[sim:words=200]]'), max_completion_tokens: 7, max_tokens: 500 };
    const answer = jsonBody(await compat.text('chat', body, { stream: false })) as { usage: { completion_tokens: number } };
    expect(answer.usage.completion_tokens).toBeLessThanOrEqual(7);
    const seen = (await (await fetch(`${sim.url}/_sim/requests?provider=compat&limit=1`)).json()) as { requests: Array<{ body: Record<string, unknown> }> };
    expect(seen.requests.at(-1)!.body).toMatchObject({ max_tokens: 7 });
    expect(seen.requests.at(-1)!.body).not.toHaveProperty('max_completion_tokens');
  });

  it('maps faults', async () => {
    expect(await providerFailure(compat.text('chat', chat('x [[sim:fault=503]]'), { stream: true }))).toMatchObject({
      code: 'upstream_error',
      retryable: true,
    });
    const stream = events(await compat.text('chat', chat('x [[sim:fault=stream_error; words=20]]'), { stream: true }));
    expect(await providerFailure(collect(stream))).toMatchObject({ code: 'upstream_error', retryable: false });
  });
});
