import Anthropic from '@anthropic-ai/sdk';
import { beforeAll, describe, expect, it } from 'vitest';
import { ANTHROPIC_AUTH, getJson, parseSse, postJson, type RunningSimulator, startSimulator } from './support.ts';

let sim: RunningSimulator;
let client: Anthropic;

const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

beforeAll(async () => {
  sim = await startSimulator();
  client = new Anthropic({ apiKey: 'sim-anthropic-key', baseURL: `${sim.url}/anthropic`, maxRetries: 0 });
  return () => sim.close();
});

describe('Anthropic models', () => {
  it('lists models with cursor pagination', async () => {
    const all = await client.models.list();
    expect(all.data.map((m) => m.id)).toEqual(['claude-sim-sonnet', 'claude-sim-haiku']);
    expect(all.data[0]!.type).toBe('model');
    const page = await getJson(`${sim.url}/anthropic/v1/models?limit=1`, ANTHROPIC_AUTH);
    expect(page.body.has_more).toBe(true);
    expect(page.body.first_id).toBe('claude-sim-sonnet');
    const next = await getJson(`${sim.url}/anthropic/v1/models?limit=1&after_id=claude-sim-sonnet`, ANTHROPIC_AUTH);
    expect(next.body.first_id).toBe('claude-sim-haiku');
    expect(next.body.has_more).toBe(false);
  });

  it('requires x-api-key and anthropic-version', async () => {
    const wrong = await getJson(`${sim.url}/anthropic/v1/models`, { 'x-api-key': 'bad', 'anthropic-version': '2023-06-01' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.type).toBe('error');
    expect(wrong.body?.error?.type).toBe('authentication_error');
    const noVersion = await getJson(`${sim.url}/anthropic/v1/models`, { 'x-api-key': 'sim-anthropic-key' });
    expect(noVersion.status).toBe(400);
    expect(noVersion.body?.error?.type).toBe('invalid_request_error');
  });
});

describe('Anthropic messages', () => {
  it('answers with a text block, end_turn and usage', async () => {
    const msg = await client.messages.create({
      model: 'claude-sim-sonnet',
      max_tokens: 200,
      system: 'You are terse.',
      messages: [{ role: 'user', content: 'Hello Claude' }],
    });
    expect(msg.type).toBe('message');
    expect(msg.role).toBe('assistant');
    expect(msg.stop_reason).toBe('end_turn');
    const block = msg.content[0]!;
    if (block.type !== 'text') throw new Error('expected a text block');
    expect(block.text).toMatch(/^Simulated reply to: Hello Claude\./);
    expect(msg.usage.input_tokens).toBeGreaterThan(0);
    expect(msg.usage.output_tokens).toBeGreaterThan(0);
    expect(msg.usage.cache_creation_input_tokens).toBe(0);
    expect(msg.usage.cache_read_input_tokens).toBe(0);
  });

  it('stops with max_tokens', async () => {
    const msg = await client.messages.create({ model: 'claude-sim-sonnet', max_tokens: 2, messages: [{ role: 'user', content: 'Go on' }] });
    expect(msg.stop_reason).toBe('max_tokens');
    expect(msg.usage.output_tokens).toBe(2);
  });

  it('calls a tool with tool_use and reads the tool_result', async () => {
    const msg = await client.messages.create({
      model: 'claude-sim-sonnet',
      max_tokens: 200,
      tools: [WEATHER_TOOL],
      messages: [{ role: 'user', content: "What's the weather in Oslo?" }],
    });
    expect(msg.stop_reason).toBe('tool_use');
    const use = msg.content.find((b) => b.type === 'tool_use');
    if (use?.type !== 'tool_use') throw new Error('expected a tool_use block');
    expect(use.name).toBe('get_weather');
    expect(use.input).toEqual({ city: 'Paris' });

    const followUp = await client.messages.create({
      model: 'claude-sim-sonnet',
      max_tokens: 200,
      tools: [WEATHER_TOOL],
      messages: [
        { role: 'user', content: "What's the weather in Oslo?" },
        { role: 'assistant', content: msg.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'Snowing, -3 degrees' }] },
      ],
    });
    expect(followUp.stop_reason).toBe('end_turn');
    const block = followUp.content[0]!;
    expect(block.type === 'text' && block.text).toContain('Snowing, -3 degrees');
  });

  it('streams the full event sequence (SDK and raw)', async () => {
    const stream = client.messages.stream({ model: 'claude-sim-sonnet', max_tokens: 200, messages: [{ role: 'user', content: 'Stream to me' }] });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    const final = await stream.finalMessage();
    expect(types[0]).toBe('message_start');
    expect(types[1]).toBe('content_block_start');
    expect(types.filter((t) => t === 'content_block_delta').length).toBeGreaterThanOrEqual(3);
    expect(types.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    const block = final.content[0]!;
    expect(block.type === 'text' && block.text).toMatch(/^Simulated reply to: Stream to me\./);
    expect(final.stop_reason).toBe('end_turn');
    expect(final.usage.output_tokens).toBeGreaterThan(1);

    const raw = await postJson(
      `${sim.url}/anthropic/v1/messages`,
      { model: 'claude-sim-sonnet', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'raw' }] },
      ANTHROPIC_AUTH,
    );
    const events = parseSse(raw.text);
    expect(events.map((e) => e.event)).toContain('ping');
    for (const e of events) expect((JSON.parse(e.data) as { type: string }).type).toBe(e.event);
  });

  it('streams tool input as input_json_delta', async () => {
    const stream = client.messages.stream({
      model: 'claude-sim-sonnet',
      max_tokens: 200,
      tools: [WEATHER_TOOL],
      messages: [{ role: 'user', content: 'weather?' }],
    });
    const deltaTypes = new Set<string>();
    for await (const event of stream) if (event.type === 'content_block_delta') deltaTypes.add(event.delta.type);
    const final = await stream.finalMessage();
    expect([...deltaTypes]).toEqual(['input_json_delta']);
    expect(final.stop_reason).toBe('tool_use');
    const use = final.content[0]!;
    expect(use.type === 'tool_use' && use.input).toEqual({ city: 'Paris' });
  });

  it('counts tokens exactly as usage reports them, more with tools', async () => {
    const params = { model: 'claude-sim-sonnet', system: 'sys', messages: [{ role: 'user' as const, content: 'count this' }] };
    const counted = await client.messages.countTokens(params);
    const msg = await client.messages.create({ ...params, max_tokens: 50 });
    expect(counted.input_tokens).toBe(msg.usage.input_tokens);
    const withTools = await client.messages.countTokens({ ...params, tools: [WEATHER_TOOL] });
    expect(withTools.input_tokens).toBeGreaterThan(counted.input_tokens);
  });

  it('reports deterministic, nonzero cache tokens when cache_control is used', async () => {
    const params = {
      model: 'claude-sim-sonnet',
      max_tokens: 50,
      system: [{ type: 'text' as const, text: 'A long system prompt '.repeat(20), cache_control: { type: 'ephemeral' as const } }],
      messages: [{ role: 'user' as const, content: 'cached?' }],
    };
    const first = await client.messages.create(params);
    const second = await client.messages.create(params);
    expect(first.usage.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(first.usage.cache_read_input_tokens).toBeGreaterThan(0);
    expect(second.usage).toEqual(first.usage);
    const { max_tokens: _ignored, ...countParams } = params;
    const counted = await client.messages.countTokens(countParams);
    const { input_tokens, cache_creation_input_tokens, cache_read_input_tokens } = first.usage;
    expect(input_tokens + (cache_creation_input_tokens ?? 0) + (cache_read_input_tokens ?? 0)).toBe(counted.input_tokens);
  });

  it('validates max_tokens and unknown models in Anthropic shape', async () => {
    const missing = await postJson(`${sim.url}/anthropic/v1/messages`, { model: 'claude-sim-sonnet', messages: [] }, ANTHROPIC_AUTH);
    expect(missing.status).toBe(400);
    expect(missing.body?.error?.type).toBe('invalid_request_error');
    const unknown = await postJson(
      `${sim.url}/anthropic/v1/messages`,
      { model: 'claude-nope', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] },
      ANTHROPIC_AUTH,
    );
    expect(unknown.status).toBe(404);
    expect(unknown.body?.error?.type).toBe('not_found_error');
  });
});
