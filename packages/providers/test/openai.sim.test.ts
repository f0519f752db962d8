import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchProviderImage } from '../src/image-fetch.ts';
import type { ProviderAdapter } from '../src/types.ts';
import { events, jsonBody, providerFailure } from './support/expect-failure.ts';
import { settle, startSimulator, tinyPng } from './support/simulator.ts';
import type { RunningSimulator } from './support/simulator.ts';
import { collect } from './support/wire-server.ts';

let sim: RunningSimulator;
let openai: ProviderAdapter;

beforeAll(async () => {
  sim = await startSimulator();
  openai = sim.adapter('openai');
});
afterAll(async () => {
  await sim.close();
});

const chat = (content: string) => ({ model: 'gpt-sim-mini', messages: [{ role: 'user', content }] });
const responsesBody = (input: string) => ({ model: 'gpt-sim-mini', input });

describe('openai: models and text', () => {
  it('lists the served models', async () => {
    expect(await openai.listModels()).toEqual(expect.arrayContaining(['gpt-sim-mini', 'gpt-sim-image', 'sora-sim']));
  });

  it('answers chat completions as JSON with usage', async () => {
    const body = jsonBody(await openai.text('chat', chat('Hello there'), { stream: false }));
    expect(body).toMatchObject({ object: 'chat.completion', choices: [{ message: { role: 'assistant' } }] });
    expect(body['usage']).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });
  });

  it('streams chat completions with a usage chunk and [DONE]', async () => {
    const all = await collect(events(await openai.text('chat', chat('Hello [[sim:words=12]]'), { stream: true })));
    expect(all.at(-1)?.data).toBe('[DONE]');
    expect(all.some((e) => typeof e.data === 'object' && e.data !== null && 'usage' in e.data)).toBe(true);
  });

  it('answers and streams responses', async () => {
    const body = jsonBody(await openai.text('responses', responsesBody('Hi'), { stream: false }));
    expect(body).toMatchObject({ object: 'response', status: 'completed', output: expect.any(Array) });
    const all = await collect(events(await openai.text('responses', responsesBody('Hi'), { stream: true })));
    expect(all.at(-1)?.data).toMatchObject({ type: 'response.completed' });
  });

  it('counts tokens for responses bodies and for chat bodies alike', async () => {
    const fromResponses = await openai.countTokens!(
      'responses',
      { model: 'gpt-sim-mini', input: [{ role: 'user', content: 'How many tokens is this sentence?' }], stream: true, max_output_tokens: 5 },
    );
    const fromChat = await openai.countTokens!('chat', chat('How many tokens is this sentence?'));
    expect(fromResponses).toBeGreaterThan(0);
    expect(fromChat).toBe(fromResponses);
  });

  it('counts a chat body with tools, tool calls and tool results', async () => {
    const tokens = await openai.countTokens!('chat', {
      model: 'gpt-sim-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Weather in Hanoi?' }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Hanoi"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '31C, sunny' },
      ],
      tools: [{ type: 'function', function: { name: 'weather', description: 'Weather by city', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'weather' } },
    });
    expect(tokens).toBeGreaterThan(0);
  });
});

describe('openai: faults', () => {
  it.each([
    ['429', 'upstream_rate_limited'],
    ['500', 'upstream_error'],
    ['503', 'upstream_error'],
  ])('fault %s → %s, retryable', async (fault, code) => {
    const err = await providerFailure(openai.text('chat', chat(`x [[sim:fault=${fault}]]`), { stream: false }));
    expect(err).toMatchObject({ code, retryable: true, upstreamStatus: Number(fault) });
  });

  it('maps a hang to a retryable upstream_timeout, streamed or not', async () => {
    for (const stream of [false, true]) {
      const err = await providerFailure(openai.text('chat', chat('x [[sim:fault=timeout]]'), { stream, timeoutMs: 200 }));
      expect(err).toMatchObject({ code: 'upstream_timeout', retryable: true });
    }
  });

  it('maps a malformed answer to a retryable upstream_error', async () => {
    const err = await providerFailure(openai.text('chat', chat('x [[sim:fault=malformed]]'), { stream: false }));
    expect(err).toMatchObject({ code: 'upstream_error', retryable: true });
  });

  it.each(['stream_error', 'malformed'])('throws %s mid-stream from the iterator, not retryable', async (fault) => {
    for (const dialect of ['chat', 'responses'] as const) {
      const body = dialect === 'chat' ? chat(`x [[sim:fault=${fault}; words=20]]`) : responsesBody(`x [[sim:fault=${fault}; words=20]]`);
      const stream = events(await openai.text(dialect, body, { stream: true }));
      const err = await providerFailure(collect(stream));
      expect(err).toMatchObject({ code: 'upstream_error', retryable: false });
    }
  });

  it('passes an answer without usage through (billing decides)', async () => {
    const body = jsonBody(await openai.text('chat', chat('x [[sim:fault=no_usage]]'), { stream: false }));
    expect(body['usage']).toBeUndefined();
  });

  it('maps a 4xx to a non-retryable invalid_request', async () => {
    const err = await providerFailure(openai.text('chat', { model: 'gpt-sim-mini', messages: [] }, { stream: false }));
    expect(err).toMatchObject({ code: 'invalid_request', retryable: false, upstreamStatus: 400 });
  });

  it('maps refused credentials to a retryable upstream_error without the key', async () => {
    const wrong = sim.adapter('openai', { apiKey: 'sk-wrong-key-abcdef123456' });
    const err = await providerFailure(wrong.listModels());
    expect(err).toMatchObject({ code: 'upstream_error', retryable: true, upstreamStatus: 401 });
    expect(err.message).not.toContain('sk-wrong-key-abcdef123456');
  });
});

describe('openai: images', () => {
  it('generates base64 images in the requested format', async () => {
    const images = await openai.generateImages!({ model: 'gpt-sim-image', prompt: 'a cat', n: 2, size: '256x256', outputMimeType: 'image/jpeg' });
    expect(images).toHaveLength(2);
    expect(images[0]).toMatchObject({ mimeType: 'image/jpeg', b64: expect.any(String) });
    expect(Buffer.from(images[0]!.b64!, 'base64').subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
  });

  it('returns URLs as given, and fetchProviderImage inlines them from the provider host only', async () => {
    const images = await openai.generateImages!({ model: 'gpt-sim-url-image', prompt: 'a dog', n: 1 });
    expect(images[0]!.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/openai\/files\//);
    const fetched = await fetchProviderImage(images[0]!.url!, openai.imageHosts ?? [], { maxBytes: 1_000_000, timeoutMs: 2_000 });
    expect(fetched.mimeType).toBe('image/png');
    expect(Buffer.from(fetched.bytes).subarray(1, 4).toString()).toBe('PNG');
    await expect(fetchProviderImage(images[0]!.url!, ['example.com'], { maxBytes: 1_000_000, timeoutMs: 2_000 })).rejects.toThrow(/not on a provider host/);
  });

  it('edits an image sent as a multipart file', async () => {
    const images = await openai.editImage!({ model: 'gpt-sim-image', prompt: 'make it blue', n: 1, image: { bytes: tinyPng(), mimeType: 'image/png' } });
    expect(images).toEqual([{ b64: expect.any(String), mimeType: 'image/png' }]);
  });

  it('maps an image fault', async () => {
    const err = await providerFailure(openai.generateImages!({ model: 'gpt-sim-image', prompt: 'x [[sim:fault=503]]', n: 1 }));
    expect(err).toMatchObject({ code: 'upstream_error', retryable: true });
  });
});

describe('openai: Sora videos', () => {
  it('cancels a job upstream; cancelling one the provider no longer knows is not an error', async () => {
    const { providerJobId } = await openai.createVideo!({ model: 'sora-sim', prompt: 'waves', durationSeconds: 4, aspectRatio: '16:9' });
    await openai.cancelVideo!(providerJobId);
    expect((await openai.getVideo!(providerJobId)).failure?.reason).toBe('not_found');
    await expect(openai.cancelVideo!(providerJobId)).resolves.toBeUndefined();
  });

  it('creates, polls and downloads a video, with Range passed through', async () => {
    const { providerJobId } = await openai.createVideo!({ model: 'sora-sim', prompt: 'waves', durationSeconds: 4, aspectRatio: '9:16' });
    expect(['queued', 'running']).toContain((await openai.getVideo!(providerJobId)).state);
    const done = await settle(() => openai.getVideo!(providerJobId));
    expect(done).toEqual({ state: 'completed', actualDurationSeconds: 4 });

    const whole = await openai.downloadVideo!(providerJobId, done.contentRef, undefined);
    const bytes = Buffer.concat(await collect(whole.body));
    expect(whole.status).toBe(200);
    expect(whole.headers['content-type']).toMatch(/video\/mp4/);
    expect(bytes.subarray(4, 8).toString()).toBe('ftyp');

    const part = await openai.downloadVideo!(providerJobId, undefined, 'bytes=0-99');
    expect(part.status).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 0-99/${bytes.length}`);
    expect(Buffer.concat(await collect(part.body))).toEqual(bytes.subarray(0, 100));
  });

  it('sends a first frame as input_reference', async () => {
    const { providerJobId } = await openai.createVideo!({
      model: 'sora-sim',
      prompt: 'from this frame',
      durationSeconds: 8,
      aspectRatio: '16:9',
      image: { bytes: tinyPng(), mimeType: 'image/png' },
    });
    expect(await settle(() => openai.getVideo!(providerJobId))).toMatchObject({ state: 'completed' });
  });

  it.each([
    ['video_safety', 'safety'],
    ['video_failed', 'provider_failed'],
    ['video_lost', 'not_found'],
  ])('reports %s as failure reason %s', async (fault, reason) => {
    const { providerJobId } = await openai.createVideo!({ model: 'sora-sim', prompt: `x [[sim:fault=${fault}]]`, durationSeconds: 4, aspectRatio: '16:9' });
    expect(await settle(() => openai.getVideo!(providerJobId))).toMatchObject({ state: 'failed', failure: { reason } });
  });

  it('answers not_found for unknown jobs and refuses a last frame', async () => {
    expect(await openai.getVideo!('video_unknown')).toMatchObject({ state: 'failed', failure: { reason: 'not_found' } });
    await expect(openai.downloadVideo!('video_unknown', undefined, undefined)).rejects.toMatchObject({ code: 'not_found' });
    const frame = { bytes: tinyPng(), mimeType: 'image/png' };
    await expect(
      openai.createVideo!({ model: 'sora-sim', prompt: 'x', durationSeconds: 4, aspectRatio: '16:9', image: frame, lastFrame: frame }),
    ).rejects.toMatchObject({ code: 'capability_not_supported', retryable: false });
  });
});
