import { describe, expect, it } from 'vitest';
import { maxOutputTokens, TranslateError, translateRequest, type Dialect } from '../src/index.ts';
import { CODECS } from '../src/codecs.ts';
import type { IrRequest } from '../src/ir.ts';
import { DIALECTS, PNG, REQUESTS } from './fixtures.ts';

const OPTS = { upstreamModel: 'upstream-model' };

/**
 * What translating `REQUESTS[from]` into `to` must give: `REQUESTS[to]`, except where the source
 * says more than the fixture of `to` (fields responses carries that chat shares or keeps).
 */
function expectedRequest(from: Dialect, to: Dialect): Record<string, unknown> {
  const expected = structuredClone(REQUESTS[to]);
  if (from === 'responses' && to === 'chat') {
    expected.store = false;
    const [tool] = expected.tools as Array<{ function: Record<string, unknown> }>;
    tool!.function.strict = false;
    const [, user] = expected.messages as Array<{ content: Array<Record<string, Record<string, unknown>>> }>;
    user!.content[1]!.image_url!.detail = 'auto';
  }
  if (to === 'gemini') delete expected.model;
  return expected;
}

/** What a round trip must keep: everything but hints a dialect lacks (image detail, strict). */
function essence(body: Record<string, unknown>, dialect: Dialect): IrRequest {
  const ir = CODECS[dialect].parseRequest(body);
  for (const m of ir.messages) for (const p of m.parts) if (p.type === 'image') delete p.detail;
  for (const t of ir.tools) delete t.strict;
  return ir;
}

function chatBody(extra: Record<string, unknown>): Record<string, unknown> {
  return { model: 'm', messages: [{ role: 'user', content: 'hi' }], ...extra };
}

/** A chat function tool without parameters. */
function chatFunction(name: string): Record<string, unknown> {
  return { type: 'function', function: { name, parameters: { type: 'object', properties: {} } } };
}

/** The parts of the model turn of `REQUESTS.chat` sent to gemini model `model`. */
function geminiModelTurn(model: string): unknown[] {
  const contents = translateRequest('chat', 'gemini', REQUESTS.chat, { ...OPTS, upstreamModel: model }).contents as Array<{ parts: unknown[] }>;
  return contents[1]!.parts;
}

const pairs = DIALECTS.flatMap((from) => DIALECTS.filter((to) => to !== from).map((to) => [from, to] as const));

describe('translateRequest across dialects', () => {
  it.each(pairs)('%s → %s gives the target wire body', (from, to) => {
    expect(translateRequest(from, to, REQUESTS[from], OPTS)).toEqual(expectedRequest(from, to));
  });

  it.each(pairs)('%s → %s → back keeps system, text, image, tools, calls and results', (from, via) => {
    const there = translateRequest(from, via, REQUESTS[from], OPTS);
    const back = translateRequest(via, from, there, OPTS);
    expect(essence(back, from)).toEqual(essence(REQUESTS[from], from));
    expect(essence(back, from).messages).toHaveLength(3);
  });
});

describe('translateRequest within one dialect', () => {
  it.each(DIALECTS)('%s passes the body through, only the model changes', (dialect) => {
    const body = { ...REQUESTS[dialect], model: 'public-model', some_future_field: { x: 1 } };
    const out = translateRequest(dialect, dialect, body, OPTS);
    const { model: _a, ...rest } = out;
    const { model: _b, ...original } = body;
    expect(rest).toEqual(original);
    expect(out.model).toBe(dialect === 'gemini' ? undefined : 'upstream-model');
  });

  it("leaves the client's stream fields as they are: the provider adapter sets them for its call", () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_obfuscation: false } };
    expect(translateRequest('chat', 'chat', body, { upstreamModel: 'u' })).toEqual({ ...body, model: 'u' });
  });

  it('does not mutate the caller body', () => {
    const body = structuredClone(REQUESTS.chat);
    translateRequest('chat', 'chat', body, { upstreamModel: 'u' });
    translateRequest('chat', 'messages', body, { upstreamModel: 'u' });
    expect(body).toEqual(REQUESTS.chat);
  });
});

describe('translateRequest details', () => {
  it('a translated body says nothing of streaming, even from a streamed request: the provider adapter sets it for its call', () => {
    const opts = { upstreamModel: 'u' };
    const streamed = { messages: { ...REQUESTS.messages, stream: true }, chat: { ...REQUESTS.chat, stream: true, stream_options: { include_usage: true } } };
    for (const out of [
      translateRequest('messages', 'chat', streamed.messages, opts),
      translateRequest('chat', 'messages', streamed.chat, opts),
      translateRequest('chat', 'responses', streamed.chat, opts),
      translateRequest('chat', 'gemini', streamed.chat, opts),
    ]) {
      expect(out).not.toHaveProperty('stream');
      expect(out).not.toHaveProperty('stream_options');
    }
  });

  it('gives messages a max_tokens when the request has none: the caller default, else 4096', () => {
    expect(translateRequest('chat', 'messages', chatBody({}), { ...OPTS, defaultMaxOutputTokens: 8192 }).max_tokens).toBe(8192);
    expect(translateRequest('chat', 'messages', chatBody({}), OPTS).max_tokens).toBe(4096);
    expect(translateRequest('chat', 'messages', chatBody({ max_tokens: 100 }), OPTS).max_tokens).toBe(100);
  });

  it.each(DIALECTS.flatMap((from) => DIALECTS.map((to) => [from, to] as const)))(
    '%s → %s: a request without an output cap is sent the caller default, one with a cap keeps it',
    (from, to) => {
      const uncapped = structuredClone(REQUESTS[from]);
      for (const field of ['max_tokens', 'max_completion_tokens', 'max_output_tokens']) delete uncapped[field];
      if (from === 'gemini') uncapped.generationConfig = { ...(uncapped.generationConfig as object), maxOutputTokens: undefined };
      const withDefault = translateRequest(from, to, uncapped, { ...OPTS, defaultMaxOutputTokens: 1234 });
      expect(maxOutputTokens(to, withDefault)).toBe(1234);
      const capped = translateRequest(from, to, REQUESTS[from], { ...OPTS, defaultMaxOutputTokens: 1234 });
      expect(maxOutputTokens(to, capped)).toBe(maxOutputTokens(from, REQUESTS[from]));
    },
  );

  it('reads chat max_completion_tokens before the legacy max_tokens', () => {
    const out = translateRequest('chat', 'responses', chatBody({ max_tokens: 50, max_completion_tokens: 70 }), OPTS);
    expect(out.max_output_tokens).toBe(70);
  });

  it('caps temperature at 1 for messages', () => {
    expect(translateRequest('chat', 'messages', chatBody({ temperature: 1.6 }), OPTS).temperature).toBe(1);
    expect(translateRequest('chat', 'gemini', chatBody({ temperature: 1.6 }), OPTS)).toMatchObject({ generationConfig: { temperature: 1.6 } });
  });

  it('maps stop sequences, top_k and seed where the target has them', () => {
    const body = chatBody({ stop: 'END', seed: 7 });
    expect(translateRequest('chat', 'messages', body, OPTS).stop_sequences).toEqual(['END']);
    expect(translateRequest('chat', 'gemini', body, OPTS).generationConfig).toEqual({ stopSequences: ['END'], seed: 7 });
    const messagesBody = { ...REQUESTS.messages, stop_sequences: ['A', 'B'], top_k: 40 };
    expect(translateRequest('messages', 'chat', messagesBody, OPTS).stop).toEqual(['A', 'B']);
    expect(translateRequest('messages', 'gemini', messagesBody, OPTS)).toMatchObject({ generationConfig: { stopSequences: ['A', 'B'], topK: 40 } });
  });

  it('folds chat system and developer messages into the system prompt, one segment each', () => {
    const body = {
      model: 'm',
      messages: [
        { role: 'system', content: 'Rule one.' },
        { role: 'developer', content: [{ type: 'text', text: 'Rule two.' }] },
        { role: 'user', content: 'hi' },
      ],
    };
    expect(translateRequest('chat', 'messages', body, OPTS).system).toEqual([
      { type: 'text', text: 'Rule one.' },
      { type: 'text', text: 'Rule two.' },
    ]);
    expect(translateRequest('chat', 'responses', body, OPTS).instructions).toBe('Rule one.\n\nRule two.');
    expect(translateRequest('chat', 'gemini', body, OPTS).systemInstruction).toEqual({ parts: [{ text: 'Rule one.' }, { text: 'Rule two.' }] });
  });

  it('hoists responses system/developer items and reads a string input as one user message', () => {
    const body = { model: 'm', input: [{ role: 'developer', content: 'Be brief.' }, { role: 'user', content: 'hi' }] };
    expect(translateRequest('responses', 'chat', body, OPTS).messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
    ]);
    expect(translateRequest('responses', 'messages', { model: 'm', input: 'hello' }, OPTS).messages).toEqual([{ role: 'user', content: 'hello' }]);
  });

  it('maps image URLs: http URLs stay URLs, gemini gets fileData with a guessed type', () => {
    const body = {
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/cat.webp?size=2', detail: 'low' } }] }],
    };
    expect(translateRequest('chat', 'messages', body, OPTS).messages).toEqual([
      { role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/cat.webp?size=2' } }] },
    ]);
    expect(translateRequest('chat', 'responses', body, OPTS).input).toEqual([
      { role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/cat.webp?size=2', detail: 'low' }] },
    ]);
    expect(translateRequest('chat', 'gemini', body, OPTS).contents).toEqual([
      { role: 'user', parts: [{ fileData: { mimeType: 'image/webp', fileUri: 'https://example.com/cat.webp?size=2' } }] },
    ]);
  });

  const choices: Array<[string, Record<Dialect, unknown>]> = [
    ['auto', { chat: 'auto', messages: { type: 'auto' }, responses: 'auto', gemini: { functionCallingConfig: { mode: 'AUTO' } } }],
    ['none', { chat: 'none', messages: { type: 'none' }, responses: 'none', gemini: { functionCallingConfig: { mode: 'NONE' } } }],
    ['required', { chat: 'required', messages: { type: 'any' }, responses: 'required', gemini: { functionCallingConfig: { mode: 'ANY' } } }],
    [
      'one tool',
      {
        chat: { type: 'function', function: { name: 'get_weather' } },
        messages: { type: 'tool', name: 'get_weather' },
        responses: { type: 'function', name: 'get_weather' },
        gemini: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
      },
    ],
  ];
  const choiceField: Record<Dialect, string> = { chat: 'tool_choice', messages: 'tool_choice', responses: 'tool_choice', gemini: 'toolConfig' };

  it.each(choices.flatMap(([name, wire]) => pairs.map(([from, to]) => [name, from, to, wire] as const)))(
    'tool choice %s: %s → %s',
    (_name, from, to, wire) => {
      const body = { ...REQUESTS[from], [choiceField[from]]: wire[from] };
      expect(translateRequest(from, to, body, OPTS)[choiceField[to]]).toEqual(wire[to]);
    },
  );

  describe('allowed_tools: only the allowed tools are sent, with the mode', () => {
    const chat = chatBody({ tools: [chatFunction('get_weather'), chatFunction('get_time')], tool_choice: { type: 'allowed_tools', allowed_tools: { mode: 'required', tools: [{ type: 'function', function: { name: 'get_time' } }] } } });
    const responses = {
      model: 'm',
      input: 'hi',
      tools: ['get_weather', 'get_time'].map((name) => ({ type: 'function', name, parameters: { type: 'object', properties: {} } })),
      tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'get_time' }] },
    };

    it.each([
      ['chat', chat, 'messages', { type: 'any' }],
      ['chat', chat, 'gemini', { functionCallingConfig: { mode: 'ANY' } }],
      ['chat', chat, 'responses', 'required'],
      ['responses', responses, 'messages', { type: 'auto' }],
      ['responses', responses, 'chat', 'auto'],
    ] as const)('%s → %s', (from, body, to, choice) => {
      const out = translateRequest(from, to, body, OPTS);
      const names = to === 'gemini' ? (out.tools as Array<{ functionDeclarations: Array<{ name: string }> }>)[0]!.functionDeclarations.map((d) => d.name) : (out.tools as Array<Record<string, unknown>>).map((t) => (t.name ?? (t.function as { name: string }).name) as string);
      expect(names).toEqual(['get_time']);
      expect(out[choiceField[to]]).toEqual(choice);
    });

    it('refuses a mode it cannot say, or a subset naming none of the tools', () => {
      expect(() => translateRequest('responses', 'messages', { ...responses, tool_choice: { ...responses.tool_choice, mode: 'sometimes' } }, OPTS)).toThrow(/mode "sometimes"/);
      expect(() => translateRequest('responses', 'messages', { ...responses, tool_choice: { ...responses.tool_choice, tools: [{ type: 'function', name: 'nope' }] } }, OPTS)).toThrow(/none of the request's tools/);
    });
  });

  it('drops tool choice when there are no tools (servers reject it)', () => {
    const body = chatBody({ tool_choice: 'required' });
    for (const to of ['messages', 'responses', 'gemini'] as const) {
      const out = translateRequest('chat', to, body, OPTS);
      expect(out).not.toHaveProperty('tool_choice');
      expect(out).not.toHaveProperty('toolConfig');
    }
  });

  it('maps parallel_tool_calls false to disable_parallel_tool_use and back', () => {
    const body = { ...REQUESTS.chat, parallel_tool_calls: false };
    const messages = translateRequest('chat', 'messages', body, OPTS);
    expect(messages.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
    expect(translateRequest('messages', 'chat', messages, OPTS)).toMatchObject({ tool_choice: 'auto', parallel_tool_calls: false });
    expect(translateRequest('chat', 'responses', body, OPTS).parallel_tool_calls).toBe(false);
  });

  it('groups parallel tool results into one turn and splits them for chat', () => {
    const body = {
      model: 'm',
      messages: [
        { role: 'user', content: 'Paris and Rome?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_a', content: '18C' },
        { role: 'tool', tool_call_id: 'call_b', content: '25C' },
      ],
    };
    const messages = translateRequest('chat', 'messages', body, OPTS);
    expect(messages.messages).toEqual([
      { role: 'user', content: 'Paris and Rome?' },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_a', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'call_b', name: 'get_weather', input: { city: 'Rome' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_a', content: '18C' },
          { type: 'tool_result', tool_use_id: 'call_b', content: '25C' },
        ],
      },
    ]);
    expect(translateRequest('messages', 'chat', messages, OPTS).messages).toEqual(body.messages);
    const gemini = translateRequest('chat', 'gemini', body, OPTS);
    expect((gemini.contents as unknown[])[2]).toEqual({
      role: 'user',
      parts: [
        { functionResponse: { name: 'get_weather', response: { output: '18C' } } },
        { functionResponse: { name: 'get_weather', response: { output: '25C' } } },
      ],
    });
  });

  it('matches gemini function responses to calls by name, in order, with synthesized ids', () => {
    const body = {
      contents: [
        { role: 'user', parts: [{ text: 'Paris and Rome?' }] },
        {
          role: 'model',
          parts: [
            { functionCall: { name: 'get_weather', args: { city: 'Paris' } } },
            { functionCall: { name: 'get_time', args: {} } },
            { functionCall: { name: 'get_weather', args: { city: 'Rome' } } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'get_weather', response: { output: '18C' } } },
            { functionResponse: { name: 'get_time', response: { output: '10:00' } } },
            { functionResponse: { name: 'get_weather', response: { error: 'unknown city' } } },
          ],
        },
      ],
    };
    const out = translateRequest('gemini', 'messages', body, OPTS);
    expect(out.messages).toEqual([
      { role: 'user', content: 'Paris and Rome?' },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_0', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'call_1', name: 'get_time', input: {} },
          { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { city: 'Rome' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_0', content: '18C' },
          { type: 'tool_result', tool_use_id: 'call_1', content: '10:00' },
          { type: 'tool_result', tool_use_id: 'call_2', content: 'unknown city', is_error: true },
        ],
      },
    ]);
    expect(translateRequest('messages', 'gemini', out, OPTS).contents).toEqual(body.contents);
  });

  it('marks replayed calls for Gemini 3+, which rejects calls without a thought signature', () => {
    const parts = geminiModelTurn;
    expect(parts('gemini-3-pro-preview')).toEqual([
      { text: 'Checking.' },
      { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'skip_thought_signature_validator' },
    ]);
    expect(parts('models/gemini-3.1-flash')[1]).toHaveProperty('thoughtSignature');
    expect(parts('gemini-2.5-flash')[1]).not.toHaveProperty('thoughtSignature');
  });

  it('keeps structured gemini function responses as JSON text', () => {
    const body = {
      contents: [
        { role: 'model', parts: [{ functionCall: { name: 'f', args: {} } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'f', response: { temp: 18, unit: 'C' } } }] },
      ],
    };
    expect(translateRequest('gemini', 'chat', body, OPTS).messages).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_0', content: '{"temp":18,"unit":"C"}' },
    ]);
  });

  it('keeps a tool result of several text parts apart: parts for chat, lines for gemini', () => {
    const body = {
      model: 'm',
      max_tokens: 50,
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_a', name: 'get_weather', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_a', content: [{ type: 'text', text: 'sunny' }, { type: 'text', text: '20C' }] }] },
      ],
    };
    const chat = translateRequest('messages', 'chat', body, OPTS).messages as Array<Record<string, unknown>>;
    expect(chat.find((m) => m.role === 'tool')!.content).toEqual([{ type: 'text', text: 'sunny' }, { type: 'text', text: '20C' }]);
    const gemini = JSON.stringify(translateRequest('messages', 'gemini', body, OPTS).contents);
    expect(gemini).toContain(JSON.stringify({ output: 'sunny\n20C' }));
  });

  it('carries images inside tool results where the target can, else right after them', () => {
    const body = {
      ...REQUESTS.messages,
      messages: [
        (REQUESTS.messages.messages as unknown[])[1],
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'call_0',
              content: [
                { type: 'text', text: 'radar:' },
                { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
              ],
            },
          ],
        },
      ],
    };
    expect((translateRequest('messages', 'chat', body, OPTS).messages as unknown[]).slice(-2)).toEqual([
      { role: 'tool', tool_call_id: 'call_0', content: 'radar:' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }] },
    ]);
    expect((translateRequest('messages', 'responses', body, OPTS).input as unknown[]).at(-1)).toEqual({
      type: 'function_call_output',
      call_id: 'call_0',
      output: [
        { type: 'input_text', text: 'radar:' },
        { type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'auto' },
      ],
    });
    expect((translateRequest('messages', 'gemini', body, OPTS).contents as unknown[]).at(-1)).toEqual({
      role: 'user',
      parts: [
        { functionResponse: { name: 'get_weather', response: { output: 'radar:' } } },
        { inlineData: { mimeType: 'image/png', data: PNG } },
      ],
    });
  });

  it("sends Gemini a function's responses in the order of its calls, whatever order the client answered them in", () => {
    const body = chatBody({
      messages: [
        { role: 'user', content: 'weather in Paris and Oslo?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'c2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c2', content: 'Oslo: -3C' },
        { role: 'tool', tool_call_id: 'c1', content: 'Paris: 12C' },
      ],
    });
    const { contents } = translateRequest('chat', 'gemini', body, OPTS) as { contents: Array<{ parts: Array<Record<string, { args?: { city: string }; response?: unknown }>> }> };
    const calls = contents.flatMap((c) => c.parts.flatMap((p) => (p.functionCall ? [p.functionCall.args!.city] : [])));
    const responses = contents.flatMap((c) => c.parts.flatMap((p) => (p.functionResponse ? [JSON.stringify(p.functionResponse.response)] : [])));
    expect(calls).toEqual(['Paris', 'Oslo']);
    expect(responses.map((r) => (r.includes('Paris') ? 'Paris' : 'Oslo'))).toEqual(['Paris', 'Oslo']);
  });

  it('maps structured output formats between chat, responses and gemini', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    const body = chatBody({ response_format: { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } } });
    const responses = translateRequest('chat', 'responses', body, OPTS);
    expect(responses.text).toEqual({ format: { type: 'json_schema', name: 'answer', schema, strict: true } });
    expect(translateRequest('responses', 'chat', responses, OPTS).response_format).toEqual(body.response_format);
    expect(translateRequest('chat', 'gemini', body, OPTS).generationConfig).toEqual({ responseMimeType: 'application/json', responseJsonSchema: schema });
    expect(translateRequest('chat', 'gemini', chatBody({ response_format: { type: 'json_object' } }), OPTS).generationConfig).toEqual({
      responseMimeType: 'application/json',
    });
  });

  it("maps structured output to and from the messages protocol's output_config.format (a JSON schema only)", () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
    const messages = { ...REQUESTS.messages, output_config: { format: { type: 'json_schema', schema } } };
    expect(translateRequest('messages', 'chat', messages, OPTS).response_format).toEqual({ type: 'json_schema', json_schema: { name: 'response', schema } });
    expect(translateRequest('messages', 'responses', messages, OPTS).text).toEqual({ format: { type: 'json_schema', name: 'response', schema } });
    expect(translateRequest('messages', 'gemini', messages, OPTS).generationConfig).toMatchObject({ responseMimeType: 'application/json', responseJsonSchema: schema });
    const chat = chatBody({ response_format: { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } } });
    expect(translateRequest('chat', 'messages', chat, OPTS).output_config).toEqual({ format: { type: 'json_schema', schema } });
    // json_object has no counterpart there: not sent, as the README says.
    expect(translateRequest('chat', 'messages', chatBody({ response_format: { type: 'json_object' } }), OPTS)).not.toHaveProperty('output_config');
  });

  it('forwards the OpenAI fields chat and responses share, and reasoning effort; end-user ids and metadata are dropped (pass-through policy)', () => {
    const body = chatBody({ user: 'u-1', metadata: { team: 'a' }, service_tier: 'flex', reasoning_effort: 'low', logit_bias: { 1: 2 } });
    const out = translateRequest('chat', 'responses', body, OPTS);
    expect(out).toMatchObject({ service_tier: 'flex', reasoning: { effort: 'low' }, store: false });
    expect(out).not.toHaveProperty('user');
    expect(out).not.toHaveProperty('metadata');
    expect(out).not.toHaveProperty('logit_bias');
    const messages = translateRequest('chat', 'messages', body, OPTS);
    expect(Object.keys(messages).sort()).toEqual(['max_tokens', 'messages', 'model']);
  });

  it('turns store off for a responses upstream, whatever the client chose (pass-through policy)', () => {
    expect(translateRequest('chat', 'responses', chatBody({ store: true }), OPTS).store).toBe(false);
  });

  it.each([
    ['chat audio input', 'chat', { model: 'm', messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }] }, /input_audio/],
    ['chat custom tool', 'chat', { model: 'm', messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'custom', custom: { name: 'x' } }] }, /tools\[0\]/],
    ['messages PDF', 'messages', { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'x' } }] }] }, /messages\[0\]\.content\[0\].*document/],
    ['responses previous_response_id', 'responses', { model: 'm', input: 'hi', previous_response_id: 'resp_1' }, /previous_response_id/],
    ['responses file image', 'responses', { model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file-1' }] }] }, /file_id/],
    ['gemini PDF', 'gemini', { contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'application/pdf', data: 'x' } }] }] }, /application\/pdf/],
    ['messages thread', 'messages', { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'and tomorrow?' }], thread: { type: 'continue', previous_message_id: 'msg_1' } }, /thread/],
    ['messages MCP servers', 'messages', { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }], mcp_servers: [{ type: 'url', url: 'https://mcp.example.com/sse', name: 'ex' }] }, /mcp_servers/],
    ['messages container', 'messages', { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }], container: 'container_1' }, /container/],
    ['chat audio output', 'chat', { model: 'm', messages: [{ role: 'user', content: 'hi' }], modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } }, /audio|modalities/],
    ['responses background', 'responses', { model: 'm', input: 'hi', background: true }, /background/],
  ] as const)('refuses what another dialect cannot carry: %s', (_name, from, body, message) => {
    const to: Dialect = from === 'chat' ? 'messages' : 'chat';
    expect(() => translateRequest(from, to, body, OPTS)).toThrow(TranslateError);
    expect(() => translateRequest(from, to, body, OPTS)).toThrow(message);
    // A reference to provider-side state is refused for a same-dialect provider too (pass-through policy).
    const stateful = _name === 'responses previous_response_id' || _name === 'messages container';
    const sameDialect = (() => {
      try {
        translateRequest(from, from, body, OPTS);
        return 'sent';
      } catch (err) {
        return err instanceof TranslateError ? 'refused' : 'failed';
      }
    })();
    expect(sameDialect).toBe(stateful ? 'refused' : 'sent');
  });

  it('refuses a messages thread with the details the messages SDK reads to continue without it', () => {
    const body = { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }], thread: { type: 'continue', previous_message_id: 'msg_1' } };
    const err = (() => {
      try {
        translateRequest('messages', 'chat', body, OPTS);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(TranslateError);
    expect((err as TranslateError).details).toEqual({ error_code: 'thread_unsupported_request', unsupported: ['thread'] });
  });

  it('refuses a tool result for a call it cannot name (gemini needs the function name)', () => {
    const body = { model: 'm', messages: [{ role: 'tool', tool_call_id: 'call_x', content: 'r' }] };
    expect(() => translateRequest('chat', 'gemini', body, OPTS)).toThrow(/call_x/);
  });

  it('drops reasoning blocks from history instead of failing', () => {
    const body = {
      model: 'm',
      max_tokens: 10,
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: 's' }, { type: 'text', text: 'Hello' }] },
        { role: 'user', content: 'bye' },
      ],
    };
    expect(translateRequest('messages', 'chat', body, OPTS).messages).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'Hello' },
      { role: 'user', content: 'bye' },
    ]);
  });
});
