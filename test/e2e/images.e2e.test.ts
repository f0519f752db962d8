import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { DEMO_MODELS } from '../../scripts/demo-models.ts';
import { balanceOf, openaiClient, postDeclaredLength, waitForListing, seedDemoModels } from '../support/clients.ts';
import { errorLine, stable } from '../support/wire.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';
import { noisePng } from '../support/images.ts';

const PRICE: Record<string, number> = Object.fromEntries(DEMO_MODELS.map((m) => [m.id, Number(m.priceCreditPerUnit)]));
const IMAGE_MODELS = ['gpt-sim-image', 'gemini-sim-image', 'gpt-sim-one-image', 'gpt-sim-url-image'];
const FORMATS = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' } as const;

interface ImagesBody {
  created: number;
  data: Array<{ b64_json: string; mime_type: string }>;
  usage: { images: number };
  service: { credit_charged: number; balance_after: number };
}
interface ErrorBody {
  error: { code: string; message: string; job_id?: string };
}
interface Answer<B> {
  status: number;
  body: B;
  headers: Headers;
}

/** The type and size of an image, read from its own headers (PNG IHDR, JPEG SOFn, WebP VP8/VP8L/VP8X). */
function imageInfo(bytes: Buffer): { mime: string; width: number; height: number } {
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) && bytes.toString('latin1', 12, 16) === 'IHDR') {
    return { mime: 'image/png', width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
  }
  if (bytes[0] === 0xff && bytes[1] === 0xd8) {
    for (let i = 2; i + 9 < bytes.length; ) {
      if (bytes[i] !== 0xff) break;
      const marker = bytes[i + 1]!;
      if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)) {
        return { mime: 'image/jpeg', height: bytes.readUInt16BE(i + 5), width: bytes.readUInt16BE(i + 7) };
      }
      i += 2 + bytes.readUInt16BE(i + 2);
    }
    throw new Error('a JPEG without a frame header');
  }
  if (bytes.toString('latin1', 0, 4) === 'RIFF' && bytes.toString('latin1', 8, 12) === 'WEBP') {
    const chunk = bytes.toString('latin1', 12, 16);
    if (chunk === 'VP8L') {
      const bits = bytes.readUInt32LE(21);
      return { mime: 'image/webp', width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
    }
    if (chunk === 'VP8 ') return { mime: 'image/webp', width: bytes.readUInt16LE(26) & 0x3fff, height: bytes.readUInt16LE(28) & 0x3fff };
    if (chunk === 'VP8X') return { mime: 'image/webp', width: bytes.readUIntLE(24, 3) + 1, height: bytes.readUIntLE(27, 3) + 1 };
  }
  throw new Error(`not a PNG, JPEG or WebP image (starts ${bytes.subarray(0, 12).toString('hex')})`);
}

describe('image generation and edits through the whole system', () => {
  let system: RunningSystem;
  let account: { accountId: string; keyId: string; apiKey: string };
  let secondGateway: string;

  async function call<B = ImagesBody>(path: string, body: unknown, opts: { key?: string; apiKey?: string; base?: string; method?: string } = {}): Promise<Answer<B>> {
    const res = await fetch(`${opts.base ?? system.baseUrl}${path}`, {
      method: opts.method ?? 'POST',
      headers: {
        authorization: `Bearer ${opts.apiKey ?? account.apiKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(opts.key === undefined ? {} : { 'idempotency-key': opts.key }),
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as B, headers: res.headers };
  }
  const fail = (path: string, body: unknown, opts: { key?: string; apiKey?: string; base?: string; method?: string } = {}) => call<ErrorBody>(path, body, opts);
  const balance = () => balanceOf(system, account.accountId);

  /** Provider calls the simulator saw whose prompt carries `nonce`. */
  async function providerCalls(nonce: string): Promise<number> {
    const res = await fetch(`${system.simulatorUrl}/_sim/requests?limit=1000&path=/images`);
    const { requests } = (await res.json()) as { requests: Array<{ body: { prompt?: unknown } | null }> };
    return requests.filter((r) => typeof r.body?.prompt === 'string' && r.body.prompt.includes(nonce)).length;
  }

  /** The sequence number of the last image request the simulator saw (0 when none). */
  async function lastProviderRequest(): Promise<number> {
    const { requests } = (await (await fetch(`${system.simulatorUrl}/_sim/requests?limit=1&path=/images`)).json()) as { requests: Array<{ seq: number }> };
    return requests[0]?.seq ?? 0;
  }

  /** Runs a request that must be refused before any provider is called. */
  async function refusedBeforeProvider<B>(send: () => Promise<B>): Promise<B> {
    const seen = await lastProviderRequest();
    const res = await send();
    expect(await lastProviderRequest()).toBe(seen);
    return res;
  }

  /** A real image of the given type, made by the system itself. */
  async function sourceImage(format: keyof typeof FORMATS, size = '1024x1536'): Promise<Buffer> {
    const res = await call('/images/generations', { model: 'gpt-sim-image', prompt: `a source image ${format}`, size, output_format: format });
    expect(res.status).toBe(200);
    return Buffer.from(res.body.data[0]!.b64_json, 'base64');
  }

  beforeAll(async () => {
    // Fault tests fail the same route on purpose; it must not cool down in between.
    system = await startTestSystem({
      providerTimeouts: { imageMs: 3_000, listMs: 2_000 },
      serviceEnv: { media: { ROUTE_FAILURE_THRESHOLD: '1000' } },
    });
    await seedDemoModels(system);
    account = await fundedAccount(system, 10_000_000);
    await waitForListing(system, account.apiKey, IMAGE_MODELS);
    secondGateway = await system.addGateway();
  }, 120_000);
  afterAll(() => system?.stop());

  it('generates with the OpenAI SDK: n images of the asked size, billed n x price', async () => {
    const openai = openaiClient(system, account.apiKey);
    const before = await balance();
    const res = await openai.images.generate({ model: 'gpt-sim-image', prompt: 'two blue squares', n: 2, size: '1024x1536' });
    expect(res.data).toHaveLength(2);
    for (const image of res.data!) {
      expect(image.url).toBeUndefined();
      expect(imageInfo(Buffer.from(image.b64_json!, 'base64'))).toEqual({ mime: 'image/png', width: 1024, height: 1536 });
    }
    const body = res as unknown as ImagesBody;
    expect(body.data.map((d) => d.mime_type)).toEqual(['image/png', 'image/png']);
    expect(body.usage).toEqual({ images: 2 });
    expect(body.service).toEqual({ credit_charged: 2 * PRICE['gpt-sim-image']!, balance_after: before - 2 * PRICE['gpt-sim-image']! });
    expect(await balance()).toBe(body.service.balance_after);
  });

  it.each(Object.entries(FORMATS))('returns a real, decodable %s when asked for it', async (format, mime) => {
    const openai = openaiClient(system, account.apiKey);
    const res = await openai.images.generate({ model: 'gpt-sim-image', prompt: `a ${format} picture`, size: '1536x1024', output_format: format as keyof typeof FORMATS });
    expect((res as unknown as ImagesBody).data[0]!.mime_type).toBe(mime);
    expect(imageInfo(Buffer.from(res.data![0]!.b64_json!, 'base64'))).toEqual({ mime, width: 1536, height: 1024 });
  });

  it('serves a Google image model with any well-formed size', async () => {
    const res = await call('/images/generations', { model: 'gemini-sim-image', prompt: 'a wide landscape', size: '1280x720' });
    expect(res.status).toBe(200);
    const info = imageInfo(Buffer.from(res.body.data[0]!.b64_json, 'base64'));
    expect(info.mime).toBe(res.body.data[0]!.mime_type);
    expect(info.width / info.height).toBeCloseTo(16 / 9, 1);
    expect(res.body.service.credit_charged).toBe(PRICE['gemini-sim-image']!);
  });

  it.each(Object.entries(FORMATS))('edits a %s source sent as b64_json or as a data URL (plain JSON, not multipart)', async (format, mime) => {
    const source = await sourceImage(format as keyof typeof FORMATS);
    const before = await balance();
    for (const image of [{ b64_json: source.toString('base64'), mime_type: mime }, { data_url: `data:${mime};base64,${source.toString('base64')}` }]) {
      const res = await call('/images/edits', { model: 'gpt-sim-image', prompt: 'make it brighter', image });
      expect(res.status).toBe(200);
      expect(res.body.usage).toEqual({ images: 1 });
      // The provider saw the source intact: the edit keeps its size.
      expect(imageInfo(Buffer.from(res.body.data[0]!.b64_json, 'base64'))).toEqual({ mime: res.body.data[0]!.mime_type, width: 1024, height: 1536 });
    }
    expect(await balance()).toBe(before - 2 * PRICE['gpt-sim-image']!);
  });

  it('edits a source just under 8 MB (the body limit and internal calls carry the largest valid request)', async () => {
    const source = noisePng(4000, 2090);
    expect(source.length).toBeGreaterThan(8_300_000);
    expect(source.length).toBeLessThanOrEqual(8 * 1024 * 1024);
    const res = await call('/images/edits', { model: 'gpt-sim-image', prompt: '🐱'.repeat(4000), image: { data_url: `data:image/png;base64,${source.toString('base64')}` } });
    expect(res.status).toBe(200);
    expect(imageInfo(Buffer.from(res.body.data[0]!.b64_json, 'base64'))).toMatchObject({ width: 4000, height: 2090 });
  });

  it('a single-image model asked for 3 returns and bills one', async () => {
    const before = await balance();
    const res = await call('/images/generations', { model: 'gpt-sim-one-image', prompt: 'three cats', n: 3 });
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
    expect(res.body.usage).toEqual({ images: 1 });
    expect(res.body.service.credit_charged).toBe(PRICE['gpt-sim-one-image']!);
    expect(await balance()).toBe(before - PRICE['gpt-sim-one-image']!);
  });

  it('inlines a provider that answers with URLs: base64 only, never a URL', async () => {
    const res = await call('/images/generations', { model: 'gpt-sim-url-image', prompt: 'a lighthouse', n: 2 });
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(2);
    for (const image of res.body.data) {
      expect(Object.keys(image).sort()).toEqual(['b64_json', 'mime_type']);
      expect(imageInfo(Buffer.from(image.b64_json, 'base64')).mime).toBe(image.mime_type);
    }
    expect(JSON.stringify(res.body)).not.toMatch(/https?:/);
    expect(res.body.service.credit_charged).toBe(2 * PRICE['gpt-sim-url-image']!);
  });

  describe('validation: 400 with a clear message, nothing charged, no provider call', () => {
    const png = { b64_json: '', mime_type: 'image/png' };
    beforeAll(async () => {
      png.b64_json = (await sourceImage('png', '1024x1024')).toString('base64');
    });

    it.each([
      ['a missing prompt', '/images/generations', { model: 'gpt-sim-image' }, 'invalid_request', /prompt is required/],
      ['a prompt of 4001 characters', '/images/generations', { model: 'gpt-sim-image', prompt: 'p'.repeat(4001) }, 'invalid_request', /at most 4000 characters/],
      ['n = 0', '/images/generations', { model: 'gpt-sim-image', prompt: 'x', n: 0 }, 'invalid_request', /n must be an integer from 1 to 4/],
      ['n = 5', '/images/generations', { model: 'gpt-sim-image', prompt: 'x', n: 5 }, 'invalid_request', /n must be an integer from 1 to 4/],
      ['n = 1.5', '/images/generations', { model: 'gpt-sim-image', prompt: 'x', n: 1.5 }, 'invalid_request', /n must be an integer/],
      ['a size not of the form WxH', '/images/generations', { model: 'gpt-sim-image', prompt: 'x', size: 'large' }, 'invalid_request', /size must have the form <width>x<height>/],
      ['a size the model does not declare', '/images/generations', { model: 'gpt-sim-image', prompt: 'x', size: '512x512' }, 'invalid_request', /size 512x512 is not offered by gpt-sim-image; use one of 1024x1024/],
      ['a text model on an image endpoint', '/images/generations', { model: 'gpt-sim-mini', prompt: 'x' }, 'capability_not_supported', /cannot be used with \/images\/generations/],
      ['a text model on the edit endpoint', '/images/edits', { model: 'gpt-sim-mini', prompt: 'x', image: png }, 'capability_not_supported', /cannot be used with \/images\/edits/],
      ['an unknown model', '/images/generations', { model: 'no-such-model', prompt: 'x' }, 'unknown_model', /does not exist/],
      ['an edit without an image', '/images/edits', { model: 'gpt-sim-image', prompt: 'x' }, 'invalid_request', /image is required/],
      ['b64_json without mime_type', '/images/edits', { model: 'gpt-sim-image', prompt: 'x', image: { b64_json: 'iVBORw0KGgo=' } }, 'invalid_request', /mime_type is required with b64_json/],
      ['an unsupported image type', '/images/edits', { model: 'gpt-sim-image', prompt: 'x', image: { data_url: 'data:image/gif;base64,R0lGODlhAQABAAAAACw=' } }, 'invalid_request', /data_url must be of type image\/png, image\/jpeg or image\/webp/],
      ['bytes that are no image', '/images/edits', { model: 'gpt-sim-image', prompt: 'x', image: { b64_json: Buffer.from('plain text, not pixels').toString('base64'), mime_type: 'image/png' } }, 'invalid_request', /not a PNG, JPEG or WebP image/],
    ])('%s', async (_name, path, body, code, message) => {
      const before = await balance();
      const res = await refusedBeforeProvider(() => fail(path, body));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe(code);
      expect(res.body.error.message).toMatch(message);
      expect(await balance()).toBe(before);
    });

    it('wrong magic bytes: a PNG declared as JPEG, in either form', async () => {
      for (const image of [{ b64_json: png.b64_json, mime_type: 'image/jpeg' }, { data_url: `data:image/webp;base64,${png.b64_json}` }]) {
        const res = await refusedBeforeProvider(() => fail('/images/edits', { model: 'gpt-sim-image', prompt: 'x', image }));
        expect(res.status).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/is a image\/png image but is declared as image\/(jpeg|webp)/) });
      }
    });

    it('an image over 8 MB decoded is refused; the body itself is within the limit', async () => {
      const source = Buffer.from(png.b64_json, 'base64');
      const big = Buffer.concat([source, Buffer.alloc(8 * 1024 * 1024 + 1 - source.length)]);
      const res = await refusedBeforeProvider(() => fail('/images/edits', { model: 'gpt-sim-image', prompt: 'x', image: { b64_json: big.toString('base64'), mime_type: 'image/png' } }));
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/larger than 8 MB \(8388608 bytes\) decoded/) });
    });

    it('a body larger than any valid request is refused from its length', async () => {
      const before = await balance();
      // An edit's body is an image: its refusal cites the 8 MB image rule, not a byte count.
      for (const [path, declared, message] of [
        ['/images/edits', 16 * 1024 * 1024, /^The request body is larger than any valid image edit: its source image may be at most 8 MB \(8388608 bytes\) decoded/],
        ['/images/generations', 200_000, /^The request body is larger than \d+ bytes, more than any valid request\.$/],
      ] as const) {
        const res = await refusedBeforeProvider(() => postDeclaredLength(`${system.baseUrl}${path}`, account.apiKey, declared, '{"model":"gpt-sim-image","prompt":"x","image":{"b64_json":"AAAA'));
        expect(res.status).toBe(400);
        expect((JSON.parse(res.body) as ErrorBody).error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(message) });
      }
      expect(await balance()).toBe(before);
    });

    it('a malformed Idempotency-Key is refused, not ignored', async () => {
      const res = await refusedBeforeProvider(() => fail('/images/generations', { model: 'gpt-sim-image', prompt: 'x' }, { key: 'k'.repeat(256) }));
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/Idempotency-Key/);
    });
  });

  it('an upstream 500, 429 or timeout is answered in the error shape on both endpoints, and charges nothing', async () => {
    const before = await balance();
    const source = `data:image/png;base64,${(await sourceImage('png', '1024x1024')).toString('base64')}`;
    const answers: Record<string, string> = {};
    for (const fault of ['500', '429', 'timeout']) {
      const lines = [];
      for (const [path, extra] of [
        ['/images/generations', {}],
        ['/images/edits', { image: { data_url: source } }],
      ] as const) {
        const res = await fail(path, { model: 'gpt-sim-image', prompt: `a picture [[sim:fault=${fault}]]`, n: 2, ...extra });
        lines.push(errorLine(res.status, res.headers, res.body));
      }
      // The same answer from both endpoints.
      expect(lines[1]).toBe(lines[0]);
      answers[fault] = lines[0]!;
    }
    expect(answers).toMatchInlineSnapshot(`
      {
        "429": "429 retry-after=null x-should-retry=null {"error":{"code":"upstream_rate_limited","message":"The upstream provider is rate limiting requests"}}",
        "500": "502 retry-after=null x-should-retry=null {"error":{"code":"upstream_error","message":"The upstream provider failed (status 500)"}}",
        "timeout": "504 retry-after=null x-should-retry=null {"error":{"code":"upstream_timeout","message":"The upstream provider did not answer in time"}}",
      }
    `);
    // The source image generated above was charged; the failures were not.
    expect(await balance()).toBe(before - PRICE['gpt-sim-image']!);
  }, 40_000);

  describe('Idempotency-Key', () => {
    it('a replay answers 409 with job_id, calls no provider and charges nothing; the job endpoint serves the result', async () => {
      const nonce = randomUUID();
      const body = { model: 'gpt-sim-image', prompt: `a kite ${nonce}`, n: 2 };
      const key = `k-${nonce}`;
      const first = await call('/images/generations', body, { key });
      expect(first.status).toBe(200);
      const after = await balance();
      expect(after).toBe(first.body.service.balance_after);

      const replay = await fail('/images/generations', { n: 2, prompt: body.prompt, model: body.model }, { key });
      expect(replay.body.error.job_id).toMatch(/^imgjob_[0-9a-f]{32}$/);
      expect({ status: replay.status, 'x-should-retry': replay.headers.get('x-should-retry'), body: stable(replay.body) }).toMatchInlineSnapshot(`
        {
          "body": {
            "error": {
              "code": "duplicate_request",
              "job_id": "<job id>",
              "message": "A request with this Idempotency-Key already succeeded and was charged once. Fetch its result with job_id.",
            },
          },
          "status": 409,
          "x-should-retry": "false",
        }
      `);
      expect(await providerCalls(nonce)).toBe(1);
      expect(await balance()).toBe(after);

      const stored = await call(`/images/jobs/${replay.body.error.job_id}`, undefined, { method: 'GET' });
      expect(stored.status).toBe(200);
      expect({ ...stored.body, created: 0 }).toEqual({ ...first.body, created: 0 });
      expect(Math.abs(stored.body.created - first.body.created)).toBeLessThanOrEqual(2);
      // Also through the other replica, while maintenance would not matter for a read.
      expect((await call(`/images/jobs/${replay.body.error.job_id}`, undefined, { method: 'GET', base: secondGateway })).body.data).toEqual(first.body.data);
    });

    it('the job endpoint is the owner’s only: another account, an unknown or a malformed id are 404 not_found', async () => {
      const key = `k-${randomUUID()}`;
      const body = { model: 'gpt-sim-one-image', prompt: 'a boat' };
      expect((await call('/images/generations', body, { key })).status).toBe(200);
      const jobId = (await fail('/images/generations', body, { key })).body.error.job_id!;
      const stranger = await fundedAccount(system, 1_000);
      for (const [path, apiKey] of [
        [`/images/jobs/${jobId}`, stranger.apiKey],
        ['/images/jobs/imgjob_00000000000000000000000000000000', account.apiKey],
        ['/images/jobs/imgjob_ZZ', account.apiKey],
        ['/images/jobs/not-a-job', account.apiKey],
      ] as const) {
        const res = await fail(path, undefined, { method: 'GET', apiKey });
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('not_found');
      }
      // The key is the account's own: the stranger's same key and body is a new request.
      const theirs = await call('/images/generations', body, { key, apiKey: stranger.apiKey });
      expect(theirs.status).toBe(200);
    });

    it('the same key with a different body is refused with invalid_request and charges nothing', async () => {
      const key = `k-${randomUUID()}`;
      expect((await call('/images/generations', { model: 'gpt-sim-one-image', prompt: 'a tree' }, { key })).status).toBe(200);
      const before = await balance();
      const other = await fail('/images/generations', { model: 'gpt-sim-one-image', prompt: 'a different tree' }, { key });
      expect(other.status).toBe(400);
      expect(other.body.error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/already used with a different request/) });
      const otherEndpoint = await fail('/images/edits', { model: 'gpt-sim-one-image', prompt: 'a tree', image: { data_url: `data:image/png;base64,${(await sourceImage('png', '1024x1024')).toString('base64')}` } }, { key });
      expect(otherEndpoint.body.error.code).toBe('invalid_request');
      expect(await balance()).toBe(before - PRICE['gpt-sim-image']!);
    });

    it('the same key after a no-charge failure is processed anew', async () => {
      const nonce = randomUUID();
      const key = `k-${nonce}`;
      const body = { model: 'gpt-sim-one-image', prompt: `a bridge ${nonce}` };
      const before = await balance();
      const settings = `${system.simulatorUrl}/_sim/settings/openai/gpt-sim-one-image`;
      await fetch(settings, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ fault: '500' }) });
      try {
        const failed = await fail('/images/generations', body, { key });
        expect(failed.status).toBe(502);
        expect(await balance()).toBe(before);
      } finally {
        await fetch(settings, { method: 'DELETE' });
      }
      const retried = await call('/images/generations', body, { key });
      expect(retried.status).toBe(200);
      expect(await providerCalls(nonce)).toBe(2);
      expect(await balance()).toBe(before - PRICE['gpt-sim-one-image']!);
    });

    it('two identical requests at the same moment on two gateway replicas: one runs, one is 409, one charge', async () => {
      const nonce = randomUUID();
      const key = `k-${nonce}`;
      // The provider takes a moment, so the second request arrives while the first is in flight.
      const body = { model: 'gpt-sim-image', prompt: `a lantern ${nonce} [[sim:latency=1500]]`, n: 3 };
      const before = await balance();
      const answers = await Promise.all([call<ImagesBody | ErrorBody>('/images/generations', body, { key }), call<ImagesBody | ErrorBody>('/images/generations', body, { key, base: secondGateway })]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
      const loser = answers.find((a) => a.status === 409)!.body as ErrorBody;
      expect(loser.error.code).toBe('duplicate_request');
      expect(await providerCalls(nonce)).toBe(1);
      expect(await balance()).toBe(before - 3 * PRICE['gpt-sim-image']!);

      // Once finished, every replica answers the replay with the job to fetch.
      for (const base of [system.baseUrl, secondGateway]) {
        const replay = await fail('/images/generations', body, { key, base });
        expect(replay.status).toBe(409);
        expect(replay.body.error.job_id).toMatch(/^imgjob_/);
      }
    });

    it('eight concurrent requests with one key across both replicas run the provider once', async () => {
      const nonce = randomUUID();
      const key = `k-${nonce}`;
      const body = { model: 'gpt-sim-one-image', prompt: `a comet ${nonce} [[sim:latency=500]]` };
      const before = await balance();
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => call<ImagesBody | ErrorBody>('/images/generations', body, { key, base: i % 2 === 0 ? system.baseUrl : secondGateway })),
      );
      expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
      expect(answers.filter((a) => a.status === 409)).toHaveLength(7);
      expect(await providerCalls(nonce)).toBe(1);
      expect(await balance()).toBe(before - PRICE['gpt-sim-one-image']!);
    });
  });

  it('media unreachable when the finished job is recorded: the gateway retries until it is, so the job is kept and never refunded', async () => {
    const nonce = randomUUID();
    const key = `k-${nonce}`;
    const body = { model: 'gpt-sim-one-image', prompt: `a lighthouse ${nonce} [[sim:latency=1500]]` };
    const before = await balance();
    const pending = call('/images/generations', body, { key });
    const deadline = Date.now() + 10_000;
    while ((await providerCalls(nonce)) === 0) {
      if (Date.now() > deadline) throw new Error('the request never reached the provider');
      await new Promise((r) => setTimeout(r, 50));
    }
    // Media drains the running job and exits: recording the finished job then finds no media.
    await system.stopService('media');
    const first = await pending;
    expect(first.status).toBe(200);
    expect(first.body.service.credit_charged).toBe(PRICE['gpt-sim-one-image']);
    // The gateway logged it before answering; the line reaches its log file through a pipe, maybe later.
    const gatewayLog = () => readFileSync(system.services.get('edge-gateway')!.logFile!, 'utf8');
    await vi.waitFor(() => expect(gatewayLog()).toContain('recording a finished image job failed; retrying in the background'), { timeout: 5_000 });

    await system.restartService('media');
    // Recorded on a retry: a replay then names the finished job (while it runs, it names none),
    // and its result is served by that id. A finished job never goes stale, so it is never refunded.
    let jobId: string | undefined;
    for (const until = Date.now() + 30_000; jobId === undefined && Date.now() < until; ) {
      const replay = await fail('/images/generations', body, { key });
      expect(replay.body.error.code).toBe('duplicate_request');
      jobId = replay.body.error.job_id;
      if (jobId === undefined) await new Promise((r) => setTimeout(r, 250));
    }
    expect(jobId).toMatch(/^imgjob_/);
    const stored = await call(`/images/jobs/${jobId}`, undefined, { method: 'GET' });
    expect(stored.status).toBe(200);
    expect(stored.body.data).toEqual(first.body.data);
    expect(stored.body.service).toEqual(first.body.service);
    expect(await balance()).toBe(before - PRICE['gpt-sim-one-image']!);
  }, 90_000);

  it('media killed mid-request: the 502 charges nothing, and once media is back the same key runs anew, charged once', async () => {
    const nonce = randomUUID();
    const key = `k-${nonce}`;
    const body = { model: 'gpt-sim-one-image', prompt: `a crash ${nonce} [[sim:latency=2000]]` };
    const before = await balance();
    const pending = fail('/images/generations', body, { key });
    for (const until = Date.now() + 10_000; (await providerCalls(nonce)) === 0; ) {
      if (Date.now() > until) throw new Error('the request never reached the provider');
      await new Promise((r) => setTimeout(r, 50));
    }
    const media = system.services.get('media')!.child;
    await new Promise((done) => {
      media.once('exit', done);
      media.kill('SIGKILL');
    });
    const failed = await pending;
    expect([failed.status, failed.body.error.code]).toEqual([502, 'upstream_error']);
    expect(await balance()).toBe(before);
    await system.restartService('media');
    // The key was freed by a retried abandon, not 30 minutes later when the job went stale.
    let retry = await call('/images/generations', body, { key });
    for (const until = Date.now() + 20_000; retry.status === 409 && Date.now() < until; ) {
      await new Promise((r) => setTimeout(r, 500));
      retry = await call('/images/generations', body, { key });
    }
    expect(retry.status).toBe(200);
    expect(await balance()).toBe(before - PRICE['gpt-sim-one-image']!);
  }, 90_000);

  it('leaves a ledger whose every balance equals the sum of its entries', async () => {
    expect(await admin(system, 'ledger', 'audit')).toMatchObject({ ok: true, problems: [] });
  });
});
