import Anthropic, { InternalServerError } from '@anthropic-ai/sdk';
import OpenAI, { APIError, RateLimitError } from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ANTHROPIC_AUTH,
  COMPAT_AUTH,
  getJson,
  GOOGLE_AUTH,
  type HttpResult,
  type J,
  list,
  OPENAI_AUTH,
  parseSse,
  postJson,
  type RunningSimulator,
  startSimulator,
} from './support.ts';

let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator();
  return () => sim.close();
});

type Call = (prompt: string, extra?: Record<string, unknown>, signal?: AbortSignal) => Promise<HttpResult>;

const calls: Record<'openai' | 'compat' | 'responses' | 'anthropic' | 'google', Call> = {
  openai: (prompt, extra, signal) =>
    postJson(`${sim.url}/openai/v1/chat/completions`, { model: 'gpt-sim-mini', messages: [{ role: 'user', content: prompt }], ...extra }, OPENAI_AUTH, signal),
  compat: (prompt, extra, signal) =>
    postJson(`${sim.url}/compat/v1/chat/completions`, { model: 'compat-sim-chat', messages: [{ role: 'user', content: prompt }], ...extra }, COMPAT_AUTH, signal),
  responses: (prompt, extra, signal) =>
    postJson(`${sim.url}/openai/v1/responses`, { model: 'gpt-sim-mini', input: prompt, ...extra }, OPENAI_AUTH, signal),
  anthropic: (prompt, extra, signal) =>
    postJson(
      `${sim.url}/anthropic/v1/messages`,
      { model: 'claude-sim-sonnet', max_tokens: 100, messages: [{ role: 'user', content: prompt }], ...extra },
      ANTHROPIC_AUTH,
      signal,
    ),
  google: (prompt, extra, signal) => {
    const stream = extra?.stream === true;
    const { stream: _ignored, ...rest } = extra ?? {};
    const url = `${sim.url}/google/v1beta/models/gemini-sim-flash:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`;
    return postJson(url, { contents: [{ role: 'user', parts: [{ text: prompt }] }], ...rest }, GOOGLE_AUTH, signal);
  },
};

describe('status faults', () => {
  it.each([
    ['openai', 429, { error: { type: 'requests', code: 'rate_limit_exceeded' } }],
    ['openai', 500, { error: { type: 'server_error' } }],
    ['openai', 503, { error: { type: 'server_error' } }],
    ['compat', 429, { error: { code: 'rate_limit_exceeded' } }],
    ['responses', 500, { error: { type: 'server_error' } }],
    ['anthropic', 429, { type: 'error', error: { type: 'rate_limit_error' } }],
    ['anthropic', 500, { type: 'error', error: { type: 'api_error' } }],
    ['anthropic', 503, { type: 'error', error: { type: 'overloaded_error' } }],
    ['anthropic', 529, { type: 'error', error: { type: 'overloaded_error' } }],
    ['google', 429, { error: { code: 429, status: 'RESOURCE_EXHAUSTED' } }],
    ['google', 500, { error: { code: 500, status: 'INTERNAL' } }],
    ['google', 503, { error: { code: 503, status: 'UNAVAILABLE' } }],
  ] as const)('%s answers [[sim:fault=%i]] in its own error shape', async (provider, status, expected) => {
    const res = await calls[provider](`hello [[sim:fault=${status}]]`);
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject(expected);
    expect(typeof JSON.parse(res.text).error.message).toBe('string');
    // Throttling and overload answers tell clients when to retry, as the providers do.
    expect(res.headers.get('retry-after')).toBe(status === 500 ? null : '1');
  });

  it('applies to token counting, images and video creation too', async () => {
    const count = await postJson(
      `${sim.url}/anthropic/v1/messages/count_tokens`,
      { model: 'claude-sim-sonnet', messages: [{ role: 'user', content: 'x [[sim:fault=429]]' }] },
      ANTHROPIC_AUTH,
    );
    expect(count.status).toBe(429);
    const image = await postJson(`${sim.url}/openai/v1/images/generations`, { model: 'gpt-sim-image', prompt: 'x [[sim:fault=503]]' }, OPENAI_AUTH);
    expect(image.status).toBe(503);
    const veo = await postJson(
      `${sim.url}/google/v1beta/models/veo-sim:predictLongRunning`,
      { instances: [{ prompt: 'x [[sim:fault=500]]' }] },
      GOOGLE_AUTH,
    );
    expect(veo.status).toBe(500);
  });

  it('is surfaced by the SDKs as their typed errors', async () => {
    const openai = new OpenAI({ apiKey: 'sim-openai-key', baseURL: `${sim.url}/openai/v1`, maxRetries: 0 });
    await expect(
      openai.chat.completions.create({ model: 'gpt-sim-mini', messages: [{ role: 'user', content: '[[sim:fault=429]]' }] }),
    ).rejects.toBeInstanceOf(RateLimitError);
    const anthropic = new Anthropic({ apiKey: 'sim-anthropic-key', baseURL: `${sim.url}/anthropic`, maxRetries: 0 });
    await expect(
      anthropic.messages.create({ model: 'claude-sim-sonnet', max_tokens: 5, messages: [{ role: 'user', content: '[[sim:fault=500]]' }] }),
    ).rejects.toBeInstanceOf(InternalServerError);
  });
});

describe('latency and timeout', () => {
  it('delays by [[sim:latency=N]]', async () => {
    const started = performance.now();
    const res = await calls.openai('slow [[sim:latency=300]]');
    expect(res.status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('hangs on [[sim:fault=timeout]] until the client gives up', async () => {
    const started = performance.now();
    await expect(calls.anthropic('hang [[sim:fault=timeout]]', {}, AbortSignal.timeout(400))).rejects.toThrow(/abort|timeout/i);
    expect(performance.now() - started).toBeGreaterThanOrEqual(390);
    expect((await calls.anthropic('still alive')).status).toBe(200);
  });

  it('answers 504 once the hang cap passes, and closing the server cancels a hang', async () => {
    const capped = await startSimulator({ timeoutFaultCapMs: 200 });
    try {
      const res = await postJson(
        `${capped.url}/google/v1beta/models/gemini-sim-flash:generateContent`,
        { contents: [{ parts: [{ text: '[[sim:fault=timeout]]' }] }] },
        GOOGLE_AUTH,
      );
      expect(res.status).toBe(504);
      expect(res.body?.error?.status).toBe('DEADLINE_EXCEEDED');
    } finally {
      await capped.close();
    }

    const other = await startSimulator();
    const hanging = postJson(`${other.url}/openai/v1/chat/completions`, { model: 'gpt-sim-mini', messages: [{ role: 'user', content: '[[sim:fault=timeout]]' }] }, OPENAI_AUTH);
    hanging.catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100));
    const started = performance.now();
    await other.close();
    expect(performance.now() - started).toBeLessThan(2000);
    await expect(hanging).rejects.toThrow(/fetch failed/);
  });
});

describe('no_usage', () => {
  it('omits usage in every provider shape', async () => {
    const openai = await calls.openai('x [[sim:fault=no_usage]]');
    expect(openai.status).toBe(200);
    expect(openai.body.usage).toBeUndefined();
    expect(openai.body?.choices?.[0]?.message?.content).toBeDefined();

    const stream = await calls.openai('x [[sim:fault=no_usage]]', { stream: true, stream_options: { include_usage: true } });
    const chunks = parseSse(stream.text).filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data) as J);
    expect(chunks.some((c) => c.usage !== undefined && c.usage !== null)).toBe(false);
    expect(chunks.some((c) => list(c.choices).length === 0)).toBe(false);

    const responses = await calls.responses('x [[sim:fault=no_usage]]');
    expect(responses.body.usage).toBeNull();
    const anthropic = await calls.anthropic('x [[sim:fault=no_usage]]');
    expect(anthropic.body.usage).toBeUndefined();
    const google = await calls.google('x [[sim:fault=no_usage]]');
    expect(google.body.usageMetadata).toBeUndefined();
  });
});

describe('stream_error', () => {
  it('OpenAI chat: some deltas, then an error chunk, no usage and no [DONE]', async () => {
    const res = await calls.openai('x [[sim:fault=stream_error]]', { stream: true, stream_options: { include_usage: true } });
    const events = parseSse(res.text);
    const last = JSON.parse(events.at(-1)!.data) as J;
    expect(last?.error?.type).toBe('server_error');
    expect(events.some((e) => e.data === '[DONE]')).toBe(false);
    const deltas = events.slice(0, -1).map((e) => JSON.parse(e.data) as J).filter((c) => typeof c?.choices?.[0]?.delta?.content === 'string');
    expect(deltas.length).toBeGreaterThanOrEqual(2);
    const client = new OpenAI({ apiKey: 'sim-openai-key', baseURL: `${sim.url}/openai/v1`, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'gpt-sim-mini',
      stream: true,
      messages: [{ role: 'user', content: '[[sim:fault=stream_error]]' }],
    });
    let received = 0;
    await expect(
      (async () => {
        for await (const chunk of stream) if (chunk.object === 'chat.completion.chunk') received++;
      })(),
    ).rejects.toBeInstanceOf(APIError);
    expect(received).toBeGreaterThan(1);
  });

  it('Anthropic: an `event: error` after some deltas, before message_delta', async () => {
    const res = await calls.anthropic('x [[sim:fault=stream_error]]', { stream: true });
    const events = parseSse(res.text);
    expect(events.at(-1)!.event).toBe('error');
    expect((JSON.parse(events.at(-1)!.data) as J)?.error?.type).toBe('overloaded_error');
    expect(events.filter((e) => e.event === 'content_block_delta').length).toBeGreaterThanOrEqual(2);
    expect(events.some((e) => e.event === 'message_delta')).toBe(false);
    const client = new Anthropic({ apiKey: 'sim-anthropic-key', baseURL: `${sim.url}/anthropic`, maxRetries: 0 });
    const stream = client.messages.stream({ model: 'claude-sim-sonnet', max_tokens: 50, messages: [{ role: 'user', content: '[[sim:fault=stream_error]]' }] });
    await expect(stream.finalMessage()).rejects.toThrow(/Overloaded/);
  });

  it('Responses API: an `error` event before response.completed', async () => {
    const res = await calls.responses('x [[sim:fault=stream_error]]', { stream: true });
    const events = parseSse(res.text);
    expect(events.at(-1)!.event).toBe('error');
    expect((JSON.parse(events.at(-1)!.data) as J).type).toBe('error');
    expect(events.filter((e) => e.event === 'response.output_text.delta').length).toBe(2);
    expect(events.some((e) => e.event === 'response.completed')).toBe(false);
  });

  it('Gemini: an error object after some chunks, never the usage chunk', async () => {
    const res = await calls.google('x [[sim:fault=stream_error]]', { stream: true });
    const chunks = parseSse(res.text).map((e) => JSON.parse(e.data) as J);
    expect(chunks.at(-1)?.error?.status).toBe('INTERNAL');
    expect(chunks.length).toBe(3);
    expect(chunks.some((c) => c.usageMetadata !== undefined)).toBe(false);
  });
});

describe('malformed', () => {
  it('answers 200 with a body that is not JSON, streamed or not', async () => {
    for (const provider of ['openai', 'anthropic', 'google', 'responses'] as const) {
      const res = await calls[provider]('x [[sim:fault=malformed]]');
      expect(res.status).toBe(200);
      expect(() => JSON.parse(res.text)).toThrow(/JSON/);
    }
    const stream = await calls.openai('x [[sim:fault=malformed]]', { stream: true });
    const events = parseSse(stream.text);
    expect(() => JSON.parse(events.at(-1)!.data)).toThrow(/JSON/);
  });
});

async function soraUntilDone(prompt: string): Promise<HttpResult> {
  const created = await postJson(`${sim.url}/openai/v1/videos`, { model: 'sora-sim', prompt }, OPENAI_AUTH);
  expect(created.status).toBe(200);
  for (;;) {
    const res = await getJson(`${sim.url}/openai/v1/videos/${String(created.body.id)}`, OPENAI_AUTH);
    if (res.status !== 200 || String(res.body.status) === 'completed' || String(res.body.status) === 'failed') return res;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function veoUntilDone(prompt: string): Promise<HttpResult> {
  const created = await postJson(`${sim.url}/google/v1beta/models/veo-sim:predictLongRunning`, { instances: [{ prompt }] }, GOOGLE_AUTH);
  expect(created.status).toBe(200);
  for (;;) {
    const res = await getJson(`${sim.url}/google/v1beta/${String(created.body.name)}`, GOOGLE_AUTH);
    if (res.status !== 200 || String(res.body.done) === 'true') return res;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('video faults', () => {
  it('video_failed', async () => {
    const sora = await soraUntilDone('x [[sim:fault=video_failed]]');
    expect(sora.body.status).toBe('failed');
    expect(typeof sora.body?.error?.code).toBe('string');
    const veo = await veoUntilDone('x [[sim:fault=video_failed]]');
    expect(veo.body?.error?.code).toBe(13);
    expect(veo.body.response).toBeUndefined();
  });

  it('video_safety', async () => {
    const sora = await soraUntilDone('x [[sim:fault=video_safety]]');
    expect(sora.body.status).toBe('failed');
    expect(sora.body?.error?.code).toBe('moderation_blocked');
    const veo = await veoUntilDone('x [[sim:fault=video_safety]]');
    const response = veo.body?.response?.generateVideoResponse;
    expect(response?.raiMediaFilteredCount).toBe(1);
    expect(list(response?.raiMediaFilteredReasons)).toHaveLength(1);
    expect(response?.generatedSamples).toBeUndefined();
  });

  it('video_lost: the job is unknown afterwards', async () => {
    const sora = await soraUntilDone('x [[sim:fault=video_lost]]');
    expect(sora.status).toBe(404);
    const veo = await veoUntilDone('x [[sim:fault=video_lost]]');
    expect(veo.status).toBe(404);
    expect(veo.body?.error?.status).toBe('NOT_FOUND');
  });
});
