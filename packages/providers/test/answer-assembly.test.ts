import { describe, expect, it } from 'vitest';
import { textAnswerFromStream } from '../src/answer-assembly.ts';
import type { ProviderAdapter, SseEvent, TextDialect } from '../src/types.ts';

/** A provider whose stream is these events (the shapes providers document, beyond what the simulator sends). */
function streaming(events: SseEvent[]): ProviderAdapter {
  return {
    name: 'p',
    kind: 'openai',
    textDialects: ['chat'],
    listModels: () => Promise.resolve([]),
    text: (_dialect, _body, opts) => {
      expect(opts.stream).toBe(true);
      return Promise.resolve({
        kind: 'stream',
        events: (async function* () {
          yield* events;
        })(),
      });
    },
  };
}

/** Chat logprobs of one token. */
const lp = (token: string) => ({ content: [{ token, logprob: -0.5, bytes: [...Buffer.from(token)], top_logprobs: [] }], refusal: null });
/** Anthropic content block events. */
const blockDelta = (index: number, d: object) => ({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: d } });
const start = (index: number, block: object) => ({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: block } });
const stop = (index: number) => ({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
/** A Gemini chunk of one candidate. */
const geminiChunk = (parts: object[], extra: object = {}) => ({ data: { candidates: [{ content: { parts, role: 'model' }, index: 0, ...extra }], modelVersion: 'gemini-2.5', responseId: 'r1' } });

const rebuilt = (dialect: TextDialect, events: SseEvent[]) => textAnswerFromStream(streaming(events), dialect, { model: 'm' }, {});

describe('a complete answer rebuilt from provider streams', () => {
  it('chat: choices by index, logprobs, parallel tool calls, usage; stream-only fields left out', async () => {
    const head = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 7, model: 'gpt-4o', service_tier: 'default', system_fingerprint: 'fp_1', obfuscation: 'xyz' };
    const chunk = (index: number, delta: object, extra: object = {}) => ({ data: { ...head, choices: [{ index, delta, logprobs: null, finish_reason: null, ...extra }] } });
    const answer = await rebuilt('chat', [
      chunk(0, { role: 'assistant', content: '', refusal: null }, { logprobs: { content: [], refusal: null } }),
      chunk(1, { role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'f', arguments: '' } }], refusal: null }),
      chunk(0, { content: 'Hel' }, { logprobs: lp('Hel') }),
      chunk(1, { tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] }),
      chunk(1, { tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'g', arguments: '{}' } }] }),
      chunk(0, { content: 'lo' }, { logprobs: lp('lo') }),
      chunk(1, { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }),
      chunk(0, {}, { finish_reason: 'stop' }),
      chunk(1, {}, { finish_reason: 'tool_calls' }),
      { data: { ...head, choices: [], usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 } } },
      { data: '[DONE]' },
    ]);
    expect(answer).toEqual({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 7,
      model: 'gpt-4o',
      service_tier: 'default',
      system_fingerprint: 'fp_1',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Hello', refusal: null, annotations: [] }, logprobs: { content: [...lp('Hel').content, ...lp('lo').content], refusal: null }, finish_reason: 'stop' },
        {
          index: 1,
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
              { id: 'call_b', type: 'function', function: { name: 'g', arguments: '{}' } },
            ],
            refusal: null,
            annotations: [],
          },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 },
    });
  });

  it('messages: server tool blocks, citations, thinking with its signature, the final usage over the first', async () => {
    const result = { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [{ type: 'web_search_result', url: 'https://a.example', title: 'A', encrypted_content: 'e', page_age: null }] };
    const citation = { type: 'web_search_result_location', url: 'https://a.example', title: 'A', encrypted_index: 'i', cited_text: 'c' };
    const answer = await rebuilt('messages', [
      {
        event: 'message_start',
        data: { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 5, output_tokens: 1, service_tier: 'standard' } } },
      },
      { event: 'ping', data: { type: 'ping' } },
      start(0, { type: 'thinking', thinking: '', signature: '' }),
      blockDelta(0, { type: 'thinking_delta', thinking: 'Search ' }),
      blockDelta(0, { type: 'thinking_delta', thinking: 'first.' }),
      blockDelta(0, { type: 'signature_delta', signature: 'sig==' }),
      stop(0),
      start(1, { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} }),
      blockDelta(1, { type: 'input_json_delta', partial_json: '{"query": ' }),
      blockDelta(1, { type: 'input_json_delta', partial_json: '"lighthouses"}' }),
      stop(1),
      start(2, result),
      stop(2),
      start(3, { type: 'text', text: '' }),
      blockDelta(3, { type: 'citations_delta', citation }),
      blockDelta(3, { type: 'text_delta', text: 'Tall ' }),
      blockDelta(3, { type: 'text_delta', text: 'towers.' }),
      stop(3),
      start(4, { type: 'tool_use', id: 'toolu_1', name: 'noop', input: {} }),
      stop(4),
      { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: null, output_tokens: 61, server_tool_use: { web_search_requests: 1 } } } },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]);
    expect(answer).toEqual({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude',
      content: [
        { type: 'thinking', thinking: 'Search first.', signature: 'sig==' },
        { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'lighthouses' } },
        result,
        { type: 'text', text: 'Tall towers.', citations: [citation] },
        { type: 'tool_use', id: 'toolu_1', name: 'noop', input: {} },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 5, output_tokens: 61, service_tier: 'standard', server_tool_use: { web_search_requests: 1 } },
    });
  });

  it('gemini: pieces of a thought join, pieces of the answer join, the signature stays on its part, the last usage counts', async () => {
    const answer = await rebuilt('gemini', [
      geminiChunk([{ text: 'Let me ', thought: true }]),
      geminiChunk([{ text: 'think.', thought: true }]),
      geminiChunk([{ text: 'The ' }]),
      geminiChunk([{ text: 'answer.', thoughtSignature: 'c2ln' }], { finishReason: 'STOP' }),
      { data: { candidates: [{ content: { parts: [{ text: '' }], role: 'model' }, index: 0, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 5, totalTokenCount: 8 }, modelVersion: 'gemini-2.5', responseId: 'r1' } },
    ]);
    expect(answer).toEqual({
      candidates: [{ content: { parts: [{ text: 'Let me think.', thought: true }, { text: 'The answer.', thoughtSignature: 'c2ln' }], role: 'model' }, index: 0, finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 5, totalTokenCount: 8 },
      modelVersion: 'gemini-2.5',
      responseId: 'r1',
    });
  });

  it('a tool input that is not JSON is a malformed answer of that route, retryable', async () => {
    const err = await rebuilt('messages', [
      { data: { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], usage: { input_tokens: 1, output_tokens: 1 } } } },
      { data: { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 't', name: 'f', input: {} } } },
      { data: { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"a":' } } },
      { data: { type: 'content_block_stop', index: 0 } },
    ]).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'upstream_error', retryable: true, provider: 'p' });
  });
});
