/**
 * The simulator keeps up with the protocols as current clients speak them: system turns inside
 * messages, structured output (an instance of the requested schema), reasoning when asked, and a
 * call of a named tool (tool choice or the `tool=NAME` directive).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { sampleInstance } from '../src/tool-args.ts';
import { ANTHROPIC_AUTH, GOOGLE_AUTH, OPENAI_AUTH, parseSse, postJson, type RunningSimulator, startSimulator } from './support.ts';

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startSimulator();
  return () => sim.close();
});

const messagesUrl = () => `${sim.url}/anthropic/v1/messages`;
const chatUrl = () => `${sim.url}/openai/v1/chat/completions`;
const responsesUrl = () => `${sim.url}/openai/v1/responses`;
const geminiUrl = () => `${sim.url}/google/v1beta/models/gemini-sim-flash:generateContent`;

const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 3 },
    age: { type: 'integer', minimum: 18 },
    tags: { type: 'array', items: { type: 'string' }, minItems: 2 },
    kind: { enum: ['person', 'robot'] },
    address: { $ref: '#/$defs/address' },
    nickname: { anyOf: [{ type: 'null' }, { type: 'string' }] },
    when: { type: 'string', format: 'date-time' },
  },
  required: ['name', 'age', 'tags', 'kind', 'address', 'nickname', 'when'],
  additionalProperties: false,
  $defs: { address: { type: 'object', properties: { city: { type: 'string' }, zip: { const: '75001' } }, required: ['city', 'zip'] } },
};

/** Whether `value` is an instance of `SCHEMA` (checked by hand, independently of the sampler). */
function matchesSchema(value: unknown): boolean {
  const v = value as Record<string, unknown>;
  const address = v.address as Record<string, unknown>;
  return (
    Object.keys(v).sort().join() === 'address,age,kind,name,nickname,tags,when' &&
    typeof v.name === 'string' && v.name.length >= 3 &&
    Number.isInteger(v.age) && (v.age as number) >= 18 &&
    Array.isArray(v.tags) && v.tags.length >= 2 && v.tags.every((t) => typeof t === 'string') &&
    (v.kind === 'person' || v.kind === 'robot') &&
    typeof address.city === 'string' && address.zip === '75001' &&
    v.nickname === null &&
    !Number.isNaN(Date.parse(v.when as string))
  );
}

const TOOLS = [
  { name: 'get_weather', schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
  { name: 'read_file', schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } },
];

describe('schema instances', () => {
  it('fills required properties with their types, enums, consts, refs, bounds and formats', () => {
    expect(matchesSchema(sampleInstance(SCHEMA))).toBe(true);
  });

  it('ends on a schema that requires itself', () => {
    const tree = { type: 'object', properties: { child: { $ref: '#' } }, required: ['child'] };
    expect(JSON.stringify(sampleInstance(tree)).length).toBeLessThan(1000);
  });
});

describe('Anthropic messages', () => {
  const base = { model: 'claude-sim-sonnet', max_tokens: 500 };

  it('accepts system turns inside messages, and answers the last user turn', async () => {
    const res = await postJson(messagesUrl(), { ...base, messages: [{ role: 'user', content: 'First question' }, { role: 'system', content: [{ type: 'text', text: 'Be terse.' }] }, { role: 'user', content: 'Second question' }] }, ANTHROPIC_AUTH);
    expect(res.status).toBe(200);
    expect(res.body?.content?.[0]?.text).toMatch(/^Simulated reply to: Second question/);
  });

  it('answers output_config.format with an instance of the schema', async () => {
    const res = await postJson(messagesUrl(), { ...base, messages: [{ role: 'user', content: 'Describe someone' }], output_config: { format: { type: 'json_schema', schema: SCHEMA } } }, ANTHROPIC_AUTH);
    expect(matchesSchema(JSON.parse(String(res.body?.content?.[0]?.text)))).toBe(true);
  });

  it('answers structured output by a forced tool with arguments that match its schema', async () => {
    const res = await postJson(messagesUrl(), { ...base, messages: [{ role: 'user', content: 'Describe' }], tools: [{ name: 'record', input_schema: SCHEMA }], tool_choice: { type: 'tool', name: 'record' } }, ANTHROPIC_AUTH);
    expect(res.body?.content?.[0]?.name).toBe('record');
    expect(matchesSchema(res.body?.content?.[0]?.input)).toBe(true);
  });

  it('thinks first when thinking is adaptive or enabled: a thinking block with a signature, plain and streamed', async () => {
    const body = { ...base, messages: [{ role: 'user', content: 'Think about it' }], thinking: { type: 'adaptive' }, output_config: { effort: 'high' } };
    const res = await postJson(messagesUrl(), body, ANTHROPIC_AUTH);
    expect(res.body?.content?.[0]).toMatchObject({ type: 'thinking', thinking: expect.stringContaining('Think about it'), signature: expect.any(String) });
    expect(res.body?.content?.[1]?.type).toBe('text');
    const streamed = await postJson(messagesUrl(), { ...body, thinking: { type: 'enabled', budget_tokens: 1024 }, stream: true }, ANTHROPIC_AUTH);
    const events = parseSse(streamed.text).map((e) => JSON.parse(e.data) as { type: string; index?: number; content_block?: { type: string }; delta?: { type: string } });
    expect(events.filter((e) => e.type === 'content_block_start').map((e) => [e.index, e.content_block!.type])).toEqual([[0, 'thinking'], [1, 'text']]);
    expect(events.filter((e) => e.type === 'content_block_delta' && e.index === 0).map((e) => e.delta!.type)).toEqual(['thinking_delta', 'signature_delta']);
  });

  it('calls the tool a directive names, not only the first', async () => {
    const tools = TOOLS.map((t) => ({ name: t.name, input_schema: t.schema }));
    const res = await postJson(messagesUrl(), { ...base, tools, messages: [{ role: 'user', content: 'Open it [[sim:tool=read_file]]' }] }, ANTHROPIC_AUTH);
    expect(res.body?.content?.[0]).toMatchObject({ type: 'tool_use', name: 'read_file', input: { path: 'sim-path' } });
    const choice = await postJson(messagesUrl(), { ...base, tools, tool_choice: { type: 'tool', name: 'read_file' }, messages: [{ role: 'user', content: 'Open it' }] }, ANTHROPIC_AUTH);
    expect(choice.body?.content?.[0]?.name).toBe('read_file');
    // A directive naming no tool of the request calls none.
    const none = await postJson(messagesUrl(), { ...base, tools, messages: [{ role: 'user', content: 'Open it [[sim:tool=missing]]' }] }, ANTHROPIC_AUTH);
    expect(none.body?.content?.[0]?.type).toBe('text');
  });
});

describe('OpenAI chat completions', () => {
  const tools = TOOLS.map((t) => ({ type: 'function', function: { name: t.name, parameters: t.schema } }));

  it('answers response_format json_schema with an instance, json_object with an object', async () => {
    const res = await postJson(chatUrl(), { model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'Describe' }], response_format: { type: 'json_schema', json_schema: { name: 'p', schema: SCHEMA, strict: true } } }, OPENAI_AUTH);
    expect(matchesSchema(JSON.parse(String(res.body?.choices?.[0]?.message?.content)))).toBe(true);
    const obj = await postJson(chatUrl(), { model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'Describe' }], response_format: { type: 'json_object' } }, OPENAI_AUTH);
    expect(JSON.parse(String(obj.body?.choices?.[0]?.message?.content))).toEqual({ reply: expect.any(String) });
  });

  it('calls a named tool (tool choice or directive) and reports reasoning tokens for a reasoning effort', async () => {
    const res = await postJson(chatUrl(), { model: 'gpt-sim-mini', tools, messages: [{ role: 'user', content: 'go [[sim:tool=read_file]]' }], reasoning_effort: 'high' }, OPENAI_AUTH);
    expect(res.body?.choices?.[0]?.message?.tool_calls?.[0]?.function?.name).toBe('read_file');
    expect(Number(res.body?.usage?.completion_tokens_details?.reasoning_tokens)).toBeGreaterThan(0);
    const choice = await postJson(chatUrl(), { model: 'gpt-sim-mini', tools, tool_choice: { type: 'function', function: { name: 'read_file' } }, messages: [{ role: 'user', content: 'go' }] }, OPENAI_AUTH);
    expect(choice.body?.choices?.[0]?.message?.tool_calls?.[0]?.function?.name).toBe('read_file');
  });
});

describe('OpenAI responses', () => {

  it('answers text.format json_schema with an instance of the schema', async () => {
    const res = await postJson(responsesUrl(), { model: 'gpt-sim-mini', input: 'Describe', text: { format: { type: 'json_schema', name: 'p', schema: SCHEMA, strict: true } } }, OPENAI_AUTH);
    const message = (res.body.output as unknown as Array<{ type: string; content: Array<{ text: string }> }>).find((i) => i.type === 'message')!;
    expect(matchesSchema(JSON.parse(message.content[0]!.text))).toBe(true);
  });

  it('emits a reasoning item first when a reasoning effort is asked, with encrypted content when included (plain and streamed)', async () => {
    const body = { model: 'gpt-sim-mini', input: 'Why?', reasoning: { effort: 'medium', summary: 'auto' }, include: ['reasoning.encrypted_content'], store: false };
    const res = await postJson(responsesUrl(), body, OPENAI_AUTH);
    const output = res.body?.output as unknown as Array<Record<string, unknown>>;
    expect(output.map((i) => i.type)).toEqual(['reasoning', 'message']);
    expect(output[0]).toMatchObject({ summary: [{ type: 'summary_text', text: expect.stringContaining('Why?') }], encrypted_content: expect.any(String) });
    expect(Number(res.body?.usage?.output_tokens_details?.reasoning_tokens)).toBeGreaterThan(0);

    const streamed = await postJson(responsesUrl(), { ...body, stream: true }, OPENAI_AUTH);
    const events = parseSse(streamed.text).map((e) => JSON.parse(e.data) as { type: string; output_index?: number; item?: { type: string }; response?: { output: Array<{ type: string }> } });
    expect(events.filter((e) => e.type === 'response.output_item.done').map((e) => [e.output_index, e.item!.type])).toEqual([[0, 'reasoning'], [1, 'message']]);
    expect(events.some((e) => e.type === 'response.reasoning_summary_text.delta')).toBe(true);
    expect(events.at(-1)!.response!.output.map((i) => i.type)).toEqual(['reasoning', 'message']);
    // Asked by directive, without a reasoning effort.
    const directed = await postJson(responsesUrl(), { model: 'gpt-sim-mini', input: 'Why? [[sim:reasoning]]' }, OPENAI_AUTH);
    expect((directed.body.output as unknown as Array<{ type: string }>)[0]!.type).toBe('reasoning');
  });

  it('calls a custom (free-form) tool with text: a custom_tool_call item, streamed with custom_tool_call_input events', async () => {
    const tools = [{ type: 'custom', name: 'apply_patch', description: 'Edit files' }, { type: 'function', name: 'shell', parameters: {} }];
    const res = await postJson(responsesUrl(), { model: 'gpt-sim-mini', input: 'Patch [[sim:tool=apply_patch]]', tools }, OPENAI_AUTH);
    expect(res.body?.output?.[0]).toMatchObject({ type: 'custom_tool_call', name: 'apply_patch', input: 'sim-apply_patch-input' });
    const streamed = await postJson(responsesUrl(), { model: 'gpt-sim-mini', input: 'Patch', tools, tool_choice: { type: 'custom', name: 'apply_patch' }, stream: true }, OPENAI_AUTH);
    const events = parseSse(streamed.text).map((e) => JSON.parse(e.data) as { type: string; delta?: string; input?: string });
    expect(events.filter((e) => e.type === 'response.custom_tool_call_input.delta').map((e) => e.delta).join('')).toBe('sim-apply_patch-input');
    expect(events.find((e) => e.type === 'response.custom_tool_call_input.done')!.input).toBe('sim-apply_patch-input');
    expect(events.some((e) => e.type.startsWith('response.function_call_arguments'))).toBe(false);
  });

  it('calls a function inside a namespace, naming its namespace', async () => {
    const tools = [{ type: 'namespace', name: 'multi_agent_v1', description: 'Agents', tools: [{ type: 'function', name: 'spawn_agent', parameters: { type: 'object', properties: { message: { type: 'string' } } } }] }, { type: 'function', name: 'shell', parameters: {} }];
    const res = await postJson(responsesUrl(), { model: 'gpt-sim-mini', input: 'Start [[sim:tool=spawn_agent]]', tools }, OPENAI_AUTH);
    expect(res.body?.output?.[0]).toMatchObject({ type: 'function_call', name: 'spawn_agent', namespace: 'multi_agent_v1', arguments: '{"message":"sim-message"}' });
  });
});

describe('Gemini generateContent', () => {

  it('answers responseJsonSchema (or responseSchema) with an instance of the schema', async () => {
    for (const key of ['responseJsonSchema', 'responseSchema']) {
      const res = await postJson(geminiUrl(), { contents: [{ role: 'user', parts: [{ text: 'Describe' }] }], generationConfig: { responseMimeType: 'application/json', [key]: SCHEMA } }, GOOGLE_AUTH);
      expect(matchesSchema(JSON.parse(String(res.body?.candidates?.[0]?.content?.parts?.[0]?.text)))).toBe(true);
    }
  });

  it('shows a thought first when thoughts are included, counted apart', async () => {
    const res = await postJson(geminiUrl(), { contents: [{ role: 'user', parts: [{ text: 'Ponder' }] }], generationConfig: { thinkingConfig: { includeThoughts: true } } }, GOOGLE_AUTH);
    expect(res.body?.candidates?.[0]?.content?.parts?.[0]).toMatchObject({ thought: true, text: expect.stringContaining('Ponder') });
    const usage = res.body?.usageMetadata as unknown as Record<string, number>;
    expect(usage.thoughtsTokenCount).toBeGreaterThan(0);
    expect(usage.totalTokenCount).toBe(usage.promptTokenCount! + usage.candidatesTokenCount! + usage.thoughtsTokenCount!);
  });

  it('signs the thinking of a function call on the call part (thoughtSignature), streamed too', async () => {
    const body = {
      contents: [{ role: 'user', parts: [{ text: 'Weather? [[sim:reasoning; tool=get_weather]]' }] }],
      tools: [{ functionDeclarations: [{ name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }] }],
    };
    const res = await postJson(geminiUrl(), body, GOOGLE_AUTH);
    const parts = res.body?.candidates?.[0]?.content?.parts as unknown as Array<Record<string, unknown>>;
    expect(parts[0]).toMatchObject({ thought: true });
    expect(parts[1]).toMatchObject({ functionCall: { name: 'get_weather' }, thoughtSignature: expect.any(String) });
    const streamed = await postJson(geminiUrl().replace(':generateContent', ':streamGenerateContent?alt=sse'), body, GOOGLE_AUTH);
    const chunks = parseSse(streamed.text).map((e) => JSON.parse(e.data) as { candidates: Array<{ content: { parts: Array<Record<string, unknown>> } }> });
    expect(chunks.at(-1)!.candidates[0]!.content.parts[0]).toMatchObject({ functionCall: { name: 'get_weather' }, thoughtSignature: expect.any(String) });
    // Without thinking, a call is not signed.
    const plain = await postJson(geminiUrl(), { ...body, contents: [{ role: 'user', parts: [{ text: 'Weather? [[sim:tool=get_weather]]' }] }] }, GOOGLE_AUTH);
    expect(plain.body?.candidates?.[0]?.content?.parts?.[0]).not.toHaveProperty('thoughtSignature');
  });
});
