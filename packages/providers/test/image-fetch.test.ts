import { afterEach, describe, expect, it } from 'vitest';
import { ProviderError } from '../src/errors.ts';
import { fetchProviderImage, isAllowedImageUrl } from '../src/image-fetch.ts';
import { sleep, startWireServer } from './support/wire-server.ts';
import type { WireHandler, WireServer } from './support/wire-server.ts';

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const open: WireServer[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((server) => server.close()));
});

async function serve(handler: WireHandler): Promise<WireServer> {
  const server = await startWireServer(handler);
  open.push(server);
  return server;
}

const limits = { maxBytes: 1_024, timeoutMs: 1_000 };

describe('fetchProviderImage', () => {
  it('downloads an image from an allowed host', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png; charset=binary' });
      res.end(PNG);
    });
    const host = new URL(server.url).host;
    const image = await fetchProviderImage(`${server.url}/img/1.png`, [host], limits);
    expect(image).toEqual({ bytes: new Uint8Array(PNG), mimeType: 'image/png' });
  });

  it('refuses other hosts without asking them', async () => {
    const server = await serve((_req, res) => {
      res.end(PNG);
    });
    await expect(fetchProviderImage(`${server.url}/x.png`, ['api.openai.com'], limits)).rejects.toBeInstanceOf(ProviderError);
    expect(server.requests).toHaveLength(0);
  });

  it.each([
    ['with a declared length', true],
    ['streamed without one', false],
  ])('refuses a file over the size limit (%s)', async (_label, declared) => {
    const big = Buffer.alloc(4_096, 1);
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png', ...(declared ? { 'content-length': String(big.length) } : {}) });
      res.end(big);
    });
    await expect(fetchProviderImage(`${server.url}/big.png`, [new URL(server.url).host], limits)).rejects.toMatchObject({
      code: 'upstream_error',
    });
  });

  it('refuses an answer that is not an image, and a slow host', async () => {
    const server = await serve(async (req, res) => {
      if (req.url === '/slow.png') await sleep(2_000);
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>');
    });
    const hosts = [new URL(server.url).host];
    await expect(fetchProviderImage(`${server.url}/page`, hosts, limits)).rejects.toMatchObject({ code: 'upstream_error' });
    await expect(fetchProviderImage(`${server.url}/slow.png`, hosts, { ...limits, timeoutMs: 100 })).rejects.toMatchObject({
      code: 'upstream_timeout',
    });
  });
});

describe('isAllowedImageUrl', () => {
  it.each([
    ['https://a.blob.core.windows.net/x.png', ['*.blob.core.windows.net'], true],
    ['https://blob.core.windows.net.evil.com/x.png', ['*.blob.core.windows.net'], false],
    ['https://api.openai.com/x.png', ['api.openai.com'], true],
    ['http://api.openai.com/x.png', ['api.openai.com'], false],
    ['http://127.0.0.1:8080/x.png', ['127.0.0.1:8080'], true],
    ['http://127.0.0.1:9090/x.png', ['127.0.0.1:8080'], false],
  ])('%s with %j → %s', (url, hosts, allowed) => {
    expect(isAllowedImageUrl(new URL(url), hosts)).toBe(allowed);
  });
});
