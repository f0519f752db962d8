import { describe, expect, it } from 'vitest';
import {
  attachService,
  estimateInputTokensUpperBound,
  extractUsage,
  IMAGE_TOKEN_ALLOWANCE,
  maxOutputTokens,
  REQUEST_TOKEN_ALLOWANCE,
  serviceSlot,
  type Dialect,
} from '../src/index.ts';
import { PNG, REQUESTS, RESPONSES, UPSTREAM_RESPONSES, UPSTREAM_USAGE, USAGE } from './fixtures.ts';

describe('extractUsage', () => {
  it.each(['chat', 'messages', 'responses', 'gemini'] as const)('reads %s usage', (dialect) => {
    expect(extractUsage(dialect, UPSTREAM_RESPONSES[dialect])).toEqual(UPSTREAM_USAGE[dialect]);
    expect(extractUsage(dialect, RESPONSES[dialect])).toEqual(USAGE);
  });

  it('bills messages cache writes and reads on top of input_tokens', () => {
    const body = { usage: { input_tokens: 10, cache_creation_input_tokens: 1000, cache_read_input_tokens: 500, output_tokens: 7 } };
    expect(extractUsage('messages', body)).toEqual({
      inputTokens: 1510,
      outputTokens: 7,
      cacheCreationTokens: 1000,
      cacheReadTokens: 500,
      totalBillable: 1517,
    });
  });

  it('bills gemini thinking and tool-prompt tokens, and keeps the thinking count apart', () => {
    const body = { usageMetadata: { promptTokenCount: 10, toolUsePromptTokenCount: 5, candidatesTokenCount: 3, thoughtsTokenCount: 40, totalTokenCount: 58 } };
    expect(extractUsage('gemini', body)).toEqual({ inputTokens: 15, outputTokens: 43, cacheCreationTokens: 0, cacheReadTokens: 0, totalBillable: 58, reasoningTokens: 40 });
  });

  it('reads the reasoning tokens of chat and responses usage', () => {
    const chat = { usage: { prompt_tokens: 10, completion_tokens: 5, completion_tokens_details: { reasoning_tokens: 3 } } };
    const responses = { usage: { input_tokens: 10, output_tokens: 5, output_tokens_details: { reasoning_tokens: 3 } } };
    expect(extractUsage('chat', chat)?.reasoningTokens).toBe(3);
    expect(extractUsage('responses', responses)?.reasoningTokens).toBe(3);
  });

  it('never bills less than a larger reported total', () => {
    expect(extractUsage('chat', { usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 20 } })?.totalBillable).toBe(20);
    expect(extractUsage('responses', { usage: { input_tokens: 10, output_tokens: 5, total_tokens: 12 } })?.totalBillable).toBe(15);
  });

  it.each([
    ['chat', { choices: [] }],
    ['chat', { usage: null }],
    ['messages', { usage: {} }],
    ['responses', { usage: null }],
    ['gemini', { candidates: [] }],
  ] as Array<[Dialect, Record<string, unknown>]>)('%s body without usage → undefined (%j)', (dialect, body) => {
    expect(extractUsage(dialect, body)).toBeUndefined();
  });
});

describe('estimateInputTokensUpperBound', () => {
  it('is the body size in UTF-8 bytes plus the fixed allowance', () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'héllo 世界' }] };
    // 'é' is 2 bytes, each CJK character 3: the bound follows bytes, not characters.
    expect(estimateInputTokensUpperBound(body)).toBe(Buffer.byteLength(JSON.stringify(body)) + REQUEST_TOKEN_ALLOWANCE);
    expect(Buffer.byteLength(JSON.stringify(body))).toBe(JSON.stringify(body).length + 1 + 4);
  });

  it.each(['chat', 'messages', 'responses', 'gemini'] as const)('adds one image allowance per image in %s', (dialect) => {
    const bytes = Buffer.byteLength(JSON.stringify(REQUESTS[dialect]));
    expect(estimateInputTokensUpperBound(REQUESTS[dialect])).toBe(bytes + IMAGE_TOKEN_ALLOWANCE + REQUEST_TOKEN_ALLOWANCE);
  });

  it('counts base64 image data by its size', () => {
    const small = { messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }] }] };
    const large = structuredClone(small);
    large.messages[0]!.content[0]!.source.data = PNG.repeat(1000);
    expect(estimateInputTokensUpperBound(large) - estimateInputTokensUpperBound(small)).toBe(PNG.length * 999);
  });
});

describe('maxOutputTokens', () => {
  it.each([
    ['chat', { max_completion_tokens: 300, max_tokens: 100 }, 300],
    ['chat', { max_tokens: 100 }, 100],
    ['chat', {}, undefined],
    ['messages', { max_tokens: 256 }, 256],
    ['responses', { max_output_tokens: 64 }, 64],
    ['responses', { max_output_tokens: 0 }, undefined],
    ['gemini', { generationConfig: { maxOutputTokens: 99 } }, 99],
    ['gemini', {}, undefined],
  ] as Array<[Dialect, Record<string, unknown>, number | undefined]>)('%s %j → %s', (dialect, body, expected) => {
    expect(maxOutputTokens(dialect, body)).toBe(expected);
  });
});

describe('attachService', () => {
  const service = { credit_charged: 3, balance_after: 997 };

  it('puts service at the top level of bodies and chat/messages events', () => {
    expect(attachService('chat', { id: 'x', choices: [] }, service)).toEqual({ id: 'x', choices: [], service });
    expect(attachService('messages', { type: 'message_delta', usage: {} }, service)).toEqual({ type: 'message_delta', usage: {}, service });
    expect(attachService('responses', { id: 'r', object: 'response' }, service)).toEqual({ id: 'r', object: 'response', service });
  });

  it('puts service into the response of a responses stream event', () => {
    const event = { type: 'response.completed', sequence_number: 9, response: { id: 'r', status: 'completed' } };
    expect(attachService('responses', event, service)).toEqual({
      type: 'response.completed',
      sequence_number: 9,
      response: { id: 'r', status: 'completed', service },
    });
    expect(event.response).not.toHaveProperty('service');
  });
});

describe('serviceSlot', () => {
  const service = { credit_charged: 3, balance_after: 997 };
  /** The slot filled as the gateway fills it: the serialised service object spliced in. */
  const filled = (slot: { json: string; at: number }) => `${slot.json.slice(0, slot.at)}${JSON.stringify(service)}${slot.json.slice(slot.at)}`;

  it.each<[Dialect, Record<string, unknown>]>([
    ['chat', { id: 'x', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 1 } }],
    ['chat', {}],
    ['messages', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 }, note: 'ünïcødé ✓ "quoted"' }],
    ['responses', { type: 'response.completed', response: { id: 'r', status: 'completed', output: [] }, sequence_number: 9 }],
    ['responses', { type: 'response.completed', response: {}, skipped: undefined }],
    ['responses', { id: 'r', object: 'response', output: [] }],
  ])('%s: the filled slot is byte for byte the JSON of attachService (%#)', (dialect, data) => {
    expect(filled(serviceSlot(dialect, data))).toBe(JSON.stringify(attachService(dialect, data, service)));
  });

  it("replaces a service field the upstream sent, as attachService does", () => {
    const filledJson = filled(serviceSlot('chat', { service: 'theirs', id: 'x' }));
    expect(JSON.parse(filledJson)).toEqual(attachService('chat', { service: 'theirs', id: 'x' }, service));
  });
});
