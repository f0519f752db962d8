import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { countTokensBody } from '../src/google/count-tokens.ts';
import { aspectRatioOf } from '../src/google/images.ts';
import type { ProviderAdapter } from '../src/types.ts';
import { events, jsonBody, providerFailure } from './support/expect-failure.ts';
import { settle, startSimulator, tinyPng } from './support/simulator.ts';
import type { RunningSimulator } from './support/simulator.ts';
import { collect } from './support/wire-server.ts';

let sim: RunningSimulator;
let google: ProviderAdapter;

beforeAll(async () => {
  sim = await startSimulator();
  google = sim.adapter('google');
});
afterEach(async () => {
  await sim.control('DELETE', '/models/google');
});
afterAll(async () => {
  await sim.close();
});

const gemini = (text: string, extra: Record<string, unknown> = {}) => ({
  model: 'gemini-sim-flash',
  contents: [{ role: 'user', parts: [{ text }] }],
  ...extra,
});

describe('google: models and text', () => {
  it('lists models across pages without the models/ prefix', async () => {
    expect(await google.listModels()).toEqual(['gemini-sim-flash', 'gemini-sim-image', 'veo-sim']);
    const many = Array.from({ length: 1_002 }, (_, i) => `gemini-sim-${i}`);
    await sim.control('PUT', '/models/google', many);
    expect(await google.listModels()).toEqual(many);
  });

  it('generates content, and streams it over SSE', async () => {
    const body = jsonBody(await google.text('gemini', gemini('Hello'), { stream: false }));
    expect(body).toMatchObject({ candidates: [{ content: { role: 'model' } }], usageMetadata: expect.any(Object) });
    const all = await collect(events(await google.text('gemini', gemini('Hello [[sim:words=15]]'), { stream: true })));
    expect(all.length).toBeGreaterThan(1);
    expect(all.at(-1)?.data).toMatchObject({ candidates: [{ finishReason: 'STOP' }] });
  });

  it('counts tokens with bare contents, and wrapped when a system instruction is present', async () => {
    const bare = await google.countTokens!('gemini', gemini('Count these words please'));
    const wrapped = await google.countTokens!('gemini', gemini('Count these words please', { systemInstruction: { parts: [{ text: 'Be brief and precise.' }] } }));
    expect(bare).toBeGreaterThan(0);
    expect(wrapped).toBeGreaterThan(bare);
    expect(countTokensBody('gemini-x', gemini('x', { tools: [] }))).toEqual({
      generateContentRequest: { model: 'models/gemini-x', contents: gemini('x').contents, tools: [] },
    });
  });

  it.each([
    ['429', 'upstream_rate_limited', true],
    ['500', 'upstream_error', true],
    ['400', 'invalid_request', false],
  ] as const)('maps fault %s → %s', async (fault, code, retryable) => {
    const err = await providerFailure(google.text('gemini', gemini(`x [[sim:fault=${fault}]]`), { stream: false }));
    expect(err).toMatchObject({ code, retryable });
  });

  it('maps a hang and a malformed answer', async () => {
    expect(await providerFailure(google.text('gemini', gemini('x [[sim:fault=timeout]]'), { stream: false, timeoutMs: 200 }))).toMatchObject({
      code: 'upstream_timeout',
    });
    expect(await providerFailure(google.text('gemini', gemini('x [[sim:fault=malformed]]'), { stream: false }))).toMatchObject({
      code: 'upstream_error',
      retryable: true,
    });
  });

  it.each(['stream_error', 'malformed'])('throws a mid-stream %s from the iterator', async (fault) => {
    const stream = events(await google.text('gemini', gemini(`x [[sim:fault=${fault}; words=30]]`), { stream: true }));
    expect(await providerFailure(collect(stream))).toMatchObject({ code: 'upstream_error', retryable: false });
  });

  it('needs a model in the body', async () => {
    await expect(google.text('gemini', { contents: [] }, { stream: false })).rejects.toMatchObject({ code: 'invalid_request', retryable: false });
  });
});

describe('google: images', () => {
  it('generates an image as inline data', async () => {
    const images = await google.generateImages!({ model: 'gemini-sim-image', prompt: 'a lighthouse', n: 1, size: '1280x720' });
    expect(images.length).toBeGreaterThanOrEqual(1);
    expect(images[0]).toMatchObject({ b64: expect.any(String), mimeType: expect.stringMatching(/^image\//) });
    expect(aspectRatioOf('1280x720')).toBe('16:9');
    expect(aspectRatioOf('1000x333')).toBeUndefined();
  });

  it('edits an image sent as an inlineData part', async () => {
    const images = await google.editImage!({ model: 'gemini-sim-image', prompt: 'add a boat', n: 1, image: { bytes: tinyPng(), mimeType: 'image/png' } });
    expect(images[0]!.b64).toEqual(expect.any(String));
  });
});

describe('google: Veo videos', () => {
  it('cancels an operation upstream; cancelling one the provider no longer knows is not an error', async () => {
    const { providerJobId } = await google.createVideo!({ model: 'veo-sim', prompt: 'waves', durationSeconds: 4, aspectRatio: '16:9' });
    await google.cancelVideo!(providerJobId);
    expect((await google.getVideo!(providerJobId)).failure?.reason).toBe('not_found');
    await expect(google.cancelVideo!(providerJobId)).resolves.toBeUndefined();
  });

  it('creates an operation, polls it and downloads the video with the key and Range', async () => {
    const frame = { bytes: tinyPng(), mimeType: 'image/png' };
    const { providerJobId } = await google.createVideo!({
      model: 'veo-sim',
      prompt: 'a sunrise',
      durationSeconds: 6,
      aspectRatio: '16:9',
      image: frame,
      lastFrame: frame,
    });
    expect(providerJobId).toMatch(/operations\//);
    const done = await settle(() => google.getVideo!(providerJobId));
    expect(done).toMatchObject({ state: 'completed', contentRef: expect.stringContaining('/files/') });

    const part = await google.downloadVideo!(providerJobId, done.contentRef, 'bytes=0-9');
    expect(part.status).toBe(206);
    expect(Buffer.concat(await collect(part.body))).toHaveLength(10);
    // Without a contentRef the adapter finds the file through the operation again.
    const whole = await google.downloadVideo!(providerJobId, undefined, undefined);
    expect(whole.status).toBe(200);
    expect(Buffer.concat(await collect(whole.body)).subarray(4, 8).toString()).toBe('ftyp');
    // A file the provider no longer has (its 404) is the answer not_found.
    const gone = done.contentRef!.replace(/files\/[^:/?]+/, 'files/unknown');
    await expect(google.downloadVideo!(providerJobId, gone, undefined)).rejects.toMatchObject({ code: 'not_found', retryable: false });
  });

  it.each([
    ['video_safety', 'safety'],
    ['video_failed', 'provider_failed'],
    ['video_lost', 'not_found'],
  ])('reports %s as failure reason %s', async (fault, reason) => {
    const { providerJobId } = await google.createVideo!({ model: 'veo-sim', prompt: `x [[sim:fault=${fault}]]`, durationSeconds: 4, aspectRatio: '9:16' });
    expect(await settle(() => google.getVideo!(providerJobId))).toMatchObject({ state: 'failed', failure: { reason } });
  });

  it('refuses a video URI on another host and unsafe operation names', async () => {
    await expect(google.downloadVideo!('operations/x', 'https://evil.example/file.mp4', undefined)).rejects.toMatchObject({
      code: 'upstream_error',
    });
    expect(await google.getVideo!('../../etc/passwd')).toMatchObject({ state: 'failed', failure: { reason: 'not_found' } });
  });

  it('maps a create fault', async () => {
    const err = await providerFailure(google.createVideo!({ model: 'veo-sim', prompt: 'x [[sim:fault=429]]', durationSeconds: 4, aspectRatio: '16:9' }));
    expect(err).toMatchObject({ code: 'upstream_rate_limited', retryable: true });
  });
});
