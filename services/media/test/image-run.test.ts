import { createHash, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { create } from '@bufbuild/protobuf';
import { mediaV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { FallbackRouter, ProviderError, type CallOptions, type GeneratedImage, type ImageEditRequest, type ImageRequest, type ProviderAdapter } from '@gw/providers';
import { createLogger } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { beginImageJob, getImageJob, finishImageJob, type JobPolicy } from '../src/domain/image-jobs.ts';
import { runImageJob, type RunDeps } from '../src/domain/image-run.ts';
import { mediaOrm, png } from './support.ts';

const POLICY: JobPolicy = { resultTtlMs: 24 * 60 * 60_000, staleAfterMs: 30 * 60_000 };
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1]);

type Behaviour = (req: ImageRequest | ImageEditRequest, opts?: CallOptions) => Promise<GeneratedImage[]>;

/** A provider adapter whose image calls do what the test says and are counted. */
function fakeAdapter(name: string, behaviour: Behaviour, imageHosts: string[] = []): ProviderAdapter & { calls: Array<ImageRequest | ImageEditRequest> } {
  const calls: Array<ImageRequest | ImageEditRequest> = [];
  const run = (req: ImageRequest | ImageEditRequest, opts?: CallOptions) => {
    calls.push(req);
    return behaviour(req, opts);
  };
  return {
    name,
    kind: 'openai',
    textDialects: ['chat'],
    imageHosts,
    calls,
    listModels: async () => [],
    text: async () => {
      throw new Error('not a text provider');
    },
    generateImages: run,
    editImage: run,
  };
}

const b64Images = (count: number): GeneratedImage[] => Array.from({ length: count }, () => ({ b64: png(4, 4).toString('base64'), mimeType: 'image/png' }));
const failing = (code: 'upstream_error' | 'upstream_rate_limited', name: string): Behaviour => async () => {
  throw new ProviderError(code, 'The upstream provider failed', { provider: name, retryable: true, upstreamStatus: 500 });
};
const route = (provider: string, priority = 0) => create(mediaV1.RunImageJobRequestSchema, { routes: [{ provider, upstreamModel: 'up-model', priority, weight: 1 }] }).routes[0]!;

interface RunInit {
  operation?: mediaV1.ImageOperation;
  prompt?: string;
  n?: number;
  size?: string;
  outputMimeType?: string;
  source?: { data: Uint8Array; mimeType: string };
}

function request(ids: { jobId: string; accountId: string }, providers: string[], init: RunInit = {}) {
  return create(mediaV1.RunImageJobRequestSchema, {
    ...ids,
    operation: mediaV1.ImageOperation.GENERATE,
    prompt: 'a red square',
    n: 2,
    routes: providers.map((p, i) => route(p, i)),
    ...init,
  });
}

describe('running image jobs against providers', () => {
  let orm: MikroORM;
  let server: Server;
  let host: string;
  const adapters = new Map<string, ProviderAdapter>();
  let deps: RunDeps;

  beforeAll(async () => {
    orm = await mediaOrm();
    // Serves a JPEG at /img.jpg (with a content-type that lies) and text at /text.
    server = createServer((req, res) => {
      if (req.url === '/img.jpg') res.writeHead(200, { 'content-type': 'image/png' }).end(JPEG);
      else res.writeHead(200, { 'content-type': 'text/plain' }).end('not an image');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    deps = {
      orm,
      providers: { get: (name) => adapters.get(name) },
      router: new FallbackRouter({ failureThreshold: 1000 }),
      download: { maxBytes: 1024 * 1024, timeoutMs: 5_000 },
      now: () => new Date(),
      logger: createLogger('media-test', 'silent'),
    };
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await orm?.close();
  });

  async function job(key = '', operation = mediaV1.ImageOperation.GENERATE): Promise<{ jobId: string; accountId: string }> {
    const accountId = randomUUID();
    const jobId = await beginImageJob(
      orm.em.fork(),
      { accountId, idempotencyKey: key, bodyHash: key === '' ? new Uint8Array() : createHash('sha256').update('b').digest(), operation: operation === mediaV1.ImageOperation.EDIT ? 'edit' : 'generate' },
      POLICY,
      new Date(),
    );
    return { jobId, accountId };
  }


  it('asks for n images in the requested encoding and keeps a keyed job’s result', async () => {
    const p = fakeAdapter('p-ok', async (req) => b64Images(req.n));
    adapters.set(p.name, p);
    const ids = await job('key-1');
    const out = await runImageJob(deps, request(ids, ['p-ok'], { size: '1024x1024', outputMimeType: 'image/webp' }), new AbortController().signal);
    expect(out.provider).toBe('p-ok');
    expect(out.images.map((i) => i.mimeType)).toEqual(['image/png', 'image/png']);
    expect(p.calls[0]).toMatchObject({ model: 'up-model', n: 2, size: '1024x1024', outputMimeType: 'image/webp' });
    await finishImageJob(orm.em.fork(), { ...ids, creditCharged: 2n, balanceAfter: 0n }, POLICY, new Date());
    expect((await getImageJob(orm.em.fork(), ids, new Date())).images).toHaveLength(2);
  });

  it('never returns more images than asked for', async () => {
    adapters.set('p-many', fakeAdapter('p-many', async () => b64Images(4)));
    const out = await runImageJob(deps, request(await job(), ['p-many'], { n: 1 }), new AbortController().signal);
    expect(out.images).toHaveLength(1);
  });

  it('downloads URL answers from the provider’s own hosts and types them by their bytes', async () => {
    adapters.set('p-url', fakeAdapter('p-url', async () => [{ url: `http://${host}/img.jpg`, mimeType: 'image/png' }], [host]));
    const out = await runImageJob(deps, request(await job(), ['p-url'], { n: 1 }), new AbortController().signal);
    expect(out.images[0]!.mimeType).toBe('image/jpeg');
    expect(Buffer.from(out.images[0]!.data).equals(JPEG)).toBe(true);
  });

  it('refuses URLs off the provider’s hosts and downloads that are no image, falling back to the next route', async () => {
    adapters.set('p-foreign', fakeAdapter('p-foreign', async () => [{ url: `http://${host}/img.jpg`, mimeType: 'image/png' }], ['elsewhere.example']));
    adapters.set('p-text', fakeAdapter('p-text', async () => [{ url: `http://${host}/text`, mimeType: 'image/png' }], [host]));
    adapters.set('p-junk', fakeAdapter('p-junk', async () => [{ b64: Buffer.from('hello').toString('base64'), mimeType: 'image/png' }]));
    const backup = fakeAdapter('p-backup', async (req) => b64Images(req.n));
    adapters.set(backup.name, backup);
    const out = await runImageJob(deps, request(await job(), ['p-foreign', 'p-text', 'p-junk', 'p-backup'], { n: 1 }), new AbortController().signal);
    expect(out.provider).toBe('p-backup');
  });

  it('passes the source image of an edit', async () => {
    const p = fakeAdapter('p-edit', async () => b64Images(1));
    adapters.set(p.name, p);
    const source = png(8, 8);
    const ids = await job('', mediaV1.ImageOperation.EDIT);
    await runImageJob(deps, request(ids, ['p-edit'], { operation: mediaV1.ImageOperation.EDIT, n: 1, source: { data: source, mimeType: 'image/png' } }), new AbortController().signal);
    const call = p.calls[0] as ImageEditRequest;
    expect(Buffer.from(call.image.bytes).equals(source)).toBe(true);
    expect(call.image.mimeType).toBe('image/png');
  });

  it('a failure on every route keeps its public code, runs once per route, and frees the key', async () => {
    adapters.set('p-429', fakeAdapter('p-429', failing('upstream_rate_limited', 'p-429')));
    const ids = await job('key-fail');
    const err = await runImageJob(deps, request(ids, ['p-429']), new AbortController().signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).not.toBeInstanceOf(ProviderError);
    expect((err as GatewayError).code).toBe('upstream_rate_limited');
    // The job was abandoned: the same key starts a new job, and the old job cannot run again.
    await expect(beginImageJob(orm.em.fork(), { accountId: ids.accountId, idempotencyKey: 'key-fail', bodyHash: createHash('sha256').update('b').digest(), operation: 'generate' }, POLICY, new Date())).resolves.not.toBe(ids.jobId);
    const again = await runImageJob(deps, request(ids, ['p-429']), new AbortController().signal).catch((e: unknown) => e);
    expect((again as GatewayError).code).toBe('not_found');
  });

  it('a caller that gives up cancels the provider call: a timeout, and the job is abandoned', async () => {
    adapters.set(
      'p-slow',
      fakeAdapter('p-slow', (_req, opts) => new Promise((_resolve, reject) => opts?.signal?.addEventListener('abort', () => reject(opts.signal!.reason as Error)))),
    );
    const ids = await job('key-slow');
    const caller = new AbortController();
    setTimeout(() => caller.abort(), 50);
    const err = await runImageJob(deps, request(ids, ['p-slow']), caller.signal).catch((e: unknown) => e);
    expect((err as GatewayError).code).toBe('upstream_timeout');
    const again = await beginImageJob(orm.em.fork(), { accountId: ids.accountId, idempotencyKey: 'key-slow', bodyHash: createHash('sha256').update('b').digest(), operation: 'generate' }, POLICY, new Date());
    expect(again).not.toBe(ids.jobId);
  });

  it('refuses malformed jobs before calling anyone', async () => {
    const p = fakeAdapter('p-never', async () => b64Images(1));
    adapters.set(p.name, p);
    for (const init of [{ n: 5 }, { n: 0 }, { prompt: '' }, { prompt: 'x'.repeat(4001) }, { outputMimeType: 'image/gif' }, { operation: mediaV1.ImageOperation.EDIT }]) {
      const err = await runImageJob(deps, request(await job(), ['p-never'], init), new AbortController().signal).catch((e: unknown) => e);
      expect((err as GatewayError).code).toBe('invalid_request');
    }
    expect(p.calls).toHaveLength(0);
  });
});
