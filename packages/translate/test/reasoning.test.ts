/**
 * Reasoning across dialects: a provider's signed reasoning reaches a client of another dialect in
 * that client's own fields, and goes back to the provider, as the provider made it, with the next
 * turn (docs/client-guide.md, "Reasoning across protocols").
 */
import { describe, expect, it } from 'vitest';
import { createStreamTranslator, translateRequest, translateResponse, type Dialect, type OutputEvent, type SseEvent } from '../src/index.ts';
import { CALL_ID, CTX, PLAIN_UPSTREAM_STREAMS, UPSTREAM_RESPONSES, UPSTREAM_STREAMS } from './fixtures.ts';

const ARGS = '{"city":"Paris"}';

type Body = Record<string, unknown>;
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
/** The envelopes the client sees (docs): base64url JSON naming the provider and holding its value. */
const GEMINI_SEALED = b64({ p: 'google', s: 'CiQB0e2Kb' });
const CLAUDE_SEALED = b64({ p: 'anthropic', s: 'EqQBCgIYAhIM', t: 'The user wants weather.' });

const TOOLS_MESSAGES = [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];
const TOOLS_RESPONSES = [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }];

function run(from: Dialect, to: Dialect, events: SseEvent[]): OutputEvent[] {
  const translator = createStreamTranslator(from, to, CTX);
  return [...events.flatMap((e) => translator.push(e)), ...translator.end()];
}

/** A messages stream's content blocks as a client SDK accumulates them. */
function messagesContent(events: OutputEvent[]): Body[] {
  const blocks: Body[] = [];
  for (const { data } of events) {
    const d = data as { type: string; index: number; content_block?: Body; delta?: Record<string, string> };
    if (d.type === 'content_block_start') blocks[d.index] = { ...d.content_block };
    if (d.type !== 'content_block_delta') continue;
    const block = blocks[d.index]!;
    const delta = d.delta!;
    if (delta.type === 'thinking_delta') block.thinking = String(block.thinking) + delta.thinking;
    if (delta.type === 'signature_delta') block.signature = String(block.signature) + delta.signature;
    if (delta.type === 'text_delta') block.text = String(block.text) + delta.text;
    if (delta.type === 'input_json_delta') block.input = JSON.parse(String(block.partial ?? '') + delta.partial_json || '{}');
  }
  return blocks;
}

/** A Gemini tool turn as streamed: the thought summary, then the call with the signature of its thinking. */
const GEMINI_THINKING_STREAM: SseEvent[] = [
  { data: { candidates: [{ content: { role: 'model', parts: [{ text: 'Weighing ', thought: true }] }, index: 0 }], modelVersion: 'gemini-2.5-flash' } },
  { data: { candidates: [{ content: { role: 'model', parts: [{ text: 'the request.', thought: true }] }, index: 0 }], modelVersion: 'gemini-2.5-flash' } },
  {
    data: {
      candidates: [
        { content: { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'CiQB0e2Kb' }] }, finishReason: 'STOP', index: 0 },
      ],
      usageMetadata: { promptTokenCount: 120, candidatesTokenCount: 22, thoughtsTokenCount: 8, totalTokenCount: 150 },
      modelVersion: 'gemini-2.5-flash',
    },
  },
];

/** The next turn of a messages client: the assistant turn as it got it, then the tool's result. */
function messagesNextTurn(assistant: Body[]): Body {
  return {
    model: 'm',
    max_tokens: 100,
    tools: TOOLS_MESSAGES,
    messages: [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: assistant },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: CALL_ID, content: '18C' }] },
    ],
  };
}

const geminiModelTurn = (body: Body, model = 'gemini-2.5-flash') =>
  (translateRequest('messages', 'gemini', body, { upstreamModel: model }).contents as Array<{ role: string; parts: Body[] }>).find(
    (c) => c.role === 'model',
  )!.parts;

describe('Gemini thinking to a messages client and back', () => {
  it('an answer shows the thought as thinking and carries the call’s thought signature sealed in a thinking block before the call', () => {
    const out = translateResponse('gemini', 'messages', UPSTREAM_RESPONSES.gemini, CTX);
    expect(out.content).toEqual([
      { type: 'thinking', thinking: 'Weighing the request.', signature: '' },
      { type: 'text', text: 'Let me check.' },
      { type: 'thinking', thinking: '', signature: GEMINI_SEALED },
      { type: 'tool_use', id: CALL_ID, name: 'get_weather', input: { city: 'Paris' } },
    ]);
    // Sent back, the signature is on the call again, where Gemini put it; the thoughts are not resent.
    expect(geminiModelTurn(messagesNextTurn(out.content as Body[]))).toEqual([
      { text: 'Let me check.' },
      { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'CiQB0e2Kb' },
    ]);
  });

  it('a stream carries the thought as thinking deltas and the signature as a signature delta, and it goes back on the call', () => {
    const out = run('gemini', 'messages', GEMINI_THINKING_STREAM);
    expect(out.map((e) => e.event)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const content = messagesContent(out);
    expect(content[0]).toEqual({ type: 'thinking', thinking: 'Weighing the request.', signature: GEMINI_SEALED });
    expect(content[1]).toMatchObject({ type: 'tool_use', id: 'call_gen_1_0', name: 'get_weather' });
    const assistant = [content[0]!, { type: 'tool_use', id: 'call_gen_1_0', name: 'get_weather', input: { city: 'Paris' } }];
    const body = messagesNextTurn(assistant);
    (body.messages as Array<{ content: unknown }>)[2]!.content = [{ type: 'tool_result', tool_use_id: 'call_gen_1_0', content: '18C' }];
    expect(geminiModelTurn(body, 'gemini-3-pro-preview')).toEqual([
      { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'CiQB0e2Kb' },
    ]);
  });

  it('a Gemini 3 call whose thinking came back without a signature still gets the documented placeholder', () => {
    const assistant = [{ type: 'thinking', thinking: 'hm', signature: '' }, { type: 'tool_use', id: CALL_ID, name: 'get_weather', input: { city: 'Paris' } }];
    expect(geminiModelTurn(messagesNextTurn(assistant), 'gemini-3-pro-preview')).toEqual([
      { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'skip_thought_signature_validator' },
    ]);
  });
});

/** The next turn of a Codex-like responses client (store false): its input items, reasoning included. */
function responsesNextTurn(output: Body[]): Body {
  return {
    model: 'm',
    store: false,
    include: ['reasoning.encrypted_content'],
    tools: TOOLS_RESPONSES,
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris?' }] }, ...output, { type: 'function_call_output', call_id: CALL_ID, output: '18C' }],
  };
}

const claudeAssistantTurn = (body: Body) =>
  (translateRequest('responses', 'messages', body, { upstreamModel: 'claude-sonnet-4-5' }).messages as Array<{ role: string; content: unknown }>).find(
    (m) => m.role === 'assistant',
  )!.content;

describe('Claude thinking to a responses client and back', () => {
  const reasoningItem = { id: 'rs_gen_1_0', type: 'reasoning', summary: [{ type: 'summary_text', text: 'The user wants weather.' }], encrypted_content: CLAUDE_SEALED };

  it('an answer starts with a reasoning item: the thinking as its summary, the signed thinking sealed in encrypted_content', () => {
    const out = translateResponse('messages', 'responses', UPSTREAM_RESPONSES.messages, CTX);
    expect((out.output as Body[]).map((i) => i.type)).toEqual(['reasoning', 'message', 'function_call']);
    expect((out.output as Body[])[0]).toEqual(reasoningItem);
    // Sent back with store false, Claude gets its thinking block, signature and all, before the call.
    expect(claudeAssistantTurn(responsesNextTurn(out.output as Body[]))).toEqual([
      { type: 'thinking', thinking: 'The user wants weather.', signature: 'EqQBCgIYAhIM' },
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: CALL_ID, name: 'get_weather', input: { city: 'Paris' } },
    ]);
  });

  it('a stream has the reasoning item events Codex reads, and its completed response the same item', () => {
    const out = run('messages', 'responses', UPSTREAM_STREAMS.messages);
    const reasoning = out.slice(2, 8);
    const at = { item_id: 'rs_gen_1_0', output_index: 0 };
    const summary = { ...at, summary_index: 0 };
    expect(reasoning.map((e) => e.data)).toEqual([
      { type: 'response.output_item.added', sequence_number: 2, output_index: 0, item: { id: 'rs_gen_1_0', type: 'reasoning', summary: [], encrypted_content: null } },
      { type: 'response.reasoning_summary_part.added', sequence_number: 3, ...summary, part: { type: 'summary_text', text: '' } },
      { type: 'response.reasoning_summary_text.delta', sequence_number: 4, ...summary, delta: 'Weather lookup.' },
      { type: 'response.reasoning_summary_text.done', sequence_number: 5, ...summary, text: 'Weather lookup.' },
      { type: 'response.reasoning_summary_part.done', sequence_number: 6, ...summary, part: { type: 'summary_text', text: 'Weather lookup.' } },
      {
        type: 'response.output_item.done',
        sequence_number: 7,
        output_index: 0,
        item: {
          id: 'rs_gen_1_0',
          type: 'reasoning',
          summary: [{ type: 'summary_text', text: 'Weather lookup.' }],
          encrypted_content: b64({ p: 'anthropic', s: 'EqQBCgIYAhIM', t: 'Weather lookup.' }),
        },
      },
    ]);
    const completed = out.find((e) => e.event === 'response.completed')!.data as { response: { output: Body[] } };
    expect(completed.response.output[0]).toEqual((reasoning.at(-1)!.data as { item: Body }).item);
    expect(completed.response.output.map((i) => i.type)).toEqual(['reasoning', 'message', 'function_call']);
    expect(claudeAssistantTurn(responsesNextTurn(completed.response.output))).toEqual([
      { type: 'thinking', thinking: 'Weather lookup.', signature: 'EqQBCgIYAhIM' },
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: CALL_ID, name: 'get_weather', input: JSON.parse(ARGS) },
    ]);
  });

  it('redacted thinking goes to the client sealed and back to Claude as redacted thinking', () => {
    const upstream = { ...UPSTREAM_RESPONSES.messages, content: [{ type: 'redacted_thinking', data: 'EmwKAhgB' }, ...(UPSTREAM_RESPONSES.messages.content as Body[]).slice(1)] };
    const out = translateResponse('messages', 'responses', upstream, CTX);
    expect((out.output as Body[])[0]).toEqual({ id: 'rs_gen_1_0', type: 'reasoning', summary: [], encrypted_content: b64({ p: 'anthropic', s: 'EmwKAhgB', r: true }) });
    expect((claudeAssistantTurn(responsesNextTurn(out.output as Body[])) as Body[])[0]).toEqual({ type: 'redacted_thinking', data: 'EmwKAhgB' });
  });
});

describe('Gemini thinking to a responses client and back', () => {
  it('the call’s thought signature travels sealed in a reasoning item and goes back on the call', () => {
    const out = translateResponse('gemini', 'responses', UPSTREAM_RESPONSES.gemini, CTX);
    const output = out.output as Body[];
    expect(output.map((i) => i.type)).toEqual(['reasoning', 'message', 'reasoning', 'function_call']);
    expect(output[2]).toEqual({ id: 'rs_gen_1_2', type: 'reasoning', summary: [], encrypted_content: GEMINI_SEALED });
    const body = translateRequest('responses', 'gemini', responsesNextTurn(output), { upstreamModel: 'gemini-3-pro-preview' });
    const model = (body.contents as Array<{ role: string; parts: Body[] }>).find((c) => c.role === 'model')!;
    expect(model.parts).toEqual([{ text: 'Let me check.' }, { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'CiQB0e2Kb' }]);
  });
});

describe('a reasoning proof goes back only to the provider that made it', () => {
  it('OpenAI’s own encrypted reasoning is not sent to Claude', () => {
    const body = responsesNextTurn([
      { id: 'rs_1', type: 'reasoning', summary: [{ type: 'summary_text', text: 'x' }], encrypted_content: 'gAAAAABoOpenAIOwn==' },
      { type: 'function_call', call_id: CALL_ID, name: 'get_weather', arguments: ARGS },
    ]);
    expect(claudeAssistantTurn(body)).toEqual([{ type: 'tool_use', id: CALL_ID, name: 'get_weather', input: { city: 'Paris' } }]);
  });

  it('a sealed Gemini signature is not sent to Claude, and a Claude one not to Gemini', () => {
    const toClaude = responsesNextTurn([
      { id: 'rs_1', type: 'reasoning', summary: [], encrypted_content: GEMINI_SEALED },
      { type: 'function_call', call_id: CALL_ID, name: 'get_weather', arguments: ARGS },
    ]);
    expect(claudeAssistantTurn(toClaude)).toEqual([{ type: 'tool_use', id: CALL_ID, name: 'get_weather', input: { city: 'Paris' } }]);
    const call = { type: 'tool_use', id: CALL_ID, name: 'get_weather', input: { city: 'Paris' } };
    for (const signature of [CLAUDE_SEALED, 'EqQBCgIYAhIM']) {
      expect(geminiModelTurn(messagesNextTurn([{ type: 'thinking', thinking: 'x', signature }, call]))).toEqual([
        { functionCall: { name: 'get_weather', args: { city: 'Paris' } } },
      ]);
    }
  });

  it('a chat client streams the same with or without the upstream’s thinking', () => {
    expect(run('messages', 'chat', UPSTREAM_STREAMS.messages)).toEqual(run('messages', 'chat', PLAIN_UPSTREAM_STREAMS.messages));
  });

  it('a chat client sees no reasoning, and a chat upstream gets none', () => {
    const out = translateResponse('messages', 'chat', UPSTREAM_RESPONSES.messages, CTX) as { choices: Array<{ message: Body }> };
    expect(out.choices[0]!.message.content).toBe('Let me check.');
    const body = translateRequest('messages', 'chat', messagesNextTurn([{ type: 'thinking', thinking: 'x', signature: 'EqQB' }, { type: 'text', text: 'Hi' }]), { upstreamModel: 'gpt' });
    expect(JSON.stringify(body)).not.toMatch(/thinking|EqQB/);
  });
});
