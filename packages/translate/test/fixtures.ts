/**
 * Wire fixtures: one conversation and one answer, written out in each dialect.
 *
 * `REQUESTS[d]` and `RESPONSES[d]` are exactly what the emitter of `d` must produce for them (so
 * translating any other dialect's fixture must give them back), `UPSTREAM_RESPONSES[d]` and
 * `UPSTREAM_STREAMS[d]` are richer bodies as providers really send them (extra fields, reasoning
 * parts) that must read the same.
 */
import type { Dialect, ResponseContext, SseEvent, Usage } from '../src/index.ts';

export const DIALECTS: Dialect[] = ['chat', 'messages', 'responses', 'gemini'];

export const CTX: ResponseContext = { model: 'public-model', id: 'gen_1', created: 1_700_000_000 };

export const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const DATA_URL = `data:image/png;base64,${PNG}`;
const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
const ARGS = '{"city":"Paris"}';

// ---------------------------------------------------------------------------------------------
// Requests: system prompt, user text + image, assistant text + tool call, tool result.

export const REQUESTS: Record<Dialect, Record<string, unknown>> = {
  chat: {
    model: 'upstream-model',
    messages: [
      { role: 'system', content: 'You are terse.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Weather in Paris? See photo.' },
          { type: 'image_url', image_url: { url: DATA_URL } },
        ],
      },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'get_weather', arguments: ARGS } }],
      },
      { role: 'tool', tool_call_id: 'call_0', content: '18C and sunny' },
    ],
    tools: [{ type: 'function', function: { name: 'get_weather', description: 'Current weather for a city', parameters: SCHEMA } }],
    tool_choice: 'auto',
    max_completion_tokens: 256,
    temperature: 0.5,
    top_p: 0.9,
  },
  messages: {
    model: 'upstream-model',
    max_tokens: 256,
    system: 'You are terse.',
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Weather in Paris? See photo.' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'call_0', name: 'get_weather', input: { city: 'Paris' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_0', content: '18C and sunny' }] },
    ],
    tools: [{ name: 'get_weather', description: 'Current weather for a city', input_schema: SCHEMA }],
    tool_choice: { type: 'auto' },
    temperature: 0.5,
    top_p: 0.9,
  },
  responses: {
    model: 'upstream-model',
    instructions: 'You are terse.',
    input: [
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'Weather in Paris? See photo.' },
          { type: 'input_image', image_url: DATA_URL, detail: 'auto' },
        ],
      },
      { role: 'assistant', content: 'Checking.' },
      { type: 'function_call', call_id: 'call_0', name: 'get_weather', arguments: ARGS },
      { type: 'function_call_output', call_id: 'call_0', output: '18C and sunny' },
    ],
    tools: [{ type: 'function', name: 'get_weather', description: 'Current weather for a city', parameters: SCHEMA, strict: false }],
    tool_choice: 'auto',
    max_output_tokens: 256,
    temperature: 0.5,
    top_p: 0.9,
    store: false,
  },
  gemini: {
    systemInstruction: { parts: [{ text: 'You are terse.' }] },
    contents: [
      { role: 'user', parts: [{ text: 'Weather in Paris? See photo.' }, { inlineData: { mimeType: 'image/png', data: PNG } }] },
      { role: 'model', parts: [{ text: 'Checking.' }, { functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: '18C and sunny' } } }] },
    ],
    tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'Current weather for a city', parametersJsonSchema: SCHEMA }] }],
    toolConfig: { functionCallingConfig: { mode: 'AUTO' } },
    generationConfig: { maxOutputTokens: 256, temperature: 0.5, topP: 0.9 },
  },
};

/** A responses request that sets every setting a response echoes (the others leave them to defaults). */
export const SETTINGS_REQUEST: Record<string, unknown> = {
  ...REQUESTS.responses,
  tool_choice: { type: 'function', name: 'get_weather' },
  parallel_tool_calls: false,
  metadata: { user: 'u_1' },
};

/** What a responses body shows of `SETTINGS_REQUEST`. */
export const ECHOED_SETTINGS = {
  instructions: 'You are terse.',
  max_output_tokens: 256,
  metadata: { user: 'u_1' },
  parallel_tool_calls: false,
  temperature: 0.5,
  tool_choice: { type: 'function', name: 'get_weather' },
  tools: REQUESTS.responses.tools,
  top_p: 0.9,
};

// ---------------------------------------------------------------------------------------------
// Non-streaming responses: text + a tool call, 120 input tokens (20 from cache), 30 output.

/** The call id every dialect shows: gemini has none, so it is the id synthesized from `CTX.id`. */
export const CALL_ID = 'call_gen_1_0';

export const USAGE: Usage = { inputTokens: 120, outputTokens: 30, cacheCreationTokens: 0, cacheReadTokens: 20, totalBillable: 150 };

/** USAGE as read from `UPSTREAM_RESPONSES` and `UPSTREAM_STREAMS`, some of which report thinking tokens. */
export const UPSTREAM_USAGE: Record<Dialect, Usage> = {
  chat: USAGE,
  messages: USAGE,
  responses: { ...USAGE, reasoningTokens: 12 },
  gemini: { ...USAGE, reasoningTokens: 8 },
};

/** What a responses body shows of a request that sets none of the settings it echoes: the API's defaults. */
export const DEFAULT_SETTINGS = {
  instructions: null,
  max_output_tokens: null,
  metadata: {},
  parallel_tool_calls: true,
  temperature: 1,
  tool_choice: 'auto',
  tools: [],
  top_p: 1,
};

export const RESPONSES: Record<Dialect, Record<string, unknown>> = {
  chat: {
    id: 'gen_1',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'public-model',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: 'Let me check.',
          tool_calls: [{ id: CALL_ID, type: 'function', function: { name: 'get_weather', arguments: ARGS } }],
        },
        logprobs: null,
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150, prompt_tokens_details: { cached_tokens: 20 } },
  },
  messages: {
    id: 'gen_1',
    type: 'message',
    role: 'assistant',
    model: 'public-model',
    content: [
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: CALL_ID, name: 'get_weather', input: { city: 'Paris' } },
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 20, output_tokens: 30 },
  },
  responses: {
    id: 'gen_1',
    object: 'response',
    created_at: 1_700_000_000,
    status: 'completed',
    error: null,
    incomplete_details: null,
    model: 'public-model',
    output: [
      {
        id: 'msg_gen_1_0',
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Let me check.', annotations: [] }],
      },
      { id: 'fc_gen_1_1', type: 'function_call', status: 'completed', arguments: ARGS, call_id: CALL_ID, name: 'get_weather' },
    ],
    usage: {
      input_tokens: 120,
      input_tokens_details: { cached_tokens: 20 },
      output_tokens: 30,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 150,
    },
    ...DEFAULT_SETTINGS,
  },
  gemini: {
    candidates: [
      {
        content: { role: 'model', parts: [{ text: 'Let me check.' }, { functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
        finishReason: 'STOP',
        index: 0,
      },
    ],
    usageMetadata: { promptTokenCount: 120, candidatesTokenCount: 30, totalTokenCount: 150, cachedContentTokenCount: 20 },
    modelVersion: 'public-model',
    responseId: 'gen_1',
  },
};

/** The same answer as providers send it: extra fields, reasoning parts, upstream ids and models. */
export const UPSTREAM_RESPONSES: Record<Dialect, Record<string, unknown>> = {
  chat: {
    id: 'chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT',
    object: 'chat.completion',
    created: 1_741_569_952,
    model: 'gpt-4.1-2025-04-14',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: 'Let me check.',
          refusal: null,
          annotations: [],
          tool_calls: [{ id: CALL_ID, type: 'function', function: { name: 'get_weather', arguments: ARGS } }],
        },
        logprobs: null,
        finish_reason: 'tool_calls',
      },
    ],
    usage: {
      prompt_tokens: 120,
      completion_tokens: 30,
      total_tokens: 150,
      prompt_tokens_details: { cached_tokens: 20, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
    },
    service_tier: 'default',
    system_fingerprint: 'fp_3f58d112f7',
  },
  messages: {
    id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5-20250929',
    content: [
      { type: 'thinking', thinking: 'The user wants weather.', signature: 'EqQBCgIYAhIM' },
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: CALL_ID, name: 'get_weather', input: { city: 'Paris' } },
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 20, output_tokens: 30, service_tier: 'standard' },
  },
  responses: {
    id: 'resp_67ccd2bed1ec8190b14f964abc054267',
    object: 'response',
    created_at: 1_741_476_542,
    status: 'completed',
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model: 'gpt-5-2025-08-07',
    output: [
      { id: 'rs_67ccd2bf', type: 'reasoning', summary: [] },
      {
        id: 'msg_67ccd2bf17f0',
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Let me check.', annotations: [], logprobs: [] }],
      },
      { id: 'fc_67ccd3', type: 'function_call', status: 'completed', arguments: ARGS, call_id: CALL_ID, name: 'get_weather' },
    ],
    parallel_tool_calls: true,
    tool_choice: 'auto',
    usage: {
      input_tokens: 120,
      input_tokens_details: { cached_tokens: 20 },
      output_tokens: 30,
      output_tokens_details: { reasoning_tokens: 12 },
      total_tokens: 150,
    },
  },
  gemini: {
    candidates: [
      {
        content: {
          role: 'model',
          parts: [
            { text: 'Weighing the request.', thought: true },
            { text: 'Let me check.' },
            { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'CiQB0e2Kb' },
          ],
        },
        finishReason: 'STOP',
        index: 0,
      },
    ],
    usageMetadata: {
      promptTokenCount: 120,
      candidatesTokenCount: 22,
      thoughtsTokenCount: 8,
      totalTokenCount: 150,
      cachedContentTokenCount: 20,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: 120 }],
    },
    modelVersion: 'gemini-2.5-flash',
    responseId: 'mIC_aN6hFrTE1MkP',
  },
};

// ---------------------------------------------------------------------------------------------
// Streams of the same answer ("Let me" + " check.", then the call), as providers send them.

const chatChunk = (delta: Record<string, unknown>, finish: string | null = null): SseEvent => ({
  data: {
    id: 'chatcmpl-up',
    object: 'chat.completion.chunk',
    created: 1_741_569_952,
    model: 'gpt-4.1-2025-04-14',
    system_fingerprint: 'fp_3f58d112f7',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  },
});

const sse = (type: string, fields: Record<string, unknown>): SseEvent => ({ event: type, data: { type, ...fields } });
const seq = (events: Array<[string, Record<string, unknown>]>): SseEvent[] =>
  events.map(([type, fields], i) => sse(type, { sequence_number: i, ...fields }));

const upstreamResponse = { id: 'resp_up', object: 'response', created_at: 1_741_476_542, model: 'gpt-5-2025-08-07', output: [], usage: null };

export const UPSTREAM_STREAMS: Record<Dialect, SseEvent[]> = {
  chat: [
    chatChunk({ role: 'assistant', content: '', refusal: null }),
    chatChunk({ content: 'Let me' }),
    chatChunk({ content: ' check.' }),
    chatChunk({ tool_calls: [{ index: 0, id: CALL_ID, type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
    chatChunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
    chatChunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
    chatChunk({}, 'tool_calls'),
    {
      data: {
        id: 'chatcmpl-up',
        object: 'chat.completion.chunk',
        created: 1_741_569_952,
        model: 'gpt-4.1-2025-04-14',
        system_fingerprint: 'fp_3f58d112f7',
        choices: [],
        usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150, prompt_tokens_details: { cached_tokens: 20 } },
      },
    },
    { data: '[DONE]' },
  ],
  messages: [
    sse('message_start', {
      message: {
        id: 'msg_up',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5-20250929',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 20, output_tokens: 1 },
      },
    }),
    sse('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } }),
    sse('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'Weather lookup.' } }),
    sse('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'EqQBCgIYAhIM' } }),
    sse('content_block_stop', { index: 0 }),
    sse('content_block_start', { index: 1, content_block: { type: 'text', text: '' } }),
    { event: 'ping', data: { type: 'ping' } },
    sse('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'Let me' } }),
    sse('content_block_delta', { index: 1, delta: { type: 'text_delta', text: ' check.' } }),
    sse('content_block_stop', { index: 1 }),
    sse('content_block_start', { index: 2, content_block: { type: 'tool_use', id: CALL_ID, name: 'get_weather', input: {} } }),
    sse('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '' } }),
    sse('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '{"city":' } }),
    sse('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '"Paris"}' } }),
    sse('content_block_stop', { index: 2 }),
    sse('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 30 } }),
    sse('message_stop', {}),
  ],
  responses: seq([
    ['response.created', { response: { ...upstreamResponse, status: 'in_progress' } }],
    ['response.in_progress', { response: { ...upstreamResponse, status: 'in_progress' } }],
    ['response.output_item.added', { output_index: 0, item: { id: 'rs_1', type: 'reasoning', summary: [] } }],
    ['response.output_item.done', { output_index: 0, item: { id: 'rs_1', type: 'reasoning', summary: [] } }],
    ['response.output_item.added', { output_index: 1, item: { id: 'msg_up', type: 'message', status: 'in_progress', role: 'assistant', content: [] } }],
    ['response.content_part.added', { item_id: 'msg_up', output_index: 1, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }],
    ['response.output_text.delta', { item_id: 'msg_up', output_index: 1, content_index: 0, delta: 'Let me', logprobs: [] }],
    ['response.output_text.delta', { item_id: 'msg_up', output_index: 1, content_index: 0, delta: ' check.', logprobs: [] }],
    ['response.output_text.done', { item_id: 'msg_up', output_index: 1, content_index: 0, text: 'Let me check.', logprobs: [] }],
    [
      'response.content_part.done',
      { item_id: 'msg_up', output_index: 1, content_index: 0, part: { type: 'output_text', text: 'Let me check.', annotations: [] } },
    ],
    [
      'response.output_item.done',
      {
        output_index: 1,
        item: {
          id: 'msg_up',
          type: 'message',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'Let me check.', annotations: [] }],
        },
      },
    ],
    [
      'response.output_item.added',
      { output_index: 2, item: { id: 'fc_up', type: 'function_call', status: 'in_progress', arguments: '', call_id: CALL_ID, name: 'get_weather' } },
    ],
    ['response.function_call_arguments.delta', { item_id: 'fc_up', output_index: 2, delta: '{"city":' }],
    ['response.function_call_arguments.delta', { item_id: 'fc_up', output_index: 2, delta: '"Paris"}' }],
    ['response.function_call_arguments.done', { item_id: 'fc_up', output_index: 2, arguments: ARGS }],
    [
      'response.output_item.done',
      { output_index: 2, item: { id: 'fc_up', type: 'function_call', status: 'completed', arguments: ARGS, call_id: CALL_ID, name: 'get_weather' } },
    ],
    [
      'response.completed',
      {
        response: {
          ...upstreamResponse,
          status: 'completed',
          usage: {
            input_tokens: 120,
            input_tokens_details: { cached_tokens: 20 },
            output_tokens: 30,
            output_tokens_details: { reasoning_tokens: 12 },
            total_tokens: 150,
          },
        },
      },
    ],
  ]),
  gemini: [
    {
      data: {
        candidates: [{ content: { role: 'model', parts: [{ text: 'Let me' }] }, index: 0 }],
        usageMetadata: { promptTokenCount: 120, totalTokenCount: 120 },
        modelVersion: 'gemini-2.5-flash',
        responseId: 'up',
      },
    },
    {
      data: {
        candidates: [{ content: { role: 'model', parts: [{ text: ' check.' }] }, index: 0 }],
        usageMetadata: { promptTokenCount: 120, candidatesTokenCount: 4, totalTokenCount: 124 },
        modelVersion: 'gemini-2.5-flash',
        responseId: 'up',
      },
    },
    {
      data: {
        candidates: [
          {
            content: { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
            finishReason: 'STOP',
            index: 0,
          },
        ],
        usageMetadata: { promptTokenCount: 120, candidatesTokenCount: 22, thoughtsTokenCount: 8, totalTokenCount: 150, cachedContentTokenCount: 20 },
        modelVersion: 'gemini-2.5-flash',
        responseId: 'up',
      },
    },
  ],
};

/**
 * The upstream answers without the reasoning they start with (Anthropic thinking, Gemini thoughts
 * and thought signatures): the checks of text, calls, stop reasons and usage compare these, and
 * reasoning.test.ts checks where the reasoning goes.
 */
export const PLAIN_UPSTREAM_RESPONSES: Record<Dialect, Record<string, unknown>> = {
  ...UPSTREAM_RESPONSES,
  messages: {
    ...UPSTREAM_RESPONSES.messages,
    content: (UPSTREAM_RESPONSES.messages.content as Array<{ type: string }>).filter((b) => b.type !== 'thinking'),
  },
  gemini: {
    ...UPSTREAM_RESPONSES.gemini,
    candidates: [
      {
        content: { role: 'model', parts: [{ text: 'Let me check.' }, { functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
        finishReason: 'STOP',
        index: 0,
      },
    ],
  },
};

/** `UPSTREAM_STREAMS` without the thinking block the messages stream starts with (the others have none). */
export const PLAIN_UPSTREAM_STREAMS: Record<Dialect, SseEvent[]> = {
  ...UPSTREAM_STREAMS,
  messages: UPSTREAM_STREAMS.messages.filter((e) => {
    const data = e.data as { type: string; index?: number };
    return !(data.type.startsWith('content_block_') && data.index === 0);
  }),
};

// ---------------------------------------------------------------------------------------------
// Streams as the emitters must write them for CTX. `args` are the argument deltas of the call:
// gemini sends a call whole, the others in pieces; `reasoning` the upstream's thinking tokens.

const ours = { id: 'gen_1', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'public-model' };
const ourChunk = (delta: Record<string, unknown>, finish: string | null = null): SseEvent => ({
  data: { ...ours, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] },
});

const ourResponse = (fields: Record<string, unknown>) => ({
  id: 'gen_1',
  object: 'response',
  created_at: 1_700_000_000,
  status: 'in_progress',
  error: null,
  incomplete_details: null,
  model: 'public-model',
  output: [],
  usage: null,
  ...DEFAULT_SETTINGS,
  ...fields,
});

const textItem = (status: string, text: string) => ({
  id: 'msg_gen_1_0',
  type: 'message',
  status,
  role: 'assistant',
  content: status === 'in_progress' ? [] : [{ type: 'output_text', text, annotations: [] }],
});
const callItem = (status: string, args: string) => ({
  id: 'fc_gen_1_1',
  type: 'function_call',
  status,
  arguments: args,
  call_id: CALL_ID,
  name: 'get_weather',
});
const at0 = { item_id: 'msg_gen_1_0', output_index: 0 };
const at1 = { item_id: 'fc_gen_1_1', output_index: 1 };

const geminiChunk = (parts: unknown[], extra: Record<string, unknown> = {}) => ({
  candidates: [{ content: { role: 'model', parts }, ...extra, index: 0 }],
  modelVersion: 'public-model',
  responseId: 'gen_1',
});

export const EMITTED_STREAMS: Record<Dialect, (args: string[], reasoning?: number) => Array<SseEvent & { carriesUsage?: true }>> = {
  chat: (args) => [
    ourChunk({ role: 'assistant', content: '' }),
    ourChunk({ content: 'Let me' }),
    ourChunk({ content: ' check.' }),
    ourChunk({ tool_calls: [{ index: 0, id: CALL_ID, type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
    ...args.map((a) => ourChunk({ tool_calls: [{ index: 0, function: { arguments: a } }] })),
    ourChunk({}, 'tool_calls'),
    {
      data: { ...ours, choices: [], usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150, prompt_tokens_details: { cached_tokens: 20 } } },
      carriesUsage: true,
    },
    { data: '[DONE]' },
  ],
  messages: (args) => [
    sse('message_start', {
      message: {
        id: 'gen_1',
        type: 'message',
        role: 'assistant',
        model: 'public-model',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 },
      },
    }),
    sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Let me' } }),
    sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: ' check.' } }),
    sse('content_block_stop', { index: 0 }),
    sse('content_block_start', { index: 1, content_block: { type: 'tool_use', id: CALL_ID, name: 'get_weather', input: {} } }),
    ...args.map((a) => sse('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: a } })),
    sse('content_block_stop', { index: 1 }),
    {
      ...sse('message_delta', {
        delta: { stop_reason: 'tool_use', stop_sequence: null },
        usage: { input_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 20, output_tokens: 30 },
      }),
      carriesUsage: true,
    },
    sse('message_stop', {}),
  ],
  responses: (args, reasoning = 0) => {
    const events = seq([
      ['response.created', { response: ourResponse({}) }],
      ['response.in_progress', { response: ourResponse({}) }],
      ['response.output_item.added', { output_index: 0, item: textItem('in_progress', '') }],
      ['response.content_part.added', { ...at0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }],
      ['response.output_text.delta', { ...at0, content_index: 0, delta: 'Let me', logprobs: [] }],
      ['response.output_text.delta', { ...at0, content_index: 0, delta: ' check.', logprobs: [] }],
      ['response.output_text.done', { ...at0, content_index: 0, text: 'Let me check.', logprobs: [] }],
      ['response.content_part.done', { ...at0, content_index: 0, part: { type: 'output_text', text: 'Let me check.', annotations: [] } }],
      ['response.output_item.done', { output_index: 0, item: textItem('completed', 'Let me check.') }],
      ['response.output_item.added', { output_index: 1, item: callItem('in_progress', '') }],
      ...args.map((delta): [string, Record<string, unknown>] => ['response.function_call_arguments.delta', { ...at1, delta }]),
      ['response.function_call_arguments.done', { ...at1, arguments: ARGS }],
      ['response.output_item.done', { output_index: 1, item: callItem('completed', ARGS) }],
      [
        'response.completed',
        {
          response: ourResponse({
            status: 'completed',
            output: [textItem('completed', 'Let me check.'), callItem('completed', ARGS)],
            usage: {
              input_tokens: 120,
              input_tokens_details: { cached_tokens: 20 },
              output_tokens: 30,
              output_tokens_details: { reasoning_tokens: reasoning },
              total_tokens: 150,
            },
          }),
        },
      ],
    ]);
    return [...events.slice(0, -1), { ...events.at(-1)!, carriesUsage: true as const }];
  },
  gemini: () => {
    const chunk = geminiChunk;
    return [
      { data: chunk([{ text: 'Let me' }]) },
      { data: chunk([{ text: ' check.' }]) },
      { data: chunk([{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }]) },
      {
        data: {
          ...chunk([{ text: '' }], { finishReason: 'STOP' }),
          usageMetadata: { promptTokenCount: 120, candidatesTokenCount: 30, totalTokenCount: 150, cachedContentTokenCount: 20 },
        },
        carriesUsage: true,
      },
    ];
  },
};

/** Argument deltas of the call in `UPSTREAM_STREAMS[from]`, as they reach the target. */
export function argDeltas(from: Dialect): string[] {
  return from === 'gemini' ? [ARGS] : ['{"city":', '"Paris"}'];
}
