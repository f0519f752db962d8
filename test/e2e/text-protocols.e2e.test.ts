import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { DEMO_MODELS } from '../../scripts/demo-models.ts';
import { anthropicClient, balanceOf, openaiClient, postDeclaredLength, waitForListing, seedDemoModels } from '../support/clients.ts';
import { noisePng } from '../support/images.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';
import { errorLine, eventSequence, foldRuns, sseEvents, stable } from '../support/wire.ts';

/** Prices of the demo text models (credits per million tokens). */
const PRICE: Record<string, number> = Object.fromEntries(DEMO_MODELS.map((m) => [m.id, Number(m.priceCreditPerUnit)]));
const TEXT_MODELS = ['gpt-sim-mini', 'claude-sim-sonnet', 'gemini-sim-flash', 'compat-sim-chat'];
const charge = (model: string, tokens: number) => Math.max(1, Math.ceil((tokens * PRICE[model]!) / 1_000_000));

const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe('text protocols through the whole system, with the official SDKs', () => {
  let system: RunningSystem;
  let account: { accountId: string; keyId: string; apiKey: string };

  beforeAll(async () => {
    // Fault tests here fail routes on purpose; cool-down has its own test (fallback suite).
    system = await startTestSystem({
      providerTimeouts: { textFirstByteMs: 2_000, textTotalMs: 5_000, listMs: 2_000 },
      // One account sends every request of this file, faster than the default 50 a second.
      serviceEnv: { text: { ROUTE_HEALTH: 'false' }, billing: { RATE_LIMIT_PER_SECOND: '1000' } },
    });
    await seedDemoModels(system);
    account = await fundedAccount(system, 10_000_000);
    await waitForListing(system, account.apiKey, TEXT_MODELS);
  }, 120_000);
  afterAll(() => system?.stop());

  it('chat completions: answer, usage, and the exact charge in `service`', async () => {
    const openai = openaiClient(system, account.apiKey);
    const before = await balanceOf(system, account.accountId);
    const res = await openai.chat.completions.create({
      model: 'gpt-sim-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Say hello.' },
      ],
    });
    expect(res.choices[0]?.message.content).toMatch(/\S/);
    const usage = res.usage!;
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    const service = (res as unknown as { service: { credit_charged: number; balance_after: number } }).service;
    expect(service.credit_charged).toBe(charge('gpt-sim-mini', usage.total_tokens));
    expect(service.balance_after).toBe(before - service.credit_charged);
    expect(await balanceOf(system, account.accountId)).toBe(service.balance_after);
  });

  it('chat completions stream: deltas, then a final chunk with usage and `service`, then [DONE]', async () => {
    const openai = openaiClient(system, account.apiKey);
    const stream = await openai.chat.completions.create({ model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'Count to five.' }], stream: true });
    let text = '';
    let last: Record<string, unknown> | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta?.content ?? '';
      last = chunk as unknown as Record<string, unknown>;
    }
    expect(chunks).toBeGreaterThan(2);
    expect(text).toMatch(/\S/);
    const usage = last!.usage as { total_tokens: number };
    expect(usage.total_tokens).toBeGreaterThan(0);
    expect((last!.service as { credit_charged: number }).credit_charged).toBe(charge('gpt-sim-mini', usage.total_tokens));
  });

  it('messages (Anthropic SDK): answer and stream from message_start to message_stop', async () => {
    const anthropic = anthropicClient(system, account.apiKey);
    const msg = await anthropic.messages.create({ model: 'claude-sim-sonnet', max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user', content: 'Hello?' }] });
    expect(msg.content[0]?.type).toBe('text');
    expect(msg.stop_reason).toMatch(/end_turn|max_tokens/);
    const total = msg.usage.input_tokens + msg.usage.output_tokens + (msg.usage.cache_creation_input_tokens ?? 0) + (msg.usage.cache_read_input_tokens ?? 0);
    expect((msg as unknown as { service: { credit_charged: number } }).service.credit_charged).toBe(charge('claude-sim-sonnet', total));

    const stream = anthropic.messages.stream({ model: 'claude-sim-sonnet', max_tokens: 64, messages: [{ role: 'user', content: 'Stream please.' }] });
    const types: string[] = [];
    stream.on('streamEvent', (e) => types.push(e.type));
    const final = await stream.finalMessage();
    // The events the SDK saw, in order (a run of one kind as `name+`).
    expect(foldRuns(types).join(' ')).toMatchInlineSnapshot(`"message_start content_block_start content_block_delta+ content_block_stop message_delta message_stop"`);
    expect(final.content.map((b) => (b.type === 'text' ? b.text : '')).join('')).toMatch(/\S/);
  });

  it('responses: answer and stream from response.created to response.completed', async () => {
    const openai = openaiClient(system, account.apiKey);
    const res = await openai.responses.create({ model: 'gpt-sim-mini', input: 'Hello there', instructions: 'Be brief.' });
    expect(res.status).toBe('completed');
    expect(res.output_text).toMatch(/\S/);
    expect((res as unknown as { service: { credit_charged: number } }).service.credit_charged).toBe(charge('gpt-sim-mini', res.usage!.total_tokens));

    const stream = await openai.responses.create({ model: 'gpt-sim-mini', input: 'Stream it', stream: true });
    const types: string[] = [];
    let completed: Record<string, unknown> | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.completed') completed = event.response as unknown as Record<string, unknown>;
    }
    // The events the SDK saw, in order (a run of one kind as `name+`).
    expect(foldRuns(types).join(' ')).toMatchInlineSnapshot(`"response.created response.in_progress response.output_item.added response.content_part.added response.output_text.delta+ response.output_text.done response.content_part.done response.output_item.done response.completed"`);
    expect(completed!.service).toMatchObject({ credit_charged: expect.any(Number), balance_after: expect.any(Number) });
  });

  /** A request sent as plain HTTP, answered 200 with JSON: the body, the values that vary masked. */
  async function answer(path: string, body: Record<string, unknown>) {
    const res = await fetch(`${system.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect([res.status, res.headers.get('content-type')]).toEqual([200, 'application/json; charset=utf-8']);
    // The generated text is the simulator's; everything around it is the protocol's.
    return stable((await res.json()) as Record<string, unknown>, { content: '<text>', text: '<text>', reply: '<text>', balanceAfter: '<balance>' });
  }

  it('the wire of each protocol’s answer, not streamed: every field, usage and `service`', async () => {
    expect(await answer('/chat/completions', { model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'Say hello.' }] })).toMatchInlineSnapshot(`
      {
        "choices": [
          {
            "finish_reason": "stop",
            "index": 0,
            "logprobs": null,
            "message": {
              "annotations": [],
              "content": "<text>",
              "refusal": null,
              "role": "assistant",
            },
          },
        ],
        "created": "<unix seconds>",
        "id": "<id>",
        "model": "gpt-sim-mini",
        "object": "chat.completion",
        "service": {
          "balance_after": "<balance>",
          "credit_charged": 1,
        },
        "service_tier": "default",
        "system_fingerprint": "fp_sim",
        "usage": {
          "completion_tokens": 28,
          "completion_tokens_details": {
            "accepted_prediction_tokens": 0,
            "audio_tokens": 0,
            "reasoning_tokens": 0,
            "rejected_prediction_tokens": 0,
          },
          "prompt_tokens": 14,
          "prompt_tokens_details": {
            "audio_tokens": 0,
            "cached_tokens": 0,
          },
          "total_tokens": 42,
        },
      }
    `);
    expect(await answer('/messages', { model: 'claude-sim-sonnet', max_tokens: 64, messages: [{ role: 'user', content: 'Hello?' }] })).toMatchInlineSnapshot(`
      {
        "content": [
          {
            "text": "<text>",
            "type": "text",
          },
        ],
        "id": "<id>",
        "model": "claude-sim-sonnet",
        "role": "assistant",
        "service": {
          "balance_after": "<balance>",
          "credit_charged": 3,
        },
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "type": "message",
        "usage": {
          "cache_creation": {
            "ephemeral_1h_input_tokens": 0,
            "ephemeral_5m_input_tokens": 0,
          },
          "cache_creation_input_tokens": 0,
          "cache_read_input_tokens": 0,
          "input_tokens": 13,
          "output_tokens": 27,
          "service_tier": "standard",
        },
      }
    `);
    expect(await answer('/responses', { model: 'gpt-sim-mini', input: 'Hello there' })).toMatchInlineSnapshot(`
      {
        "background": false,
        "created_at": "<unix seconds>",
        "error": null,
        "id": "<id>",
        "incomplete_details": null,
        "instructions": null,
        "max_output_tokens": 4096,
        "max_tool_calls": null,
        "metadata": {},
        "model": "gpt-sim-mini",
        "object": "response",
        "output": [
          {
            "content": [
              {
                "annotations": [],
                "logprobs": [],
                "text": "<text>",
                "type": "output_text",
              },
            ],
            "id": "<id>",
            "role": "assistant",
            "status": "completed",
            "type": "message",
          },
        ],
        "parallel_tool_calls": true,
        "previous_response_id": null,
        "reasoning": {
          "effort": null,
          "summary": null,
        },
        "service": {
          "balance_after": "<balance>",
          "credit_charged": 1,
        },
        "service_tier": "default",
        "status": "completed",
        "store": false,
        "temperature": 1,
        "text": {
          "format": {
            "type": "text",
          },
          "verbosity": "medium",
        },
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1,
        "truncation": "disabled",
        "usage": {
          "input_tokens": 6,
          "input_tokens_details": {
            "cached_tokens": 0,
          },
          "output_tokens": 28,
          "output_tokens_details": {
            "reasoning_tokens": 0,
          },
          "total_tokens": 34,
        },
        "user": null,
      }
    `);
    expect(await answer('/chat', { model: 'claude-sim-sonnet', messages: [{ role: 'user', content: 'Hi' }] })).toMatchInlineSnapshot(`
      {
        "balanceAfter": "<balance>",
        "creditCharged": 3,
        "reply": "<text>",
        "tokensUsed": 38,
      }
    `);
  });

  /** A streamed request sent as plain HTTP: the status, the content type and the events as sent. */
  async function streamOverHttp(path: string, body: Record<string, unknown>) {
    const res = await fetch(`${system.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true }),
    });
    return { status: res.status, type: res.headers.get('content-type'), events: sseEvents(await res.text()) };
  }

  it('the wire of each protocol’s stream: its events in order, and the last ones with usage and `service`', async () => {
    // Each request also sent whole (its wire is snapshotted above): a stream carries the same usage,
    // charge and final object, so only what is the stream's own is snapshotted here.
    const chatRequest = { model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'Say hello.' }] };
    const whole = await answer('/chat/completions', chatRequest);
    const chat = await streamOverHttp('/chat/completions', chatRequest);
    expect([chat.status, chat.type]).toEqual([200, 'text/event-stream; charset=utf-8']);
    expect(eventSequence(chat.events)).toMatchInlineSnapshot(`
      [
        "chunk (content, refusal, role)",
        "chunk (content)+",
        "chunk (finish_reason stop)",
        "chunk (no choices)",
        "[DONE]",
      ]
    `);
    // The usage chunk, extended with `service`, then [DONE].
    const [usageChunk, done] = stable(chat.events.slice(-2)) as [{ data: Record<string, unknown> }, unknown];
    expect([usageChunk.data.usage, usageChunk.data.service]).toEqual([whole.usage, whole.service]);
    expect([{ data: { ...usageChunk.data, usage: '<as not streamed>' } }, done]).toMatchInlineSnapshot(`
      [
        {
          "data": {
            "choices": [],
            "created": "<unix seconds>",
            "id": "<id>",
            "model": "gpt-sim-mini",
            "object": "chat.completion.chunk",
            "service": {
              "balance_after": "<balance>",
              "credit_charged": 1,
            },
            "service_tier": "default",
            "system_fingerprint": "fp_sim",
            "usage": "<as not streamed>",
          },
        },
        {
          "data": "[DONE]",
        },
      ]
    `);

    const messagesRequest = { model: 'claude-sim-sonnet', max_tokens: 64, messages: [{ role: 'user', content: 'Hello?' }] };
    const wholeMessage = await answer('/messages', messagesRequest);
    const messages = await streamOverHttp('/messages', messagesRequest);
    expect([messages.status, messages.type]).toEqual([200, 'text/event-stream; charset=utf-8']);
    expect(eventSequence(messages.events)).toMatchInlineSnapshot(`
      [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta+",
        "content_block_stop",
        "message_delta",
        "message_stop",
      ]
    `);
    // message_start: the message without content or stop, its usage so far (one output token).
    const start = stable(messages.events[0]) as { data: { message: Record<string, unknown> } };
    expect(start.data.message.usage).toEqual({ ...(wholeMessage.usage as object), output_tokens: 1 });
    expect({ ...start, data: { ...start.data, message: { ...start.data.message, usage: '<as not streamed, output_tokens 1>' } } }).toMatchInlineSnapshot(`
      {
        "data": {
          "message": {
            "content": [],
            "id": "<id>",
            "model": "claude-sim-sonnet",
            "role": "assistant",
            "stop_reason": null,
            "stop_sequence": null,
            "type": "message",
            "usage": "<as not streamed, output_tokens 1>",
          },
          "type": "message_start",
        },
        "event": "message_start",
      }
    `);
    const [delta, stop] = stable(messages.events.slice(-2)) as [{ data: Record<string, unknown> }, unknown];
    expect(delta.data.service).toEqual(wholeMessage.service);
    expect([delta, stop]).toMatchInlineSnapshot(`
      [
        {
          "data": {
            "delta": {
              "stop_reason": "end_turn",
              "stop_sequence": null,
            },
            "service": {
              "balance_after": "<balance>",
              "credit_charged": 3,
            },
            "type": "message_delta",
            "usage": {
              "cache_creation_input_tokens": 0,
              "cache_read_input_tokens": 0,
              "input_tokens": 13,
              "output_tokens": 27,
            },
          },
          "event": "message_delta",
        },
        {
          "data": {
            "type": "message_stop",
          },
          "event": "message_stop",
        },
      ]
    `);

    const responsesRequest = { model: 'gpt-sim-mini', input: 'Hello there' };
    const wholeResponse = await answer('/responses', responsesRequest);
    const responses = await streamOverHttp('/responses', responsesRequest);
    expect([responses.status, responses.type]).toEqual([200, 'text/event-stream; charset=utf-8']);
    expect(eventSequence(responses.events)).toMatchInlineSnapshot(`
      [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta+",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
      ]
    `);
    expect(responses.events.map((e) => (e.data as { sequence_number: number }).sequence_number)).toEqual(responses.events.map((_, i) => i));
    const completed = stable(responses.events.at(-1), { text: '<text>' }) as { data: { response: unknown; sequence_number: number } };
    expect(completed.data.response).toEqual(wholeResponse);
    expect({ ...completed, data: { ...completed.data, response: '<as not streamed>', sequence_number: '<last>' } }).toMatchInlineSnapshot(`
      {
        "data": {
          "response": "<as not streamed>",
          "sequence_number": "<last>",
          "type": "response.completed",
        },
        "event": "response.completed",
      }
    `);
  });

  it('POST /chat answers the original contract only', async () => {
    const res = await fetch(`${system.baseUrl}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-sim-sonnet', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['balanceAfter', 'creditCharged', 'reply', 'tokensUsed']);
    expect(body.creditCharged).toBe(charge('claude-sim-sonnet', body.tokensUsed as number));
    expect(body.balanceAfter).toBe(await balanceOf(system, account.accountId));
  });

  it("the Anthropic SDK's message thread on an OpenAI model: the server-held thread is refused as the protocol says, so the SDK can send the whole conversation", async () => {
    const anthropic = anthropicClient(system, account.apiKey);
    const lastOpenAiRequest = async () =>
      ((await (await fetch(`${system.simulatorUrl}/_sim/requests?limit=1&provider=openai`)).json()) as { requests: Array<{ body: { messages: Array<{ content: unknown }> } }> }).requests.at(-1)!.body;
    // Told to continue without a thread when the server has none, the second turn carries the first.
    const thread = anthropic.beta.messages.thread({ model: 'gpt-sim-mini', max_tokens: 64, unsupportedRequestBehavior: 'continue_unthreaded' });
    await thread.send({ role: 'user', content: 'My name is Lan.' });
    const second = await thread.send({ role: 'user', content: 'What is my name?' });
    expect(second.content[0]?.type).toBe('text');
    expect(JSON.stringify((await lastOpenAiRequest()).messages)).toContain('My name is Lan.');
    // Left to its default, the thread stops at once with the refusal a server without threads gives.
    const strict = anthropic.beta.messages.thread({ model: 'gpt-sim-mini', max_tokens: 64 });
    const err = await strict.send({ role: 'user', content: 'My name is Lan.' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 400, error: { error: { code: 'invalid_request', details: { error_code: 'thread_unsupported_request' } } } });
  });

  it('a body the model cannot be sent is 400 before the wallet is consulted (order of checks): even with 1 credit, and nothing is held', async () => {
    const poor = await fundedAccount(system, 1);
    const cases = [
      // State kept by OpenAI's servers, to an Anthropic model.
      ['/responses', { model: 'claude-sim-sonnet', input: 'hi', previous_response_id: 'resp_123' }],
      // A document block, to an OpenAI model.
      ['/messages', { model: 'gpt-sim-mini', max_tokens: 16, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }] }] }],
    ] as const;
    for (const [path, body] of cases) {
      const res = await post(path, body, poor.apiKey);
      expect([path, res.status, res.body.error.code]).toEqual([path, 400, 'invalid_request']);
    }
    // Natively too: provider-side state is refused whatever the route (pass-through policy).
    const native = await post('/responses', { model: 'gpt-sim-mini', input: 'hi', previous_response_id: 'resp_123' }, poor.apiKey);
    expect([native.status, native.body.error.code]).toEqual([400, 'invalid_request']);
    // A new field the gateway does not know is the provider's to judge: it goes on to the hold (402 here).
    const unknown = await post('/responses', { model: 'gpt-sim-mini', input: 'hi', some_new_field: { a: 1 } }, poor.apiKey);
    expect([unknown.status, unknown.body.error.code]).toEqual([402, 'insufficient_balance']);
    expect(await balanceOf(system, poor.accountId)).toBe(1);
  });

  it('count_tokens uses the model’s counter, counts tools, and is free', async () => {
    const anthropic = anthropicClient(system, account.apiKey);
    const before = await balanceOf(system, account.accountId);
    const messages = [{ role: 'user' as const, content: 'What is the weather in Hanoi?' }];
    const plain = await anthropic.messages.countTokens({ model: 'claude-sim-sonnet', messages });
    const withTools = await anthropic.messages.countTokens({
      model: 'claude-sim-sonnet',
      messages,
      tools: [{ name: WEATHER_TOOL.name, description: WEATHER_TOOL.description, input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
    });
    expect(plain.input_tokens).toBeGreaterThan(0);
    expect(withTools.input_tokens).toBeGreaterThan(plain.input_tokens);
    // OpenAI's counter serves a model of another provider through the messages protocol too.
    expect((await anthropic.messages.countTokens({ model: 'gpt-sim-mini', messages })).input_tokens).toBeGreaterThan(0);
    expect(await balanceOf(system, account.accountId)).toBe(before);
    // A provider without a counter does not offer the capability.
    await expect(anthropic.messages.countTokens({ model: 'compat-sim-chat', messages })).rejects.toMatchObject({ status: 400 });
  });

  it('cache_control passes through, and cache tokens are billed at the standard rate', async () => {
    const anthropic = anthropicClient(system, account.apiKey);
    const longSystem = 'You are a meticulous assistant. '.repeat(80);
    const msg = await anthropic.messages.create({
      model: 'claude-sim-sonnet',
      max_tokens: 32,
      system: [{ type: 'text', text: longSystem, cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'Hi' }],
    });
    const u = msg.usage;
    expect((u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0)).toBeGreaterThan(0);
    const billable = u.input_tokens + u.output_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
    expect((msg as unknown as { service: { credit_charged: number } }).service.credit_charged).toBe(charge('claude-sim-sonnet', billable));
    // Forwarded unchanged to the provider that understands it.
    const seen = (await (await fetch(`${system.simulatorUrl}/_sim/requests?provider=anthropic&limit=1`)).json()) as { requests: Array<{ body: { system: unknown } }> };
    expect(seen.requests.at(-1)!.body.system).toEqual([{ type: 'text', text: longSystem, cache_control: { type: 'ephemeral' } }]);
  });

  it('images in content, on chat completions and on messages, to providers of other dialects too', async () => {
    // A 1x1 PNG.
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const openai = openaiClient(system, account.apiKey);
    for (const model of ['gpt-sim-mini', 'claude-sim-sonnet', 'gemini-sim-flash']) {
      const res = await openai.chat.completions.create({
        model,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }] }],
      });
      expect(res.choices[0]!.message.content).toMatch(/\S/);
    }
    const anthropic = anthropicClient(system, account.apiKey);
    const msg = await anthropic.messages.create({
      model: 'gpt-sim-mini',
      max_tokens: 32,
      messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } }, { type: 'text', text: 'Describe it.' }] }],
    });
    expect(msg.content[0]?.type).toBe('text');
    // The OpenAI provider received the image in its own dialect.
    const seen = (await (await fetch(`${system.simulatorUrl}/_sim/requests?provider=openai&limit=1`)).json()) as { requests: Array<{ body: unknown }> };
    expect(JSON.stringify(seen.requests.at(-1)!.body)).toContain(`data:image/png;base64,${png}`);
  });

  it('fields the OpenAI SDK types as nullable may be null, meaning not set, and no null reaches a provider', async () => {
    const openai = openaiClient(system, account.apiKey);
    const nulls = { instructions: null, max_output_tokens: null, temperature: null, top_p: null, stream: null };
    const res = await openai.responses.create({ model: 'gpt-sim-mini', input: 'Hello', ...nulls });
    expect(res.status).toBe('completed');
    const lastBody = async (provider: string) =>
      ((await (await fetch(`${system.simulatorUrl}/_sim/requests?provider=${provider}&limit=1`)).json()) as { requests: Array<{ body: Record<string, unknown> }> }).requests.at(-1)!.body;
    // Not set, so the model's output cap is sent, as for a request that names none.
    expect(await lastBody('openai')).toMatchObject({ max_output_tokens: 4096, stream: false });
    // A compatible server reads only max_tokens: a null there would let it write past the hold.
    const chat = await openai.chat.completions.create({ model: 'compat-sim-chat', messages: [{ role: 'user', content: 'Hi' }], max_tokens: null, max_completion_tokens: null, temperature: null, stop: null, n: null });
    expect(chat.choices[0]!.message.content).toMatch(/\S/);
    const sent = await lastBody('compat');
    expect(sent.max_tokens).toBe(4096);
    expect(Object.values(sent)).not.toContain(null);
  });

  it("the Anthropic SDK's betas reach an Anthropic provider with the request (create, stream, count_tokens), and no other", async () => {
    const anthropic = anthropicClient(system, account.apiKey);
    const lastHeaders = async (provider: string) =>
      ((await (await fetch(`${system.simulatorUrl}/_sim/requests?provider=${provider}&limit=1`)).json()) as { requests: Array<{ path: string; headers: Record<string, string> }> }).requests.at(-1)!;
    const betas = ['context-management-2025-06-27', 'token-efficient-tools-2025-02-19'];
    const request = { model: 'claude-sim-sonnet', max_tokens: 32, betas, messages: [{ role: 'user' as const, content: 'hi' }] };
    await anthropic.beta.messages.create(request);
    expect((await lastHeaders('anthropic')).headers['anthropic-beta']).toBe(betas.join(','));
    await anthropic.beta.messages.stream(request).finalMessage();
    expect((await lastHeaders('anthropic')).headers['anthropic-beta']).toBe(betas.join(','));
    await anthropic.beta.messages.countTokens({ model: 'claude-sim-sonnet', betas, messages: request.messages });
    const counted = await lastHeaders('anthropic');
    expect(counted.path).toBe('/anthropic/v1/messages/count_tokens');
    expect(counted.headers['anthropic-beta']).toBe(`${betas.join(',')},token-counting-2024-11-01`); // the SDK adds its own
    // Translated for another provider, the betas mean nothing there and are not sent.
    await anthropic.beta.messages.create({ ...request, model: 'gpt-sim-mini' });
    expect((await lastHeaders('openai')).headers).not.toHaveProperty('anthropic-beta');
    // Headers are bounded like bodies: something that is not a list of names is refused.
    const bad = await fetch(`${system.baseUrl}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': 'application/json', 'anthropic-beta': 'a;b=c' },
      body: JSON.stringify({ model: 'claude-sim-sonnet', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect([bad.status, ((await bad.json()) as { error: { code: string } }).error.code]).toEqual([400, 'invalid_request']);
  });

  it('takes a text body over 1 MiB (a 3 MB image in content), and refuses one over 32 MiB from its length', async () => {
    const png = noisePng(2000, 1200).toString('base64');
    expect(png.length).toBeGreaterThan(3_000_000);
    const msg = await anthropicClient(system, account.apiKey).messages.create({
      model: 'claude-sim-sonnet',
      max_tokens: 32,
      messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } }, { type: 'text', text: 'Describe it.' }] }],
    });
    expect(msg.content[0]?.type).toBe('text');
    // A large body is also bounded in what it parses into: two million empty objects would take
    // ~150 MB of heap from 6 MB of JSON (in arrays of 1,000: no array past its own bound of 50,000).
    const objects = await post('/chat/completions', { model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'hi' }], metadata: Array.from({ length: 2_000 }, () => Array.from({ length: 1_000 }, () => ({}))) });
    expect(objects.status).toBe(400);
    expect(objects.body.error).toEqual({ code: 'invalid_request', message: 'The request body holds more than 100000 JSON objects and arrays, more than any valid request.' });
    // And in how deep it nests, at any size: 20,000 levels (80 KB) would overflow the stack of
    // every recursive walk of the request, answered 502.
    const deep = `{"model":"claude-sim-sonnet","max_tokens":4,"messages":[{"role":"user","content":"hi"}],"metadata":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
    for (const path of ['/messages', '/messages/count_tokens', '/responses', '/chat/completions']) {
      const nested = await fetch(`${system.baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': 'application/json' }, body: deep });
      const { error } = (await nested.json()) as { error: unknown };
      expect({ path, status: nested.status, error }).toEqual({ path, status: 400, error: { code: 'invalid_request', message: 'The request body nests JSON deeper than 256 levels, more than any valid request.' } });
    }
    const refused = await postDeclaredLength(`${system.baseUrl}/chat/completions`, account.apiKey, 32 * 1024 * 1024 + 1, '{"model":');
    expect(refused.status).toBe(400);
    expect((JSON.parse(refused.body) as { error: unknown }).error).toEqual({
      code: 'invalid_request',
      message: 'The request body is larger than 33554432 bytes, more than any valid request.',
    });
  });

  it('the messages protocol sends `request-id` on every answer, also when auth or the body fails before the handler', async () => {
    for (const path of ['/messages', '/messages/count_tokens']) {
      const url = `${system.baseUrl}${path}`;
      const noKey = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      const badJson = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': 'application/json' }, body: '{"model":' });
      expect([noKey.status, badJson.status]).toEqual([401, 400]);
      for (const res of [noKey, badJson]) {
        expect(res.headers.get('request-id')).toMatch(/^.{8,}$/);
        expect(res.headers.get('request-id')).toBe(res.headers.get('x-request-id'));
      }
    }
    // The SDK shows it on its typed error.
    const wrongKey = `${account.apiKey.slice(0, -1)}${account.apiKey.endsWith('a') ? 'b' : 'a'}`;
    const err: unknown = await anthropicClient(system, wrongKey)
      .messages.create({ model: 'claude-sim-sonnet', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 401, requestID: expect.stringMatching(/^.{8,}$/) });
  });

  it('tools round trip on chat completions and on messages', async () => {
    const openai = openaiClient(system, account.apiKey);
    const first = await openai.chat.completions.create({
      model: 'gpt-sim-mini',
      messages: [{ role: 'user', content: 'What is the weather in Hanoi?' }],
      tools: [{ type: 'function', function: WEATHER_TOOL }],
    });
    const call = first.choices[0]!.message.tool_calls?.[0];
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    expect(call?.type === 'function' && call.function.name).toBe('get_weather');
    const second = await openai.chat.completions.create({
      model: 'gpt-sim-mini',
      messages: [
        { role: 'user', content: 'What is the weather in Hanoi?' },
        first.choices[0]!.message,
        { role: 'tool', tool_call_id: call!.id, content: '31°C and sunny' },
      ],
      tools: [{ type: 'function', function: WEATHER_TOOL }],
    });
    expect(second.choices[0]!.message.content).toMatch(/\S/);
    // Streamed from another provider, a tool-call answer reads as the complete one: no text, content null.
    for (const model of ['claude-sim-sonnet', 'gemini-sim-flash']) {
      const streamed = await openai.chat.completions
        .stream({ model, messages: [{ role: 'user', content: 'What is the weather in Hanoi?' }], tools: [{ type: 'function', function: WEATHER_TOOL }] })
        .finalChatCompletion();
      expect(streamed.choices[0]!.message).toMatchObject({ content: null, tool_calls: [{ function: { name: 'get_weather' } }] });
    }

    const anthropic = anthropicClient(system, account.apiKey);
    const tools = [{ name: WEATHER_TOOL.name, description: WEATHER_TOOL.description, input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } }];
    const msg = await anthropic.messages.create({ model: 'gemini-sim-flash', max_tokens: 128, tools, messages: [{ role: 'user', content: 'What is the weather in Hanoi?' }] });
    expect(msg.stop_reason).toBe('tool_use');
    const toolUse = msg.content.find((b) => b.type === 'tool_use');
    expect(toolUse?.type === 'tool_use' && toolUse.name).toBe('get_weather');
    const reply = await anthropic.messages.create({
      model: 'gemini-sim-flash',
      max_tokens: 128,
      tools,
      messages: [
        { role: 'user', content: 'What is the weather in Hanoi?' },
        { role: 'assistant', content: msg.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse!.type === 'tool_use' ? toolUse!.id : '', content: '31°C' }] },
      ],
    });
    expect(reply.stop_reason).toBe('end_turn');
  });

  describe.each(TEXT_MODELS)('every protocol on %s', (model) => {
    it('chat completions', async () => {
      const res = await openaiClient(system, account.apiKey).chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }] });
      expect(res.model).toBe(model);
      expect(res.choices[0]!.message.content).toMatch(/\S/);
      expect((res as unknown as { service: { credit_charged: number } }).service.credit_charged).toBe(charge(model, res.usage!.total_tokens));
    });

    it('chat completions, streamed', async () => {
      let text = '';
      let usage: { total_tokens: number } | undefined;
      const stream = await openaiClient(system, account.apiKey).chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], stream: true });
      for await (const c of stream) {
        text += c.choices[0]?.delta?.content ?? '';
        if (c.usage) usage = c.usage;
      }
      expect(text).toMatch(/\S/);
      expect(usage!.total_tokens).toBeGreaterThan(0);
    });

    it.each([false, true])('messages (stream %s)', async (stream) => {
      const anthropic = anthropicClient(system, account.apiKey);
      const msg = stream
        ? await anthropic.messages.stream({ model, max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] }).finalMessage()
        : await anthropic.messages.create({ model, max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] });
      expect(msg.model).toBe(model);
      expect(msg.content.map((b) => (b.type === 'text' ? b.text : '')).join('')).toMatch(/\S/);
      expect(msg.usage.output_tokens).toBeGreaterThan(0);
    });

    it('responses', async () => {
      const res = await openaiClient(system, account.apiKey).responses.create({ model, input: 'Hi' });
      expect(res.model).toBe(model);
      expect(res.output_text).toMatch(/\S/);
    });

    it('responses, streamed', async () => {
      let text = '';
      let total = 0;
      for await (const e of await openaiClient(system, account.apiKey).responses.create({ model, input: 'Hi', stream: true })) {
        if (e.type === 'response.output_text.delta') text += e.delta;
        if (e.type === 'response.completed') total = e.response.usage!.total_tokens;
      }
      expect(text).toMatch(/\S/);
      expect(total).toBeGreaterThan(0);
    });
  });

  it('an upstream 429, 500, malformed answer or timeout is answered in the error shape, with its retry headers, and charges nothing', async () => {
    const before = await balanceOf(system, account.accountId);
    const answers: Record<string, string> = {};
    for (const fault of ['429', '500', 'malformed', 'timeout']) {
      const res = await fetch(`${system.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-sim-sonnet', messages: [{ role: 'user', content: `hello [[sim:fault=${fault}]]` }] }),
      });
      answers[fault] = errorLine(res.status, res.headers, await res.json());
    }
    // The malformed answer is told apart by what was wrong with it (not JSON at all, or an event without JSON).
    expect(answers.malformed).toMatch(/^502 retry-after=null x-should-retry=null \{"error":\{"code":"upstream_error","message":"The upstream provider sent a malformed answer: [^"]+"\}\}$/);
    answers.malformed = answers.malformed!.replace(/malformed answer: [^"]+/, 'malformed answer: <what was wrong>');
    expect(answers).toMatchInlineSnapshot(`
      {
        "429": "429 retry-after=null x-should-retry=null {"error":{"code":"upstream_rate_limited","message":"The upstream provider is rate limiting requests"}}",
        "500": "502 retry-after=null x-should-retry=null {"error":{"code":"upstream_error","message":"The upstream provider failed (status 500)"}}",
        "malformed": "502 retry-after=null x-should-retry=null {"error":{"code":"upstream_error","message":"The upstream provider sent a malformed answer: <what was wrong>"}}",
        "timeout": "504 retry-after=null x-should-retry=null {"error":{"code":"upstream_timeout","message":"The upstream provider did not answer in time"}}",
      }
    `);
    expect(await balanceOf(system, account.accountId)).toBe(before);
  }, 40_000);

  it('a stream failing upstream before its usage ends with the protocol’s error event and charges nothing', async () => {
    const before = await balanceOf(system, account.accountId);
    const anthropic = anthropicClient(system, account.apiKey);
    const stream = anthropic.messages.stream({ model: 'claude-sim-sonnet', max_tokens: 64, messages: [{ role: 'user', content: 'go [[sim:fault=stream_error]]' }] });
    await expect(stream.finalMessage()).rejects.toBeDefined();
    const openai = openaiClient(system, account.apiKey);
    await expect(
      (async () => {
        for await (const _ of await openai.chat.completions.create({ model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'go [[sim:fault=stream_error]]' }], stream: true })) {
          // drain
        }
      })(),
    ).rejects.toBeDefined();
    expect(await balanceOf(system, account.accountId)).toBe(before);
  });

  it('a stream failing upstream ends, on the wire, in the protocol’s own error event', async () => {
    const before = await balanceOf(system, account.accountId);
    const chat = await streamOverHttp('/chat/completions', { model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'go [[sim:fault=stream_error]]' }] });
    expect(chat.status).toBe(200);
    expect(eventSequence(chat.events)).toMatchInlineSnapshot(`
      [
        "chunk (content, refusal, role)",
        "chunk (content)+",
        "error",
      ]
    `);
    expect(chat.events.at(-1)).toMatchInlineSnapshot(`
      {
        "data": {
          "error": {
            "code": "upstream_error",
            "message": "The upstream provider stream failed: The stream was interrupted by a simulated upstream error.",
            "type": "server_error",
          },
        },
      }
    `);
    const messages = await streamOverHttp('/messages', { model: 'claude-sim-sonnet', max_tokens: 64, messages: [{ role: 'user', content: 'go [[sim:fault=stream_error]]' }] });
    expect(messages.status).toBe(200);
    expect(eventSequence(messages.events)).toMatchInlineSnapshot(`
      [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta+",
        "error",
      ]
    `);
    expect(messages.events.at(-1)).toMatchInlineSnapshot(`
      {
        "data": {
          "error": {
            "code": "upstream_error",
            "message": "The upstream provider stream failed: Overloaded",
            "type": "api_error",
          },
          "type": "error",
        },
        "event": "error",
      }
    `);
    expect(await balanceOf(system, account.accountId)).toBe(before);
  });

  it('a responses stream failing upstream continues its numbering and fails the response it created', async () => {
    const wire: Record<string, unknown> = {};
    for (const model of ['gpt-sim-mini', 'claude-sim-sonnet']) {
      const { events } = await streamOverHttp('/responses', { model, input: 'go [[sim:fault=stream_error]]' });
      const data = events.map((e) => e.data as { type: string; sequence_number: number; response?: { id: string; model: string; status: string } });
      expect(data.map((e) => e.sequence_number)).toEqual(data.map((_, i) => i));
      const created = data[0]!.response!;
      expect(data.at(-1)!.response).toMatchObject({ id: created.id, model: created.model, status: 'failed' });
      wire[model] = { sequence: eventSequence(events), last: stable(events.slice(-2), { sequence_number: '<n>' }) };
    }
    expect(wire['gpt-sim-mini']).toMatchInlineSnapshot(`
      {
        "last": [
          {
            "data": {
              "code": "upstream_error",
              "message": "The upstream provider stream failed: The stream was interrupted by a simulated upstream error.",
              "param": null,
              "sequence_number": "<n>",
              "type": "error",
            },
            "event": "error",
          },
          {
            "data": {
              "response": {
                "created_at": "<unix seconds>",
                "error": {
                  "code": "upstream_error",
                  "message": "The upstream provider stream failed: The stream was interrupted by a simulated upstream error.",
                },
                "id": "<id>",
                "incomplete_details": null,
                "instructions": null,
                "max_output_tokens": 4096,
                "metadata": {},
                "model": "gpt-sim-mini",
                "object": "response",
                "output": [],
                "parallel_tool_calls": true,
                "status": "failed",
                "temperature": 1,
                "tool_choice": "auto",
                "tools": [],
                "top_p": 1,
                "usage": null,
              },
              "sequence_number": "<n>",
              "type": "response.failed",
            },
            "event": "response.failed",
          },
        ],
        "sequence": [
          "response.created",
          "response.in_progress",
          "response.output_item.added",
          "response.content_part.added",
          "response.output_text.delta+",
          "error",
          "response.failed",
        ],
      }
    `);
    // Translated from Anthropic's stream: the same events, but for the model, the upstream's words and
    // max_output_tokens (null in the response translated from Anthropic's stream).
    const translated = JSON.stringify(wire['claude-sim-sonnet'])
      .replaceAll('claude-sim-sonnet', 'gpt-sim-mini')
      .replaceAll('Overloaded', 'The stream was interrupted by a simulated upstream error.')
      .replace('"max_output_tokens":null', '"max_output_tokens":4096');
    expect(JSON.parse(translated)).toEqual(wire['gpt-sim-mini']);
  });

  /** The key's usage records once the gateway has settled its requests (it does so after a client left). */
  function settledUsage(keyId: string): Promise<Array<{ credits: number; endpoint: string }>> {
    return vi.waitFor(
      async () => {
        const { records } = (await admin(system, 'usage', '--key', keyId)) as { records: Array<{ credits: number; endpoint: string }> };
        expect(records).not.toHaveLength(0);
        return records;
      },
      { timeout: 10_000, interval: 100 },
    );
  }

  it('a client that leaves mid-stream is billed for the real usage of the whole stream', async () => {
    const mine = await fundedAccount(system, 1_000_000);
    const controller = new AbortController();
    const res = await fetch(`${system.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${mine.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-sim-mini', stream: true, messages: [{ role: 'user', content: 'A long story please [[sim:latency=50]]' }] }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    // The gateway drains the upstream stream and settles; the usage record shows the charge.
    const records = await settledUsage(mine.keyId);
    expect(records).toHaveLength(1);
    expect(records[0]!.credits).toBeGreaterThanOrEqual(1);
    expect(await balanceOf(system, mine.accountId)).toBe(1_000_000 - records[0]!.credits);
  });

  it('a client that leaves before the first event is billed too, and its hold is not left standing', async () => {
    // A small wallet: a hold left standing would refuse the next request with 402.
    const mine = await fundedAccount(system, 500);
    const controller = new AbortController();
    const started = fetch(`${system.baseUrl}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${mine.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-sim-sonnet', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'x [[sim:latency=1500]]' }] }),
      signal: controller.signal,
    });
    await new Promise((r) => setTimeout(r, 300));
    controller.abort();
    await expect(started).rejects.toMatchObject({ name: 'AbortError' });
    const records = await settledUsage(mine.keyId);
    expect(records).toHaveLength(1);
    expect(records[0]!.credits).toBeGreaterThanOrEqual(1);
    expect(await balanceOf(system, mine.accountId)).toBe(500 - records[0]!.credits);
    const next = await anthropicClient(system, mine.apiKey).messages.create({ model: 'claude-sim-sonnet', max_tokens: 64, messages: [{ role: 'user', content: 'and again' }] });
    expect(next.content[0]?.type).toBe('text');
  });

  it('a success without usage charges the minimum and blocks text on the key until an operator resolves it', async () => {
    const mine = await fundedAccount(system, 1_000);
    const openai = openaiClient(system, mine.apiKey);
    const res = await openai.chat.completions.create({ model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'x [[sim:fault=no_usage]]' }] });
    expect((res as unknown as { service: { credit_charged: number } }).service.credit_charged).toBe(1);
    await expect(openai.chat.completions.create({ model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'again' }] })).rejects.toMatchObject({
      status: 503,
      error: { code: 'api_key_quota_reconciliation_required' },
    });
    expect(((await admin(system, 'reconcile', 'list')) as { items: Array<{ key_id: string }> }).items.map((i) => i.key_id)).toContain(mine.keyId);
    await admin(system, 'reconcile', 'resolve', '--key', mine.keyId, '--note', 'checked');
    await expect(openai.chat.completions.create({ model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'again' }] })).resolves.toBeTruthy();
  });

  it('a request naming no output cap is sent the model’s maximum, so its answer stays within its hold and is charged exactly', async () => {
    // Without a cap sent upstream, this answer runs to ~32k tokens: past the hold, which assumes
    // the model's maximum output (4,096 for the demo models).
    const openai = openaiClient(system, account.apiKey);
    const long = 'write on [[sim:words=20000]]';
    const answers: Array<{ model: string; output: number; total: number; charged: number }> = [];
    for (const model of TEXT_MODELS) {
      const res = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: long }] });
      const charged = (res as unknown as { service: { credit_charged: number } }).service.credit_charged;
      answers.push({ model, output: res.usage!.completion_tokens, total: res.usage!.total_tokens, charged });
    }
    const res = await openai.responses.create({ model: 'gpt-sim-mini', input: long });
    const charged = (res as unknown as { service: { credit_charged: number } }).service.credit_charged;
    answers.push({ model: 'gpt-sim-mini', output: res.usage!.output_tokens, total: res.usage!.total_tokens, charged });
    expect(answers.map((a) => ({ model: a.model, withinCap: a.output <= 4_096, charged: a.charged }))).toEqual(
      answers.map((a) => ({ model: a.model, withinCap: true, charged: charge(a.model, a.total) })),
    );
  }, 30_000);

  it('keeps an exact balance chain across consecutive requests', async () => {
    const mine = await fundedAccount(system, 500_000);
    const openai = openaiClient(system, mine.apiKey);
    let expected = 500_000;
    for (const model of TEXT_MODELS) {
      const res = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: `chain ${model}` }] });
      const service = (res as unknown as { service: { credit_charged: number; balance_after: number } }).service;
      expected -= service.credit_charged;
      expect(service.balance_after).toBe(expected);
    }
    expect(await balanceOf(system, mine.accountId)).toBe(expected);
  });

  const post = (path: string, body: unknown, apiKey = account.apiKey) =>
    fetch(`${system.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as { error: { code: string; message: string } } }));

  it('refuses invalid bodies with invalid_request and names the problem', async () => {
    const refusals = {
      'messages without max_tokens': await post('/messages', { model: 'claude-sim-sonnet', messages: [{ role: 'user', content: 'x' }] }),
      'chat/completions, a bad role': await post('/chat/completions', { model: 'gpt-sim-mini', messages: [{ role: 'wizard', content: 'x' }] }),
      'responses without input': await post('/responses', { model: 'gpt-sim-mini' }),
      'chat, no messages': await post('/chat', { model: 'gpt-sim-mini' }),
      'an unknown model': await post('/chat/completions', { model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }),
      'an image model for text': await post('/chat/completions', { model: 'gpt-sim-image', messages: [{ role: 'user', content: 'x' }] }),
    };
    // One line a case: the status and the body as sent.
    expect(Object.fromEntries(Object.entries(refusals).map(([name, r]) => [name, `${r.status} ${JSON.stringify(r.body)}`]))).toMatchInlineSnapshot(`
      {
        "an image model for text": "400 {"error":{"code":"capability_not_supported","message":"The model gpt-sim-image cannot be used with /chat/completions."}}",
        "an unknown model": "400 {"error":{"code":"unknown_model","message":"The model \\"no-such-model\\" does not exist."}}",
        "chat, no messages": "400 {"error":{"code":"invalid_request","message":"Invalid request: messages is required."}}",
        "chat/completions, a bad role": "400 {"error":{"code":"invalid_request","message":"Invalid request: messages[0].role must be one of system, user, assistant, tool, developer."}}",
        "messages without max_tokens": "400 {"error":{"code":"invalid_request","message":"Invalid request: max_tokens is required."}}",
        "responses without input": "400 {"error":{"code":"invalid_request","message":"Invalid request: input is required."}}",
      }
    `);
  });
});
