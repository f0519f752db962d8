import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ANTHROPIC_AUTH,
  control,
  getJson,
  GOOGLE_AUTH,
  list,
  OPENAI_AUTH,
  postJson,
  type RunningSimulator,
  startSimulator,
} from './support.ts';

let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator();
  return () => sim.close();
});

beforeEach(async () => {
  await control(sim.url, 'POST', '/_sim/reset');
});

const chat = (model: string, content = 'hi') =>
  postJson(`${sim.url}/openai/v1/chat/completions`, { model, messages: [{ role: 'user', content }] }, OPENAI_AUTH);

async function openaiModelIds(): Promise<string[]> {
  const res = await getJson(`${sim.url}/openai/v1/models`, OPENAI_AUTH);
  return list(res.body.data).map((m) => String(m.id));
}

describe('served models', () => {
  it('makes a model disappear and come back', async () => {
    expect(await openaiModelIds()).toContain('gpt-sim-image');
    await control(sim.url, 'PUT', '/_sim/models/openai', ['gpt-sim-mini', 'sora-sim']);
    expect(await openaiModelIds()).toEqual(['gpt-sim-mini', 'sora-sim']);
    const gone = await postJson(`${sim.url}/openai/v1/images/generations`, { model: 'gpt-sim-image', prompt: 'x' }, OPENAI_AUTH);
    expect(gone.status).toBe(404);
    expect(gone.body?.error?.code).toBe('model_not_found');

    await control(sim.url, 'DELETE', '/_sim/models/openai');
    expect(await openaiModelIds()).toContain('gpt-sim-image');
  });

  it('serves new ids with an inferred or explicit kind, for every provider', async () => {
    await control(sim.url, 'PUT', '/_sim/models/openai', { models: ['gpt-sim-extra', { id: 'my-painter', kind: 'image' }] });
    expect((await chat('gpt-sim-extra')).status).toBe(200);
    const image = await postJson(`${sim.url}/openai/v1/images/generations`, { model: 'my-painter', prompt: 'x' }, OPENAI_AUTH);
    expect(image.status).toBe(200);

    await control(sim.url, 'PUT', '/_sim/models/anthropic', ['claude-sim-opus']);
    const anthropic = await getJson(`${sim.url}/anthropic/v1/models`, ANTHROPIC_AUTH);
    expect(list(anthropic.body.data).map((m) => m.id)).toEqual(['claude-sim-opus']);

    await control(sim.url, 'PUT', '/_sim/models/google', []);
    const google = await getJson(`${sim.url}/google/v1beta/models`, GOOGLE_AUTH);
    expect(list(google.body.models)).toEqual([]);
    const all = await control(sim.url, 'GET', '/_sim/models');
    expect(all.google).toEqual([]);
    expect(all.compat).toEqual(['compat-sim-chat']);
  });

  it('rejects bad model lists and unknown providers', async () => {
    await expect(control(sim.url, 'PUT', '/_sim/models/openai', { models: [3] })).rejects.toThrow(/400/);
    await expect(control(sim.url, 'PUT', '/_sim/models/nobody', [])).rejects.toThrow(/404/);
  });
});

describe('per-model settings', () => {
  it('applies a fault to every request for the model until cleared', async () => {
    await control(sim.url, 'PUT', '/_sim/settings/openai/gpt-sim-mini', { fault: '503' });
    expect((await chat('gpt-sim-mini')).status).toBe(503);
    expect((await chat('gpt-sim-mini')).status).toBe(503);
    await control(sim.url, 'DELETE', '/_sim/settings/openai/gpt-sim-mini');
    expect((await chat('gpt-sim-mini')).status).toBe(200);
  });

  it('applies failRate deterministically', async () => {
    await control(sim.url, 'PUT', '/_sim/settings/openai/gpt-sim-mini', { fault: '429', failRate: 0.5 });
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await chat('gpt-sim-mini')).status);
    expect(statuses).toEqual([200, 429, 200, 429, 200, 429]);
  });

  it('applies latency, a provider-wide `*` entry, and a prompt directive wins over a setting', async () => {
    await control(sim.url, 'PUT', '/_sim/settings/anthropic/*', { latencyMs: 200 });
    const started = performance.now();
    const res = await postJson(
      `${sim.url}/anthropic/v1/messages`,
      { model: 'claude-sim-haiku', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] },
      ANTHROPIC_AUTH,
    );
    expect(res.status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);

    await control(sim.url, 'PUT', '/_sim/settings/openai/gpt-sim-mini', { fault: '500' });
    expect((await chat('gpt-sim-mini', 'x [[sim:fault=429]]')).status).toBe(429);
    const settings = await control(sim.url, 'GET', '/_sim/settings');
    expect(settings.models?.['openai/gpt-sim-mini']).toEqual({ fault: '500' });

    await control(sim.url, 'DELETE', '/_sim/settings');
    expect((await chat('gpt-sim-mini')).status).toBe(200);
  });

  it('fails video polls of a model with a status fault', async () => {
    const created = await postJson(`${sim.url}/openai/v1/videos`, { model: 'sora-sim', prompt: 'x' }, OPENAI_AUTH);
    await control(sim.url, 'PUT', '/_sim/settings/openai/sora-sim', { fault: '500' });
    const poll = await getJson(`${sim.url}/openai/v1/videos/${String(created.body.id)}`, OPENAI_AUTH);
    expect(poll.status).toBe(500);
  });

  it('controls the video delay per model', async () => {
    await control(sim.url, 'PUT', '/_sim/settings/openai/sora-sim', { videoDelayMs: 0 });
    const created = await postJson(`${sim.url}/openai/v1/videos`, { model: 'sora-sim', prompt: 'x' }, OPENAI_AUTH);
    expect(created.body.status).toBe('completed');
  });

  it('validates settings', async () => {
    await expect(control(sim.url, 'PUT', '/_sim/settings/openai/gpt-sim-mini', { fault: 'explode' })).rejects.toThrow(/400/);
    await expect(control(sim.url, 'PUT', '/_sim/settings/openai/gpt-sim-mini', { failRate: 2 })).rejects.toThrow(/400/);
    await expect(control(sim.url, 'PUT', '/_sim/settings/openai/gpt-sim-mini', { latencyMs: -1 })).rejects.toThrow(/400/);
  });
});

describe('listing faults', () => {
  it('fails each provider listing while listing_fault is set', async () => {
    const listings = {
      openai: () => getJson(`${sim.url}/openai/v1/models`, OPENAI_AUTH),
      anthropic: () => getJson(`${sim.url}/anthropic/v1/models`, ANTHROPIC_AUTH),
      google: () => getJson(`${sim.url}/google/v1beta/models`, GOOGLE_AUTH),
      compat: () => getJson(`${sim.url}/compat/v1/models`, { authorization: 'Bearer sim-compat-key' }),
    };
    for (const [provider, fetchListing] of Object.entries(listings)) {
      await control(sim.url, 'PUT', `/_sim/settings/${provider}`, { listing_fault: true });
      const failed = await fetchListing();
      expect(failed.status).toBe(500);
      expect(failed.body.error).toBeDefined();
      await control(sim.url, 'PUT', `/_sim/settings/${provider}`, { listing_fault: false });
      expect((await fetchListing()).status).toBe(200);
    }
    await control(sim.url, 'PUT', '/_sim/settings/google', { listing_fault: 503 });
    expect((await listings.google()).status).toBe(503);
    // Generation keeps working while only the listing fails.
    expect((await chat('gpt-sim-mini')).status).toBe(200);
  });
});

describe('request log', () => {
  it('records what was forwarded, newest last, with filters and limit', async () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'string' } } } } }];
    await postJson(
      `${sim.url}/openai/v1/chat/completions`,
      { model: 'gpt-sim-mini', stream: true, stream_options: { include_usage: true }, tools, messages: [{ role: 'user', content: 'x' }] },
      { ...OPENAI_AUTH, 'x-request-id': 'corr-1' },
    );
    await postJson(`${sim.url}/google/v1beta/models/gemini-sim-flash:countTokens?key=sim-google-key`, { contents: [{ parts: [{ text: 'x' }] }] }, {});

    const { requests } = await control(sim.url, 'GET', '/_sim/requests?limit=10');
    const all = list(requests);
    expect(all).toHaveLength(2);
    const openai = all[0]!;
    expect(openai.provider).toBe('openai');
    expect(openai.path).toBe('/openai/v1/chat/completions');
    expect(openai.model).toBe('gpt-sim-mini');
    expect(openai.body?.stream_options?.include_usage).toBe(true);
    expect(openai.body?.tools).toEqual(tools);
    expect(openai?.headers?.['x-request-id']).toBe('corr-1');
    expect(openai?.headers?.authorization).toBeUndefined();
    const google = all[1]!;
    expect(google.model).toBe('gemini-sim-flash');
    expect(google.path).toBe('/google/v1beta/models/gemini-sim-flash:countTokens?key=REDACTED');

    const filtered = await control(sim.url, 'GET', '/_sim/requests?provider=google');
    expect(list(filtered.requests)).toHaveLength(1);
    const limited = await control(sim.url, 'GET', '/_sim/requests?limit=1');
    expect(list(limited.requests)[0]!.provider).toBe('google');
  });

  it('shortens huge strings and summarises multipart files', async () => {
    const big = 'A'.repeat(200_000);
    await postJson(`${sim.url}/openai/v1/images/generations`, { model: 'gpt-sim-image', prompt: 'x', extra: big }, OPENAI_AUTH);
    const form = new FormData();
    form.set('model', 'sora-sim');
    form.set('prompt', 'x');
    form.set('input_reference', new Blob([Buffer.from('not an image')], { type: 'image/png' }), 'ref.png');
    await fetch(`${sim.url}/openai/v1/videos`, { method: 'POST', headers: OPENAI_AUTH, body: form });
    const { requests } = await control(sim.url, 'GET', '/_sim/requests');
    const [image, video] = list(requests);
    expect(String(image?.body?.extra).length).toBeLessThan(400);
    expect(video?.body?.model).toBe('sora-sim');
    expect(video?.body?.input_reference).toEqual({ filename: 'ref.png', content_type: 'image/png', bytes: 12 });
  });
});

describe('control basics', () => {
  it('answers health and unknown routes', async () => {
    expect(await control(sim.url, 'GET', '/_sim/health')).toEqual({ ok: true });
    const missing = await getJson(`${sim.url}/anthropic/v1/nothing`, ANTHROPIC_AUTH);
    expect(missing.status).toBe(404);
    expect(missing.body.type).toBe('error');
    expect(missing.body?.error?.type).toBe('not_found_error');
  });

  it('answers invalid JSON in the provider error shape', async () => {
    const res = await fetch(`${sim.url}/google/v1beta/models/gemini-sim-flash:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...GOOGLE_AUTH },
      body: '{"contents": [',
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { status: string } };
    expect(body.error.status).toBe('INVALID_ARGUMENT');
  });
});
