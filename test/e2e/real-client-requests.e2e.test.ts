/**
 * Requests shaped as current clients send them (DECISIONS.md, "Real clients"), through the whole
 * system to the simulator: Claude Code's system turns and new fields on /messages, Codex's
 * namespace and hosted tools on /responses, and the hosted-tool rule (docs/hosted-tools.md): what
 * the provider would charge for per call never reaches it, and the response names what was removed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { seedDemoModels, waitForListing } from '../support/clients.ts';
import { fundedAccount, startTestSystem } from '../support/system-fixture.ts';

const SCHEMA = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };

/** Claude Code's shape: a system turn inside messages, adaptive thinking, effort, a deferred tool, a server tool, betas. */
function claudeCode(model: string, stream: boolean): Record<string, unknown> {
  return {
    model,
    max_tokens: 2000,
    stream,
    system: [{ type: 'text', text: 'You are Claude Code.' }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'List the files.' }] },
      { role: 'system', content: [{ type: 'text', text: 'Plan mode is on.' }] },
      { role: 'user', content: 'Go on.' },
    ],
    tools: [
      { name: 'Read', description: 'Read a file', input_schema: SCHEMA },
      { name: 'Glob', description: 'Find files', input_schema: SCHEMA, defer_loading: true },
      { type: 'tool_search_tool_regex_20251119', name: 'tool_search_tool_regex' },
    ],
    thinking: { type: 'adaptive' },
    output_config: { effort: 'medium' },
  };
}

/** Codex's shape: a namespace of functions, a hosted web search, reasoning items, store:false. */
function codex(model: string, stream: boolean, prompt = 'Start a helper. [[sim:tool=multi_agent_v1__spawn_agent]]'): Record<string, unknown> {
  return {
    model,
    instructions: 'You are Codex.',
    store: false,
    stream,
    include: ['reasoning.encrypted_content'],
    input: [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello.' }] },
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'opaque' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hi.' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: prompt }] },
    ],
    tools: [
      { type: 'function', name: 'shell', parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] }, strict: false },
      {
        type: 'namespace',
        name: 'multi_agent_v1',
        description: 'Agents',
        tools: [{ type: 'function', name: 'spawn_agent', parameters: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] } }],
      },
      { type: 'web_search', external_web_access: false },
    ],
  };
}

describe('requests as current clients send them, through the whole system', () => {
  let system: RunningSystem;
  let apiKey: string;

  beforeAll(async () => {
    system = await startTestSystem({ serviceEnv: { billing: { RATE_LIMIT_PER_SECOND: '1000' } } });
    await seedDemoModels(system);
    apiKey = (await fundedAccount(system, 10_000_000)).apiKey;
    await waitForListing(system, apiKey, ['gpt-sim-mini', 'claude-sim-sonnet', 'gemini-sim-flash', 'compat-sim-chat']);
  }, 120_000);
  afterAll(() => system?.stop());

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${system.baseUrl}/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const lastBody = async (provider: string) =>
    ((await (await fetch(`${system.simulatorUrl}/_sim/requests?provider=${provider}&limit=1`)).json()) as { requests: Array<{ body: Record<string, unknown>; headers: Record<string, string> }> }).requests.at(-1)!;

  it('Claude Code → a Claude model: system turns, thinking, effort, betas and all tools pass through unchanged', async () => {
    const res = await post('messages', claudeCode('claude-sim-sonnet', false), { 'anthropic-beta': 'some-new-beta-2026-11-01,context-management-2025-06-27' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-removed-tools')).toBeNull();
    const seen = await lastBody('anthropic');
    expect(seen.body).toMatchObject({ messages: claudeCode('', false).messages, thinking: { type: 'adaptive' }, output_config: { effort: 'medium' }, tools: claudeCode('', false).tools });
    expect(seen.headers['anthropic-beta']).toBe('some-new-beta-2026-11-01,context-management-2025-06-27');
  });

  /** Claude Code's request to `model`, plain and streamed: answered, the server tool removed and named; the provider's last body. */
  async function claudeCodeTo(model: string, provider: string): Promise<Array<Record<string, unknown>>> {
    const seen: Array<Record<string, unknown>> = [];
    for (const stream of [false, true]) {
      const res = await post('messages', claudeCode(model, stream));
      expect(res.status).toBe(200);
      expect(res.headers.get('x-gateway-removed-tools')).toBe('tool_search_tool_regex');
      expect(await res.text()).toContain(stream ? 'message_stop' : '"type":"message"');
      const body = (await lastBody(provider)).body;
      expect(JSON.stringify(body)).not.toMatch(/tool_search|defer_loading|adaptive/);
      seen.push(body);
    }
    return seen;
  }

  it('Claude Code → an OpenAI model: the system turn is a system message in its place, never a user turn', async () => {
    for (const body of await claudeCodeTo('gpt-sim-mini', 'openai')) {
      expect(body.messages).toEqual([
        { role: 'system', content: 'You are Claude Code.' },
        { role: 'user', content: 'List the files.' },
        { role: 'system', content: 'Plan mode is on.' },
        { role: 'user', content: 'Go on.' },
      ]);
    }
  });

  it('Claude Code → a Gemini model: the system turn joins the system instruction, never a user turn', async () => {
    for (const body of await claudeCodeTo('gemini-sim-flash', 'google')) {
      expect(body.systemInstruction).toEqual({ parts: [{ text: 'You are Claude Code.' }, { text: 'Plan mode is on.' }] });
      expect(body.contents).toEqual([
        { role: 'user', parts: [{ text: 'List the files.' }] },
        { role: 'user', parts: [{ text: 'Go on.' }] },
      ]);
    }
  });

  it('Codex → a Claude model: the namespace is flattened and restored in the answer, web search removed and named (plain and streamed)', async () => {
    const res = await post('responses', codex('claude-sim-sonnet', false));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-removed-tools')).toBe('web_search');
    const answer = (await res.json()) as { output: Array<Record<string, unknown>> };
    expect(answer.output).toEqual([expect.objectContaining({ type: 'function_call', name: 'spawn_agent', namespace: 'multi_agent_v1' })]);
    const sent = (await lastBody('anthropic')).body as { tools: Array<{ name: string }>; messages: unknown[] };
    expect(sent.tools.map((t) => t.name)).toEqual(['shell', 'multi_agent_v1__spawn_agent']);
    expect(JSON.stringify(sent)).not.toContain('opaque');

    const streamed = await post('responses', codex('claude-sim-sonnet', true));
    expect(streamed.headers.get('x-gateway-removed-tools')).toBe('web_search');
    const events = (await streamed.text()).split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as { type: string; item?: Record<string, unknown>; response?: { output: unknown[] } });
    const done = events.find((e) => e.type === 'response.output_item.done')!;
    expect(done.item).toMatchObject({ type: 'function_call', name: 'spawn_agent', namespace: 'multi_agent_v1' });
    expect(events.at(-1)!.type).toBe('response.completed');
  });

  it('Codex → an OpenAI model: web search (charged per call, no catalog price) never reaches the provider; everything else passes as sent', async () => {
    for (const stream of [false, true]) {
      const res = await post('responses', codex('gpt-sim-mini', stream, 'Hello again.'));
      expect(res.status).toBe(200);
      expect(res.headers.get('x-gateway-removed-tools')).toBe('web_search');
      await res.text();
      const sent = (await lastBody('openai')).body as Record<string, unknown>;
      expect((sent.tools as Array<{ type: string }>).map((t) => t.type)).toEqual(['function', 'namespace']);
      expect(sent).toMatchObject({ store: false, include: ['reasoning.encrypted_content'] });
      expect(JSON.stringify(sent.input)).toContain('"encrypted_content":"opaque"');
    }
  });

  /** A short messages stream's input tokens in message_start and in message_delta. */
  async function usages(model: string): Promise<{ start: number; delta: number }> {
    const res = await post('messages', { model, max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'Count my tokens, please.' }] });
    const events = (await res.text()).split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as { type: string; message?: { usage: { input_tokens: number } }; usage?: { input_tokens: number } });
    return { start: events.find((e) => e.type === 'message_start')!.message!.usage.input_tokens, delta: events.find((e) => e.type === 'message_delta')!.usage!.input_tokens };
  }

  it('a messages stream translated for another provider reports the input tokens in message_start: the counter\'s count, else 0 with the real count in message_delta', async () => {
    // Gemini's counter counts as its usage does: the same number up front and at the end.
    const gemini = await usages('gemini-sim-flash');
    expect(gemini.start).toBeGreaterThan(0);
    expect(gemini.start).toBe(gemini.delta);
    // OpenAI's counter (responses input tokens) for a chat upstream: a real count up front.
    expect((await usages('gpt-sim-mini')).start).toBeGreaterThan(0);
    // The compatible provider has no counter: 0 up front, never an estimate; the count at the end.
    const compat = await usages('compat-sim-chat');
    expect(compat.start).toBe(0);
    expect(compat.delta).toBeGreaterThan(0);
  });

  it('fields and betas the gateway does not know pass through unchanged to a provider of the same protocol', async () => {
    const future = { a_field_from_next_year: { mode: 'on', level: 3 } };
    await post('responses', { model: 'gpt-sim-mini', input: 'hi', ...future, text: { verbosity: 'low' } });
    expect((await lastBody('openai')).body).toMatchObject({ ...future, text: { verbosity: 'low' } });
    await post('chat/completions', { model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'hi' }], ...future, verbosity: 'low' });
    expect((await lastBody('openai')).body).toMatchObject({ ...future, verbosity: 'low' });
    const messages = [{ role: 'user', content: [{ type: 'text', text: 'hi', a_block_field: true }] }];
    await post('messages', { model: 'claude-sim-sonnet', max_tokens: 20, messages, ...future, context_management: { edits: [] } }, { 'anthropic-beta': 'a-beta-from-next-year-2027-01-01' });
    const seen = await lastBody('anthropic');
    expect(seen.body).toMatchObject({ ...future, messages, context_management: { edits: [] } });
    expect(seen.headers['anthropic-beta']).toBe('a-beta-from-next-year-2027-01-01');
  });

  it('a chat request with web_search_options: the option is not sent to the OpenAI provider, and the response says so', async () => {
    const res = await post('chat/completions', { model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'news?' }], web_search_options: {} });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-removed-tools')).toBe('web_search_options');
    expect((await lastBody('openai')).body.web_search_options).toBeUndefined();
  });
});
