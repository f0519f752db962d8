import { describe, expect, it } from 'vitest';
import { extractUsage, translateResponse, type Dialect } from '../src/index.ts';
import { CTX, DEFAULT_SETTINGS, DIALECTS, ECHOED_SETTINGS, PLAIN_UPSTREAM_RESPONSES, RESPONSES, SETTINGS_REQUEST, UPSTREAM_RESPONSES, UPSTREAM_USAGE, USAGE } from './fixtures.ts';

const pairs = DIALECTS.flatMap((from) => DIALECTS.filter((to) => to !== from).map((to) => [from, to] as const));

/** The answer of `from` as a `to` body: `RESPONSES[to]`, where responses also shows the upstream's thinking tokens. */
function targetBody(from: Dialect, to: Dialect): Record<string, unknown> {
  if (to !== 'responses') return RESPONSES[to];
  const usage = { ...(RESPONSES.responses.usage as object), output_tokens_details: { reasoning_tokens: UPSTREAM_USAGE[from].reasoningTokens ?? 0 } };
  return { ...RESPONSES.responses, usage };
}

describe('translateResponse across dialects', () => {
  it.each(pairs)('%s → %s gives the target wire body', (from, to) => {
    expect(translateResponse(from, to, PLAIN_UPSTREAM_RESPONSES[from], CTX)).toEqual(targetBody(from, to));
  });

  it.each(pairs)('%s → %s → back keeps text, tool call, stop reason and usage', (from, via) => {
    const back = translateResponse(via, from, translateResponse(from, via, RESPONSES[from], CTX), CTX);
    expect(back).toEqual(RESPONSES[from]);
    expect(extractUsage(from, back)).toEqual(USAGE);
  });
});

describe('translateResponse within one dialect', () => {
  it.each(DIALECTS)('%s passes the body through, only the model changes', (dialect) => {
    const out = translateResponse(dialect, dialect, UPSTREAM_RESPONSES[dialect], CTX);
    const modelField = dialect === 'gemini' ? 'modelVersion' : 'model';
    expect(out[modelField]).toBe('public-model');
    expect({ ...out, [modelField]: 'x' }).toEqual({ ...UPSTREAM_RESPONSES[dialect], [modelField]: 'x' });
  });
});

/** One stop reason in every dialect's words, as read from a minimal text-only response. */
const STOPS: Array<[string, Record<Dialect, Record<string, unknown>>]> = [
  [
    'normal end',
    {
      chat: { choices: [{ message: { content: 'x' }, finish_reason: 'stop' }] },
      messages: { content: [{ type: 'text', text: 'x' }], stop_reason: 'end_turn' },
      responses: { status: 'completed', incomplete_details: null, output: [] },
      gemini: { candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason: 'STOP' }] },
    },
  ],
  [
    'output cap',
    {
      chat: { choices: [{ message: { content: 'x' }, finish_reason: 'length' }] },
      messages: { content: [{ type: 'text', text: 'x' }], stop_reason: 'max_tokens' },
      responses: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [] },
      gemini: { candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason: 'MAX_TOKENS' }] },
    },
  ],
  [
    'content filter',
    {
      chat: { choices: [{ message: { content: 'x' }, finish_reason: 'content_filter' }] },
      messages: { content: [{ type: 'text', text: 'x' }], stop_reason: 'refusal' },
      responses: { status: 'incomplete', incomplete_details: { reason: 'content_filter' }, output: [] },
      gemini: { candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason: 'SAFETY' }] },
    },
  ],
];

function stopOf(dialect: Dialect, body: Record<string, unknown>): unknown {
  switch (dialect) {
    case 'chat':
      return (body.choices as Array<Record<string, unknown>>)[0]!.finish_reason;
    case 'messages':
      return body.stop_reason;
    case 'responses':
      return [body.status, body.incomplete_details];
    case 'gemini':
      return (body.candidates as Array<Record<string, unknown>>)[0]!.finishReason;
  }
}

describe('stop reasons', () => {
  it.each(STOPS.flatMap(([name, wire]) => pairs.map(([from, to]) => [name, from, to, wire] as const)))('%s: %s → %s', (_n, from, to, wire) => {
    expect(stopOf(to, translateResponse(from, to, wire[from], CTX))).toEqual(stopOf(to, wire[to]));
  });

  it('reads more provider reasons: stop_sequence, pause_turn, RECITATION, a blocked prompt', () => {
    expect(translateResponse('messages', 'chat', { content: [], stop_reason: 'stop_sequence' }, CTX)).toMatchObject({ choices: [{ finish_reason: 'stop' }] });
    expect(translateResponse('messages', 'responses', { content: [], stop_reason: 'pause_turn' }, CTX)).toMatchObject({ status: 'completed' });
    expect(translateResponse('gemini', 'messages', { candidates: [{ finishReason: 'RECITATION' }] }, CTX)).toMatchObject({ stop_reason: 'refusal' });
    expect(translateResponse('gemini', 'chat', { promptFeedback: { blockReason: 'SAFETY' } }, CTX)).toMatchObject({
      choices: [{ message: { role: 'assistant', content: '' }, finish_reason: 'content_filter' }],
    });
  });

  it('says tool_use when a dialect without that reason returns a call', () => {
    const call = { id: 'fc', type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' };
    expect(translateResponse('responses', 'messages', { status: 'completed', output: [call] }, CTX)).toMatchObject({ stop_reason: 'tool_use' });
    const compat = { choices: [{ message: { content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] }, finish_reason: 'stop' }] };
    expect(translateResponse('chat', 'messages', compat, CTX)).toMatchObject({ stop_reason: 'tool_use' });
  });
});

describe('response details', () => {
  it('reads a chat refusal as text', () => {
    const body = { choices: [{ message: { role: 'assistant', content: null, refusal: 'I cannot help.' }, finish_reason: 'stop' }] };
    expect(translateResponse('chat', 'messages', body, CTX)).toMatchObject({ content: [{ type: 'text', text: 'I cannot help.' }] });
  });

  it('joins gemini text parts and keeps invalid tool arguments from breaking object dialects', () => {
    const body = {
      candidates: [{ content: { parts: [{ text: 'a' }, { text: 'b' }] }, finishReason: 'STOP' }],
    };
    expect(translateResponse('gemini', 'messages', body, CTX)).toMatchObject({ content: [{ type: 'text', text: 'ab' }] });
    const chat = { choices: [{ message: { tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{"a":' } }] }, finish_reason: 'tool_calls' }] };
    expect(translateResponse('chat', 'messages', chat, CTX)).toMatchObject({ content: [{ type: 'tool_use', id: 'c', name: 'f', input: {} }] });
  });

  it('shows no usage where the upstream reported none, except the zeros messages requires', () => {
    const body = { choices: [{ message: { content: 'x' }, finish_reason: 'stop' }] };
    expect(translateResponse('chat', 'responses', body, CTX).usage).toBeNull();
    expect(translateResponse('chat', 'gemini', body, CTX)).not.toHaveProperty('usageMetadata');
    expect(translateResponse('messages', 'chat', { content: [], stop_reason: 'end_turn' }, CTX)).not.toHaveProperty('usage');
    expect(translateResponse('chat', 'messages', body, CTX).usage).toEqual({
      input_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: 0,
    });
  });

  it('gives each gemini call of a response its own id', () => {
    const body = {
      candidates: [{ content: { parts: [{ functionCall: { name: 'f', args: { a: 1 } } }, { functionCall: { name: 'f', args: { a: 2 } } }] }, finishReason: 'STOP' }],
    };
    expect(translateResponse('gemini', 'chat', body, { ...CTX, id: 'chatcmpl-9x' })).toMatchObject({
      choices: [
        {
          message: {
            content: null,
            tool_calls: [
              { id: 'call_chatcmpl-9x_0', function: { name: 'f', arguments: '{"a":1}' } },
              { id: 'call_chatcmpl-9x_1', function: { name: 'f', arguments: '{"a":2}' } },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ],
    });
  });
});

/** The dialects of other providers, whose answers a responses client gets translated. */
const OTHERS = ['chat', 'messages', 'gemini'] as const;

describe('responses bodies translated from other dialects', () => {
  it.each(OTHERS)('%s → responses echoes the request settings', (from) => {
    const out = translateResponse(from, 'responses', PLAIN_UPSTREAM_RESPONSES[from], { ...CTX, request: SETTINGS_REQUEST });
    expect(out).toEqual({ ...targetBody(from, 'responses'), ...ECHOED_SETTINGS });
  });

  it.each(OTHERS)('%s → responses shows the API defaults for settings the request leaves out', (from) => {
    const out = translateResponse(from, 'responses', PLAIN_UPSTREAM_RESPONSES[from], { ...CTX, request: { model: 'public-model', input: 'Hi' } });
    expect(out).toMatchObject(DEFAULT_SETTINGS);
  });

  it.each(OTHERS)('%s → responses details usage: cached and reasoning tokens', (from) => {
    const usage = translateResponse(from, 'responses', UPSTREAM_RESPONSES[from], CTX).usage;
    expect(usage).toMatchObject({
      input_tokens_details: { cached_tokens: 20 },
      output_tokens_details: { reasoning_tokens: UPSTREAM_USAGE[from].reasoningTokens ?? 0 },
    });
  });

  it.each(OTHERS)('%s → responses: an answer cut off by the output cap ends in an incomplete message', (from) => {
    const capped = STOPS.find(([name]) => name === 'output cap')![1][from];
    expect(translateResponse(from, 'responses', capped, CTX)).toMatchObject({
      status: 'incomplete',
      output: [{ type: 'message', status: 'incomplete', content: [{ type: 'output_text', text: 'x' }] }],
    });
  });

  it('marks only the last item incomplete', () => {
    const body = { content: [{ type: 'text', text: 'a' }, { type: 'tool_use', id: 'c', name: 'f', input: {} }, { type: 'text', text: 'b' }], stop_reason: 'max_tokens' };
    const output = translateResponse('messages', 'responses', body, CTX).output as Array<{ status: string }>;
    expect(output.map((item) => item.status)).toEqual(['completed', 'completed', 'incomplete']);
  });
});
