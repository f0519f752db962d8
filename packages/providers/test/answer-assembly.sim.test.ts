import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textAnswerFromStream } from '../src/answer-assembly.ts';
import { ProviderError } from '../src/errors.ts';
import type { ProviderAdapter, ProviderKind, TextDialect } from '../src/types.ts';
import { jsonBody } from './support/expect-failure.ts';
import { startSimulator, type RunningSimulator } from './support/simulator.ts';

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startSimulator();
});
afterAll(async () => {
  await sim.close();
});

type Ask = 'text' | 'tool' | 'reasoning' | 'reasoning-tool';

/** A request in each dialect; `tool` offers a function (and the prompt asks for its call). */
function bodyFor(dialect: TextDialect, ask: Ask): Record<string, unknown> {
  const tool = ask.endsWith('tool');
  const reasoning = ask.startsWith('reasoning');
  const prompt = `Tell me about lighthouses [[sim:words=40${tool ? '; tool' : ''}${reasoning ? '; reasoning' : ''}]]`;
  const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
  switch (dialect) {
    case 'chat':
      return {
        model: 'gpt-sim-mini',
        messages: [{ role: 'user', content: prompt }],
        ...(tool ? { tools: [{ type: 'function', function: { name: 'get_weather', parameters: schema } }] } : {}),
        ...(reasoning ? { reasoning_effort: 'medium' } : {}),
      };
    case 'messages':
      return {
        model: 'claude-sim-sonnet',
        max_tokens: 2000,
        messages: [{ role: 'user', content: prompt }],
        ...(tool ? { tools: [{ name: 'get_weather', input_schema: schema }] } : {}),
        ...(reasoning ? { thinking: { type: 'enabled', budget_tokens: 1024 } } : {}),
      };
    case 'responses':
      return {
        model: 'gpt-sim-mini',
        input: prompt,
        ...(tool ? { tools: [{ type: 'function', name: 'get_weather', parameters: schema }] } : {}),
        ...(reasoning ? { reasoning: { effort: 'medium', summary: 'auto' } } : {}),
      };
    case 'gemini':
      return {
        model: 'gemini-sim-flash',
        contents: [{ role: 'user', parts: [{ text: prompt }] }],
        ...(tool ? { tools: [{ functionDeclarations: [{ name: 'get_weather', parameters: schema }] }] } : {}),
        ...(reasoning ? { generationConfig: { thinkingConfig: { includeThoughts: true } } } : {}),
      };
  }
}

/** Ids and clocks differ between two calls; everything else must be the same. */
function comparable(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) return value.map((v) => comparable(v));
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, comparable(v, k)]));
  if (/(^id|Id|_id)$/.test(key) && typeof value === 'string') return '<id>';
  if (/^(created|created_at|completed_at)$/.test(key) && typeof value === 'number') return '<time>';
  return value;
}

const CASES: Array<[ProviderKind, TextDialect]> = [
  ['openai', 'chat'],
  ['compat', 'chat'],
  ['anthropic', 'messages'],
  ['openai', 'responses'],
  ['google', 'gemini'],
];

describe('a complete answer rebuilt from the stream', () => {
  for (const [kind, dialect] of CASES) {
    for (const ask of ['text', 'tool', 'reasoning', 'reasoning-tool'] as const) {
      it(`${kind} ${dialect} (${ask}): the same body, keys in the same order, as the complete answer`, async () => {
        const adapter: ProviderAdapter = sim.adapter(kind);
        const body = bodyFor(dialect, ask);
        const upstreamModel = kind === 'compat' ? 'compat-sim-chat' : body['model'];
        const whole = jsonBody(await adapter.text(dialect, { ...body, model: upstreamModel }, { stream: false }));
        const rebuilt = await textAnswerFromStream(adapter, dialect, { ...body, model: upstreamModel }, {});
        expect(JSON.stringify(comparable(rebuilt))).toBe(JSON.stringify(comparable(whole)));
      });
    }
  }

  it('a stream that breaks after its first event fails retryable: nothing reached a client', async () => {
    const body = { ...bodyFor('chat', 'text'), messages: [{ role: 'user', content: 'Hi [[sim:words=40; fault=stream_error]]' }] };
    const err = await textAnswerFromStream(sim.adapter('openai'), 'chat', body, {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ code: 'upstream_error', retryable: true });
  });
});
