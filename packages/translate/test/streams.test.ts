import { describe, expect, it } from 'vitest';
import { createStreamTranslator, streamFailureEvents, type Dialect, type OutputEvent, type ResponseContext, type SseEvent } from '../src/index.ts';
import { CODECS } from '../src/codecs.ts';
import type { StreamEvent } from '../src/ir.ts';
import {
  argDeltas,
  CTX,
  DEFAULT_SETTINGS,
  DIALECTS,
  ECHOED_SETTINGS,
  EMITTED_STREAMS,
  PLAIN_UPSTREAM_STREAMS,
  SETTINGS_REQUEST,
  UPSTREAM_STREAMS,
  UPSTREAM_USAGE,
  USAGE,
} from './fixtures.ts';

function usageChunk(usage: unknown): SseEvent & { data: Record<string, unknown> } {
  return { data: { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [], usage } };
}

function callChunk(index: number, id: string, args: string): SseEvent {
  return { data: { id: 'c', choices: [{ index: 0, delta: { tool_calls: [{ index, id, type: 'function', function: { name: 'f', arguments: args } }] } }] } };
}

const pairs = DIALECTS.flatMap((from) => DIALECTS.filter((to) => to !== from).map((to) => [from, to] as const));

function run(from: Dialect, to: Dialect, events: SseEvent[], ctx: ResponseContext = CTX) {
  const translator = createStreamTranslator(from, to, ctx);
  const out: OutputEvent[] = [];
  for (const event of events) out.push(...translator.push(event));
  out.push(...translator.end());
  return { out, usage: translator.usage(), translator };
}

/** What a stream in `dialect` says, read by that dialect's parser: text, calls, stop, usage. */
function collect(dialect: Dialect, events: SseEvent[]) {
  const parser = CODECS[dialect].createStreamParser(CTX);
  let text = '';
  const calls: Array<{ id: string; name: string; args: string }> = [];
  let stop: string | undefined;
  for (const event of [...events.flatMap((e) => parser.push(e)), ...parser.end()]) {
    if (event.type === 'text_delta') text += event.text;
    if (event.type === 'block_start' && event.block.type === 'tool_call') calls.push({ id: event.block.id, name: event.block.name, args: '' });
    if (event.type === 'tool_args_delta') calls.at(-1)!.args += event.json;
    if (event.type === 'finish') stop = event.stopReason;
  }
  // Only responses shows thinking tokens apart (the others count them as output): round trips lose them.
  const usage = parser.usage();
  return { text, calls, stop, usage: usage && { ...usage, reasoningTokens: undefined } };
}

describe('stream translation across dialects', () => {
  it.each(pairs)('%s → %s produces the exact event sequence of the target', (from, to) => {
    const { out, usage } = run(from, to, PLAIN_UPSTREAM_STREAMS[from]);
    expect(out).toEqual(EMITTED_STREAMS[to](argDeltas(from), UPSTREAM_USAGE[from].reasoningTokens));
    expect(usage).toEqual(UPSTREAM_USAGE[from]);
  });

  it.each(pairs)('%s → %s → back keeps text, call, stop reason and usage', (from, via) => {
    const there = run(from, via, UPSTREAM_STREAMS[from]).out;
    const back = run(via, from, there).out;
    expect(collect(from, back)).toEqual(collect(from, UPSTREAM_STREAMS[from]));
    expect(collect(from, back)).toMatchObject({
      text: 'Let me check.',
      calls: [{ id: 'call_gen_1_0', name: 'get_weather', args: '{"city":"Paris"}' }],
      stop: 'tool_use',
      usage: USAGE,
    });
  });
});

/** Event names in order, for order assertions (chat chunks by their content). */
function shape(dialect: Dialect, events: OutputEvent[]): string[] {
  return events.map((e) => {
    if (dialect !== 'chat' && dialect !== 'gemini') return String(e.event);
    if (e.data === '[DONE]') return '[DONE]';
    const d = e.data as { choices?: Array<{ finish_reason: unknown }>; candidates?: Array<{ finishReason?: unknown }> };
    if (dialect === 'gemini') return d.candidates?.[0]?.finishReason === undefined ? 'chunk' : 'final';
    if (d.choices?.length === 0) return 'usage';
    return d.choices?.[0]?.finish_reason ? 'finish' : 'delta';
  });
}

const ORDER: Record<Dialect, RegExp> = {
  chat: /^(delta )+finish usage \[DONE\]$/,
  messages: /^message_start (content_block_start (content_block_delta )*content_block_stop )+message_delta message_stop$/,
  responses:
    /^response\.created response\.in_progress (response\.output_item\.added (response\.content_part\.added (response\.output_text\.delta )+response\.output_text\.done response\.content_part\.done |(response\.function_call_arguments\.delta )+response\.function_call_arguments\.done |response\.reasoning_summary_part\.added (response\.reasoning_summary_text\.delta )+response\.reasoning_summary_text\.done response\.reasoning_summary_part\.done )response\.output_item\.done )+response\.completed$/,
  gemini: /^(chunk )+final$/,
};

describe('stream framing', () => {
  it.each(pairs)('%s → %s: events in the order of the target protocol', (from, to) => {
    expect(shape(to, run(from, to, UPSTREAM_STREAMS[from]).out).join(' ')).toMatch(ORDER[to]);
  });

  it.each(DIALECTS.flatMap((from) => DIALECTS.map((to) => [from, to] as const)))(
    '%s → %s: one usage event, last (before [DONE] / message_stop)',
    (from, to) => {
      const { out } = run(from, to, UPSTREAM_STREAMS[from]);
      const marked = out.flatMap((e, i) => (e.carriesUsage ? [i] : []));
      expect(marked).toHaveLength(1);
      const trailing = out.slice(marked[0]! + 1).map((e) => (e.data === '[DONE]' ? '[DONE]' : e.event));
      expect(trailing).toEqual({ chat: ['[DONE]'], messages: ['message_stop'], responses: [], gemini: [] }[to]);
    },
  );

  it('numbers responses events from 0 without gaps', () => {
    const { out } = run('messages', 'responses', UPSTREAM_STREAMS.messages);
    expect(out.map((e) => (e.data as { sequence_number: number }).sequence_number)).toEqual(out.map((_, i) => i));
  });

  it('reports the upstream usage while the final event is held back', () => {
    const translator = createStreamTranslator('gemini', 'messages', CTX);
    for (const event of UPSTREAM_STREAMS.gemini) expect(translator.push(event).some((e) => e.carriesUsage)).toBe(false);
    const final = translator.end();
    expect(final.find((e) => e.carriesUsage)?.event).toBe('message_delta');
    expect(translator.usage()).toEqual(UPSTREAM_USAGE.gemini);
  });
});

function modelOf(dialect: Dialect, data: unknown): unknown {
  const d = data as Record<string, Record<string, unknown>>;
  if (dialect === 'messages') return d.message?.model;
  if (dialect === 'responses') return d.response?.model;
  return dialect === 'gemini' ? d.modelVersion : d.model;
}

describe('stream passthrough (same dialect)', () => {
  const finalIndex: Record<Dialect, (events: SseEvent[]) => number> = {
    chat: (events) => events.length - 2,
    messages: (events) => events.findIndex((e) => e.event === 'message_delta'),
    responses: (events) => events.length - 1,
    gemini: (events) => events.length - 1,
  };

  it.each(DIALECTS)('%s passes every event, rewrites only the model and marks the usage event', (dialect) => {
    const upstream = UPSTREAM_STREAMS[dialect];
    const { out, usage } = run(dialect, dialect, upstream);
    expect(out).toHaveLength(upstream.length);
    out.forEach((event, i) => {
      const original = upstream[i]!;
      expect(event.event).toBe(original.event);
      const model = modelOf(dialect, original.data);
      expect(modelOf(dialect, event.data)).toBe(model === undefined ? undefined : 'public-model');
      const restore = structuredClone(event.data) as Record<string, Record<string, unknown>>;
      if (model !== undefined) {
        if (dialect === 'messages') restore.message!.model = model;
        else if (dialect === 'responses') restore.response!.model = model;
        else (restore as Record<string, unknown>)[dialect === 'gemini' ? 'modelVersion' : 'model'] = model;
      }
      expect(restore).toEqual(original.data);
      expect(event.carriesUsage === true).toBe(i === finalIndex[dialect](upstream));
    });
    expect(usage).toEqual(UPSTREAM_USAGE[dialect]);
  });

  it.each(DIALECTS)('%s relays the upstream JSON text of an event it does not change, and never of one it does', (dialect) => {
    const upstream = UPSTREAM_STREAMS[dialect].map((e) => (typeof e.data === 'string' ? e : { ...e, text: JSON.stringify(e.data) }));
    const renamed = upstream.map((e) => modelOf(dialect, e.data) !== undefined);
    const texts = (ctx: ResponseContext) => run(dialect, dialect, upstream, ctx).out.map((event) => event.text);
    // The public model differs from the provider's: an event that names it is serialised again.
    expect(texts(CTX)).toEqual(upstream.map((e, i) => (renamed[i] ? undefined : e.text)));
    // The same name on both sides: every JSON event leaves as the provider's own text.
    const same = modelOf(dialect, upstream[renamed.indexOf(true)]!.data) as string;
    expect(texts({ ...CTX, model: same })).toEqual(upstream.map((e) => e.text));
    expect(renamed).toContain(true);
  });

  it('chat: marks only the last of repeated usage chunks', () => {
    const events = [usageChunk({ prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 }), usageChunk({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 })];
    const translator = createStreamTranslator('chat', 'chat', CTX);
    expect(translator.push(events[0]!)).toEqual([]);
    expect(translator.push(events[1]!)).toEqual([{ data: { ...events[0]!.data, model: 'public-model' } }]);
    const tail = translator.push({ data: '[DONE]' });
    expect(tail).toEqual([{ data: { ...events[1]!.data, model: 'public-model' }, carriesUsage: true }, { data: '[DONE]' }]);
    expect(translator.usage()?.totalBillable).toBe(7);
  });

  it("chat: OpenAI's usage chunk (empty `choices`, after the finish) is final at once, before `[DONE]`", () => {
    const finish = { data: { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] } };
    const usage = usageChunk({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 });
    const finalAtUsage = () => {
      const translator = createStreamTranslator('chat', 'chat', CTX);
      expect(translator.push(finish)).toEqual([{ data: { ...finish.data, model: 'public-model' } }]);
      expect(translator.usage()).toBeUndefined();
      expect(translator.push(usage)).toEqual([{ data: { ...usage.data, model: 'public-model' }, carriesUsage: true }]);
      expect(translator.usage()?.totalBillable).toBe(7);
      return translator;
    };
    // No second final chunk, whether `[DONE]` comes or the provider just closes.
    const done = finalAtUsage();
    expect([...done.push({ data: '[DONE]' }), ...done.end()]).toEqual([{ data: '[DONE]' }]);
    expect(finalAtUsage().end()).toEqual([{ data: '[DONE]' }]);
  });

  it('chat → other protocols: the answer is complete at the usage chunk, `[DONE]` adds nothing', () => {
    const upstream = UPSTREAM_STREAMS.chat;
    expect(upstream.at(-1)!.data).toBe('[DONE]');
    for (const to of DIALECTS.filter((d) => d !== 'chat')) {
      const translator = createStreamTranslator('chat', to, CTX);
      const out = upstream.slice(0, -1).flatMap((e) => translator.push(e));
      expect(out.filter((e) => e.carriesUsage)).toHaveLength(1);
      expect(translator.usage()).toEqual(UPSTREAM_USAGE.chat);
      expect([...translator.push(upstream.at(-1)!), ...translator.end()]).toEqual([]);
    }
  });

  it('chat: adds a final chunk when the upstream sent no usage, so the caller can still extend it', () => {
    const events = [UPSTREAM_STREAMS.chat[1]!, { data: { ...(UPSTREAM_STREAMS.chat[6]!.data as object) } }, { data: '[DONE]' }];
    const { out, usage } = run('chat', 'chat', events);
    expect(out.slice(-2)).toEqual([
      {
        data: { id: 'chatcmpl-up', created: 1_741_569_952, object: 'chat.completion.chunk', model: 'public-model', choices: [], usage: null },
        carriesUsage: true,
      },
      { data: '[DONE]' },
    ]);
    expect(usage).toBeUndefined();
  });
});

describe('stream failures', () => {
  const truncated: Record<Dialect, SseEvent[]> = {
    chat: UPSTREAM_STREAMS.chat.slice(0, 3),
    messages: UPSTREAM_STREAMS.messages.slice(0, 8),
    responses: UPSTREAM_STREAMS.responses.slice(0, 7),
    gemini: UPSTREAM_STREAMS.gemini.slice(0, 2),
  };
  const ERROR_EVENTS: Record<Dialect, (sequence: number) => OutputEvent[]> = {
    chat: () => [{ data: { error: { message: 'upstream stream ended before it finished', type: 'server_error', code: 'upstream_error' } } }],
    messages: () => [
      {
        event: 'error',
        data: { type: 'error', error: { type: 'api_error', code: 'upstream_error', message: 'upstream stream ended before it finished' } },
      },
    ],
    responses: (sequence) => [
      {
        event: 'error',
        data: { type: 'error', code: 'upstream_error', message: 'upstream stream ended before it finished', param: null, sequence_number: sequence },
      },
      {
        event: 'response.failed',
        data: {
          type: 'response.failed',
          sequence_number: sequence + 1,
          response: {
            id: 'gen_1',
            object: 'response',
            created_at: 1_700_000_000,
            status: 'failed',
            error: { code: 'upstream_error', message: 'upstream stream ended before it finished' },
            incomplete_details: null,
            model: 'public-model',
            output: [],
            usage: null,
            ...DEFAULT_SETTINGS,
          },
        },
      },
    ],
    gemini: () => [{ data: { error: { code: 500, message: 'upstream stream ended before it finished', status: 'INTERNAL' } } }],
  };

  it.each(DIALECTS.flatMap((from) => DIALECTS.map((to) => [from, to] as const)))(
    '%s → %s: an upstream that stops early ends in the target error event, without usage event',
    (from, to) => {
      const { out, usage } = run(from, to, truncated[from]);
      expect(out.some((e) => e.carriesUsage)).toBe(false);
      const errors = ERROR_EVENTS[to](out.length - ERROR_EVENTS[to](0).length);
      expect(out.slice(-errors.length)).toEqual(errors);
      // Partial counts (messages' input, gemini's running totals) are not a final usage.
      expect(usage).toBeUndefined();
    },
  );

  it('renders an upstream error event in the client protocol, with our code', () => {
    const events = [UPSTREAM_STREAMS.messages[0]!, { event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }];
    const { out } = run('messages', 'chat', events);
    expect(out.at(-1)).toEqual({ data: { error: { message: 'Overloaded', type: 'server_error', code: 'upstream_error' } } });
    expect(run('messages', 'messages', events).out.at(-1)).toEqual({
      event: 'error',
      data: { type: 'error', error: { type: 'api_error', code: 'upstream_error', message: 'Overloaded' } },
    });
  });

  it("types a messages stream's error event by what failed, as Anthropic's do", () => {
    const types = ['upstream_timeout', 'upstream_rate_limited', 'invalid_request', 'upstream_error'].map(
      (code) => (streamFailureEvents('messages', { code, message: 'm' })[0]!.data as { error: { type: string } }).error.type,
    );
    expect(types).toEqual([
      'timeout_error',
      'rate_limit_error',
      'invalid_request_error',
      'api_error',
    ]);
  });

  it('reads a responses response.failed as an error', () => {
    const failed = { event: 'response.failed', data: { type: 'response.failed', response: { status: 'failed', error: { code: 'server_error', message: 'boom' } } } };
    const { out } = run('responses', 'messages', [UPSTREAM_STREAMS.responses[0]!, failed]);
    expect(out.map((e) => e.event)).toEqual(['message_start', 'error']);
  });

  it('fail() renders the client protocol\'s error events after what was forwarded, continuing responses numbering', () => {
    const translator = createStreamTranslator('chat', 'responses', CTX);
    const sent = UPSTREAM_STREAMS.chat.slice(0, 3).flatMap((e) => translator.push(e));
    const failure = translator.fail({ message: 'upstream timed out', code: 'upstream_timeout' });
    expect(failure.map((e) => [e.event, (e.data as { sequence_number: number }).sequence_number])).toEqual([
      ['error', sent.length],
      ['response.failed', sent.length + 1],
    ]);
    expect((failure[0]!.data as { code: string }).code).toBe('upstream_timeout');
    expect((failure[1]!.data as { response: unknown }).response).toMatchObject({ id: CTX.id, model: CTX.model, status: 'failed' });
  });

  it('fail() in passthrough continues the upstream numbering; after the finish it continues what came before the usage-bearing event', () => {
    const translator = createStreamTranslator('responses', 'responses', CTX);
    const upstream = UPSTREAM_STREAMS.responses;
    for (const event of upstream.slice(0, 5)) translator.push(event);
    expect((translator.fail({ message: 'x' })[0]!.data as { sequence_number: number }).sequence_number).toBe(5);
    const done = createStreamTranslator('responses', 'responses', CTX);
    const out = upstream.flatMap((event) => done.push(event));
    const billed = out.findIndex((e) => e.carriesUsage);
    // The caller holds the usage-bearing event until billed: a billing failure continues before it.
    expect((done.fail({ message: 'x' })[0]!.data as { sequence_number: number }).sequence_number).toBe(billed);
    expect(done.usage()).toBeDefined();
  });

  it('streamFailureEvents continues forwarded responses events as the translator itself would', () => {
    const failure = { message: 'the stream broke', code: 'upstream_error' };
    // The request's settings, echoed in the failed response as in every other.
    const translator = createStreamTranslator('chat', 'responses', { ...CTX, request: { temperature: 0.2, instructions: 'Be brief.', metadata: { team: 'a' } } });
    const sent = UPSTREAM_STREAMS.chat.slice(0, 3).flatMap((e) => translator.push(e));
    const events = streamFailureEvents('responses', failure, sent[0]!.data, sent.at(-1)!.data);
    expect(events.map((e) => [e.event, (e.data as { sequence_number: number }).sequence_number])).toEqual([
      ['error', sent.length],
      ['response.failed', sent.length + 1],
    ]);
    expect((events[1]!.data as { response: unknown }).response).toMatchObject({ id: CTX.id, model: CTX.model, created_at: CTX.created, status: 'failed' });
    expect(events).toEqual(translator.fail(failure));
  });

  it('streamFailureEvents with nothing sent, and in the other dialects, is the protocol’s plain error event', () => {
    const failure = { message: 'the stream broke', code: 'upstream_error' };
    expect((streamFailureEvents('responses', failure)[0]!.data as { sequence_number: number }).sequence_number).toBe(0);
    for (const dialect of ['chat', 'messages'] as const) {
      const sent = EMITTED_STREAMS[dialect]([]).slice(0, 2).map((e) => e.data);
      expect(streamFailureEvents(dialect, failure, sent[0], sent[1])).toEqual(createStreamTranslator(dialect, dialect, CTX).fail(failure));
    }
  });

  it('accepts a chat upstream that finished without [DONE]', () => {
    const { out } = run('chat', 'messages', UPSTREAM_STREAMS.chat.slice(0, -1));
    expect(out.at(-1)?.event).toBe('message_stop');
    expect(out.find((e) => e.carriesUsage)?.data).toMatchObject({ usage: { output_tokens: 30 } });
  });
});

/** Each other dialect's stream of "Let me check." stopped by the output cap. */
const CAPPED: Record<'chat' | 'messages' | 'gemini', SseEvent[]> = {
  chat: [...UPSTREAM_STREAMS.chat.slice(0, 3), { data: { id: 'c', choices: [{ index: 0, delta: {}, finish_reason: 'length' }] } }, UPSTREAM_STREAMS.chat.at(-2)!, { data: '[DONE]' }],
  messages: [
    ...PLAIN_UPSTREAM_STREAMS.messages.slice(0, 6),
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { output_tokens: 30 } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ],
  gemini: [
    UPSTREAM_STREAMS.gemini[0]!,
    { data: { candidates: [{ content: { role: 'model', parts: [{ text: ' check.' }] }, finishReason: 'MAX_TOKENS', index: 0 }], usageMetadata: { promptTokenCount: 120, candidatesTokenCount: 30, totalTokenCount: 150 } } },
  ],
};

/** The response objects of the responses events that carry one, by event name. */
function responsesOf(out: OutputEvent[]): Array<[string | undefined, Record<string, unknown>]> {
  return out.flatMap((e) => {
    const response = (e.data as { response?: Record<string, unknown> }).response;
    return response === undefined ? [] : [[e.event, response] as [string | undefined, Record<string, unknown>]];
  });
}

describe('responses streams translated from other dialects', () => {
  it.each(['chat', 'messages', 'gemini'] as const)('%s → responses: every response object echoes the request settings', (from) => {
    const responses = responsesOf(run(from, 'responses', UPSTREAM_STREAMS[from], { ...CTX, request: SETTINGS_REQUEST }).out);
    expect(responses.map(([event]) => event)).toEqual(['response.created', 'response.in_progress', 'response.completed']);
    for (const [, response] of responses) expect(response).toMatchObject(ECHOED_SETTINGS);
  });

  it.each(['chat', 'messages', 'gemini'] as const)('%s → responses: API defaults for settings the request leaves out, usage details', (from) => {
    const responses = responsesOf(run(from, 'responses', UPSTREAM_STREAMS[from], { ...CTX, request: { model: 'public-model', input: 'Hi' } }).out);
    for (const [, response] of responses) expect(response).toMatchObject(DEFAULT_SETTINGS);
    expect(responses.at(-1)![1].usage).toMatchObject({
      input_tokens_details: { cached_tokens: 20 },
      output_tokens_details: { reasoning_tokens: UPSTREAM_USAGE[from].reasoningTokens ?? 0 },
    });
  });

  it.each(['chat', 'messages', 'gemini'] as const)('%s → responses: a stream cut off by the output cap ends in an incomplete message', (from) => {
    const { out } = run(from, 'responses', CAPPED[from]);
    const item = { id: 'msg_gen_1_0', type: 'message', status: 'incomplete', role: 'assistant', content: [{ type: 'output_text', text: 'Let me check.', annotations: [] }] };
    expect(out.find((e) => e.event === 'response.output_item.done')?.data).toMatchObject({ item });
    expect(out.at(-1)).toMatchObject({ event: 'response.incomplete', data: { response: { status: 'incomplete', output: [item] } } });
  });
});

describe('stream details', () => {
  it('maps a stop at the output cap into each protocol', () => {
    const events = [UPSTREAM_STREAMS.chat[1]!, { data: { id: 'c', choices: [{ index: 0, delta: {}, finish_reason: 'length' }] } }, { data: '[DONE]' }];
    const final = (to: Dialect) => run('chat', to, events).out.find((e) => e.carriesUsage)!;
    expect(final('messages').data).toMatchObject({ delta: { stop_reason: 'max_tokens' } });
    expect(final('responses')).toMatchObject({ event: 'response.incomplete', data: { response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } } } });
    expect(final('gemini').data).toMatchObject({ candidates: [{ finishReason: 'MAX_TOKENS' }] });
  });

  it('takes arguments that a responses server sends only with the finished item', () => {
    const item = { id: 'fc', type: 'function_call', call_id: 'c1', name: 'f', arguments: '{"a":1}' };
    const events = [
      { event: 'response.created', data: { type: 'response.created', response: {} } },
      { event: 'response.output_item.added', data: { type: 'response.output_item.added', output_index: 0, item: { ...item, arguments: '' } } },
      { event: 'response.output_item.done', data: { type: 'response.output_item.done', output_index: 0, item } },
      { event: 'response.completed', data: { type: 'response.completed', response: { status: 'completed' } } },
    ];
    const { out } = run('responses', 'chat', events);
    expect(out.map((e) => (e.data as { choices?: Array<{ delta: unknown; finish_reason: unknown }> }).choices?.[0])).toEqual([
      // An answer opening with a tool call has `content` null, as OpenAI streams it.
      { index: 0, delta: { role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'f', arguments: '' } }] }, logprobs: null, finish_reason: null },
      { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"a":1}' } }] }, logprobs: null, finish_reason: null },
      { index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' },
      undefined,
      undefined,
    ]);
  });

  it('separates chat tool calls that arrive whole without their own index', () => {
    const events = [callChunk(0, 'a', '{"x":1}'), callChunk(0, 'b', '{"x":2}'), { data: { id: 'c', choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] } }, { data: '[DONE]' }];
    const blocks = run('chat', 'messages', events).out.filter((e) => e.event?.startsWith('content_block')).map((e) => e.data);
    expect(blocks).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'a', name: 'f', input: {} } },
      { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"x":1}' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'b', name: 'f', input: {} } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"x":2}' } },
      { type: 'content_block_stop', index: 1 },
    ]);
  });

  it('numbers parallel chat tool calls for chat clients and keeps their ids', () => {
    const events = [callChunk(0, 'a', '{}'), callChunk(1, 'b', '{}'), { data: { id: 'c', choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] } }, { data: '[DONE]' }];
    const messages = run('chat', 'messages', events).out;
    expect(messages.filter((e) => e.event === 'content_block_start').map((e) => e.data)).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'a', name: 'f', input: {} } },
      { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'b', name: 'f', input: {} } },
    ]);
    const back = run('messages', 'chat', messages).out;
    const calls = back.flatMap((e) => (e.data as { choices?: Array<{ delta: { tool_calls?: unknown[] } }> }).choices?.[0]?.delta.tool_calls ?? []);
    expect(calls).toEqual([
      { index: 0, id: 'a', type: 'function', function: { name: 'f', arguments: '' } },
      { index: 0, function: { arguments: '{}' } },
      { index: 1, id: 'b', type: 'function', function: { name: 'f', arguments: '' } },
      { index: 1, function: { arguments: '{}' } },
    ]);
  });
});

// Parallel chat tool calls: `index` keys the deltas, and some servers interleave them.

function toolDeltas(...calls: unknown[]): SseEvent {
  return { data: { id: 'c', choices: [{ index: 0, delta: { tool_calls: calls } }] } };
}

function opens(index: number, id: string, name: string, args = '') {
  return { index, id, type: 'function', function: { name, arguments: args } };
}

function argsDelta(index: number, json: string) {
  return { index, function: { arguments: json } };
}

const TOOL_FINISH: SseEvent[] = [{ data: { id: 'c', choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] } }, { data: '[DONE]' }];
const WEATHER = opens(0, 'call_a', 'get_weather');
const TIME = opens(1, 'call_b', 'get_time');

const PARALLEL_UPSTREAMS: Record<string, SseEvent[]> = {
  sequential: [
    toolDeltas(WEATHER),
    toolDeltas(argsDelta(0, '{"city":')),
    toolDeltas(argsDelta(0, '"Paris"}')),
    toolDeltas(TIME),
    toolDeltas(argsDelta(1, '{"tz":')),
    toolDeltas(argsDelta(1, '"CET"}')),
    ...TOOL_FINISH,
  ],
  interleaved: [
    toolDeltas(WEATHER, TIME),
    toolDeltas(argsDelta(0, '{"city":')),
    toolDeltas(argsDelta(1, '{"tz":')),
    toolDeltas(argsDelta(0, '"Paris"}')),
    toolDeltas(argsDelta(1, '"CET"}')),
    ...TOOL_FINISH,
  ],
  'interleaved, the later call complete first': [
    toolDeltas(opens(0, 'call_a', 'get_weather', '{"city":'), opens(1, 'call_b', 'get_time', '{"tz":')),
    toolDeltas(argsDelta(1, '"CET"}')),
    toolDeltas(argsDelta(0, '"Paris"}')),
    ...TOOL_FINISH,
  ],
  'interleaved, the first call incomplete until the finish': [
    toolDeltas(WEATHER, TIME),
    toolDeltas(argsDelta(1, '{"tz":"CET"}'), argsDelta(0, '{"city"')),
    toolDeltas(argsDelta(0, ':"Paris"')),
    { data: { id: 'c', choices: [{ index: 0, delta: { tool_calls: [argsDelta(0, '}')] }, finish_reason: 'tool_calls' }] } },
    { data: '[DONE]' },
  ],
};

/** Whether neutral events keep blocks apart: each block's events lie between its start and stop. */
function blocksApart(events: StreamEvent[]): boolean {
  let current: number | undefined;
  for (const event of events) {
    if (event.type === 'block_start') {
      if (current !== undefined) return false;
      current = event.index;
    } else if (event.type === 'text_delta' || event.type === 'tool_args_delta' || event.type === 'block_stop') {
      if (event.index !== current) return false;
      if (event.type === 'block_stop') current = undefined;
    }
  }
  return current === undefined;
}

function callStart(index: number, id: string, name: string): StreamEvent {
  return { type: 'block_start', index, block: { type: 'tool_call', id, name } };
}

function argsEvent(index: number, text: string): StreamEvent {
  return { type: 'tool_args_delta', index, json: text };
}

describe('parallel chat tool calls', () => {
  const cases = Object.keys(PARALLEL_UPSTREAMS).flatMap((name) => DIALECTS.map((to) => [name, to] as const));

  it.each(cases)('%s, chat → %s: both calls whole, in order, in a well-formed stream', (name, to) => {
    const upstream = PARALLEL_UPSTREAMS[name]!;
    const parser = CODECS.chat.createStreamParser(CTX);
    expect(blocksApart([...upstream.flatMap((e) => parser.push(e)), ...parser.end()])).toBe(true);
    const { out } = run('chat', to, upstream);
    expect(shape(to, out).join(' ')).toMatch(ORDER[to]);
    // Gemini carries no call ids: its parser makes them up.
    const ids = to === 'gemini' ? ['call_gen_1_0', 'call_gen_1_1'] : ['call_a', 'call_b'];
    expect(collect(to, out)).toMatchObject({
      calls: [
        { id: ids[0], name: 'get_weather', args: '{"city":"Paris"}' },
        { id: ids[1], name: 'get_time', args: '{"tz":"CET"}' },
      ],
      stop: 'tool_use',
    });
  });

  it('streams calls sent one after another as they come', () => {
    const parser = CODECS.chat.createStreamParser(CTX);
    expect(PARALLEL_UPSTREAMS.sequential!.map((e) => parser.push(e))).toEqual([
      [{ type: 'start' }, callStart(0, 'call_a', 'get_weather')],
      [argsEvent(0, '{"city":')],
      [argsEvent(0, '"Paris"}')],
      [{ type: 'block_stop', index: 0 }, callStart(1, 'call_b', 'get_time')],
      [argsEvent(1, '{"tz":')],
      [argsEvent(1, '"CET"}')],
      [],
      [{ type: 'block_stop', index: 1 }, { type: 'finish', stopReason: 'tool_use' }],
    ]);
  });

  it('holds an interleaved call back until the call before it is complete', () => {
    const parser = CODECS.chat.createStreamParser(CTX);
    expect(PARALLEL_UPSTREAMS.interleaved!.map((e) => parser.push(e))).toEqual([
      [{ type: 'start' }, callStart(0, 'call_a', 'get_weather')],
      [argsEvent(0, '{"city":')],
      [],
      [argsEvent(0, '"Paris"}'), { type: 'block_stop', index: 0 }, callStart(1, 'call_b', 'get_time'), argsEvent(1, '{"tz":')],
      [argsEvent(1, '"CET"}')],
      [],
      [{ type: 'block_stop', index: 1 }, { type: 'finish', stopReason: 'tool_use' }],
    ]);
  });
});
