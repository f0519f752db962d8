import { afterEach, describe, expect, it } from 'vitest';
import { ProviderError } from '../src/errors.ts';
import { createAdapter } from '../src/registry.ts';
import { STREAM_RULES } from '../src/stream-rules.ts';
import { HttpClient } from '../src/transport.ts';
import type { ProviderAdapter, SseEvent, TextResult } from '../src/types.ts';
import { collect, sendJson, sleep, sseFrame, startSse, startWireServer } from './support/wire-server.ts';
import type { WireHandler, WireServer } from './support/wire-server.ts';

const KEY = 'sk-test-0123456789abcdef';
const CHAT = { model: 'gpt-x', messages: [{ role: 'user', content: 'hi' }] };
const CHUNK = { id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'Hel' } }] };
const LAST_CHUNK = { id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] };

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()));
});

async function serve(handler: WireHandler): Promise<WireServer> {
  const server = await startWireServer(handler);
  open.push(server);
  return server;
}

function openAi(server: WireServer, timeouts = {}): ProviderAdapter {
  const adapter = createAdapter({ name: 'oa', kind: 'openai', baseUrl: `${server.url}/v1`, apiKey: KEY, timeouts });
  open.push({ close: () => adapter.close?.() ?? Promise.resolve() });
  return adapter;
}

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  const providerError = err as ProviderError;
  // Whatever went wrong, our key never shows up in what could be logged or shown.
  expect(`${providerError.message} ${String(providerError.cause)} ${JSON.stringify(providerError)}`).not.toContain(KEY);
  return providerError;
}

function streamOf(result: TextResult): AsyncIterable<SseEvent> {
  if (result.kind !== 'stream') throw new Error('expected a stream');
  return result.events;
}

describe('status mapping', () => {
  it.each([
    [429, 'upstream_rate_limited', true],
    [500, 'upstream_error', true],
    [502, 'upstream_error', true],
    [503, 'upstream_error', true],
    [401, 'upstream_error', true],
    [408, 'upstream_timeout', true],
    [400, 'invalid_request', false],
    [422, 'invalid_request', false],
  ] as const)('%i → %s (retryable %s)', async (status, code, retryable) => {
    const server = await serve((_req, res) => sendJson(res, status, { error: { message: 'nope', type: 'x' } }));
    const err = await failure(openAi(server).text('chat', CHAT, { stream: false }));
    expect(err).toMatchObject({ code, retryable, upstreamStatus: status, provider: 'oa' });
  });

  it('scrubs our key from an upstream message that echoes it', async () => {
    const server = await serve((_req, res) =>
      sendJson(res, 400, { error: { message: `Bad key ${KEY} and Bearer ${KEY} in request` } }),
    );
    const err = await failure(openAi(server).text('chat', CHAT, { stream: false }));
    expect(err.message).toContain('[redacted]');
  });

  it('reads only a bounded part of a huge error body', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      const block = 'x'.repeat(64 * 1024);
      // Endless: the client must stop reading by itself.
      const pump = () => {
        while (res.write(block));
        res.once('drain', pump);
      };
      pump();
    });
    const err = await failure(openAi(server, { textTotalMs: 5_000 }).text('chat', CHAT, { stream: false }));
    expect(err).toMatchObject({ code: 'upstream_error', retryable: true, upstreamStatus: 500 });
  });

  it('maps a 2xx that is not JSON, or not an answer, to a retryable upstream_error', async () => {
    const server = await serve((req, res) => {
      if (req.url.includes('chat')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"choices": [');
      } else sendJson(res, 200, { unexpected: true });
    });
    const adapter = openAi(server);
    expect(await failure(adapter.text('chat', CHAT, { stream: false }))).toMatchObject({
      code: 'upstream_error',
      retryable: true,
    });
    expect(await failure(adapter.text('responses', { model: 'm', input: 'x' }, { stream: false }))).toMatchObject({
      code: 'upstream_error',
      retryable: true,
    });
  });
});

describe('deadlines, aborts and connections', () => {
  it('turns a missed deadline into a retryable upstream_timeout', async () => {
    const server = await serve(async (_req, res) => {
      await sleep(2_000);
      sendJson(res, 200, {});
    });
    const started = Date.now();
    const err = await failure(openAi(server).text('chat', CHAT, { stream: false, timeoutMs: 150 }));
    expect(err).toMatchObject({ code: 'upstream_timeout', retryable: true });
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('uses the capability deadline from the config', async () => {
    const server = await serve(async (_req, res) => {
      await sleep(2_000);
      sendJson(res, 200, { data: [] });
    });
    const err = await failure(openAi(server, { listMs: 100 }).listModels());
    expect(err.code).toBe('upstream_timeout');
  });

  it('rethrows the caller abort untouched', async () => {
    const server = await serve(async (_req, res) => {
      await sleep(2_000);
      sendJson(res, 200, {});
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const err = await openAi(server)
      .text('chat', CHAT, { stream: false, signal: controller.signal })
      .catch((e: unknown) => e);
    expect(err).toBe(controller.signal.reason);
    expect((err as Error).name).toBe('AbortError');
  });

  it('rethrows a caller abort during a stream untouched', async () => {
    const server = await serve(async (_req, res) => {
      startSse(res);
      res.write(sseFrame(CHUNK));
      await sleep(2_000);
      res.end();
    });
    const controller = new AbortController();
    const events = streamOf(await openAi(server).text('chat', CHAT, { stream: true, signal: controller.signal }));
    setTimeout(() => controller.abort(), 50);
    const err = await collect(events).catch((e: unknown) => e);
    expect(err).toBe(controller.signal.reason);
  });

  it('maps a refused connection to a retryable upstream_error', async () => {
    const server = await serve(() => undefined);
    await server.close();
    const err = await failure(openAi(server).text('chat', CHAT, { stream: false }));
    expect(err).toMatchObject({ code: 'upstream_error', retryable: true });
  });

  it('sends the auth header and x-request-id, and keeps connections alive', async () => {
    const server = await serve((_req, res) => sendJson(res, 200, { data: [{ id: 'a' }] }));
    const adapter = openAi(server);
    await adapter.listModels({ requestId: 'req_123' });
    await adapter.listModels({ requestId: 'bad id\r\nx: y' });
    expect(server.requests[0]!.headers['authorization']).toBe(`Bearer ${KEY}`);
    expect(server.requests[0]!.headers['x-request-id']).toBe('req_123');
    expect(server.requests[1]!.headers['x-request-id']).toBeUndefined();
    expect(server.requests[1]!.headers['connection']).not.toBe('close');
  });
});

describe('SSE streams', () => {
  it('resolves only once the first event is in hand, and keeps [DONE] as a string', async () => {
    let firstSentAt = 0;
    const server = await serve(async (_req, res) => {
      startSse(res);
      await sleep(200);
      firstSentAt = Date.now();
      res.write(sseFrame(CHUNK));
      res.write(sseFrame(LAST_CHUNK));
      res.end(sseFrame('[DONE]'));
    });
    const result = await openAi(server).text('chat', CHAT, { stream: true });
    expect(firstSentAt).toBeGreaterThan(0);
    expect((await collect(streamOf(result))).map((e) => e.data)).toEqual([CHUNK, LAST_CHUNK, '[DONE]']);
    expect(JSON.parse(server.requests[0]!.body.toString())).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('keeps the JSON text of an event sent on one line beside its data, never of one spread over several lines', async () => {
    const server = await serve(async (_req, res) => {
      startSse(res);
      res.write(`data: ${JSON.stringify(CHUNK)}\n\n`);
      // One JSON object over two data lines: its text holds a line break no relayed frame may carry.
      const last = JSON.stringify(LAST_CHUNK);
      const [head, tail] = [last.slice(0, 10), last.slice(10)];
      res.write(`data: ${head}\ndata: ${tail}\n\n`);
      res.end(sseFrame('[DONE]'));
    });
    const events = await collect(streamOf(await openAi(server).text('chat', CHAT, { stream: true })));
    expect(events.map((e) => e.data)).toEqual([CHUNK, LAST_CHUNK, '[DONE]']);
    expect(events[0]!.text).toBe(JSON.stringify(CHUNK));
    expect(events[1]!.text).toBeUndefined();
    expect(events[2]!.text).toBeUndefined();
  });

  it('throws a failure before the first event from text(), retryable', async () => {
    const server = await serve(async (_req, res) => {
      startSse(res);
      await sleep(1_000);
      res.end(sseFrame(CHUNK));
    });
    const err = await failure(openAi(server).text('chat', CHAT, { stream: true, timeoutMs: 100 }));
    expect(err).toMatchObject({ code: 'upstream_timeout', retryable: true });
  });

  it('throws an error event that comes first from text(), with its own code', async () => {
    const server = await serve((_req, res) => {
      startSse(res);
      res.end(sseFrame({ error: { message: 'slow down', type: 'rate_limit_error' } }));
    });
    const err = await failure(openAi(server).text('chat', CHAT, { stream: true }));
    expect(err).toMatchObject({ code: 'upstream_rate_limited', retryable: true });
  });

  it('throws a committed error from the iterator on a mid-stream error event', async () => {
    const server = await serve((_req, res) => {
      startSse(res);
      res.write(sseFrame(CHUNK));
      res.end(sseFrame({ error: { message: `boom ${KEY}`, type: 'server_error' } }));
    });
    const events = streamOf(await openAi(server).text('chat', CHAT, { stream: true }));
    const err = await failure(collect(events));
    expect(err).toMatchObject({ code: 'upstream_error', retryable: false });
  });

  it('throws when the connection breaks mid-stream', async () => {
    const server = await serve(async (_req, res) => {
      startSse(res);
      res.write(sseFrame(CHUNK));
      await sleep(50);
      res.socket?.destroy();
    });
    const events = streamOf(await openAi(server).text('chat', CHAT, { stream: true }));
    expect(await failure(collect(events))).toMatchObject({ code: 'upstream_error', retryable: false });
  });

  it('throws on data that is not JSON', async () => {
    const server = await serve((_req, res) => {
      startSse(res);
      res.write(sseFrame(CHUNK));
      res.end('data: {not json\n\n');
    });
    const events = streamOf(await openAi(server).text('chat', CHAT, { stream: true }));
    expect(await failure(collect(events))).toMatchObject({ code: 'upstream_error' });
  });

  it('throws when the stream ends before the answer is complete', async () => {
    const server = await serve((_req, res) => {
      startSse(res);
      res.end(sseFrame(CHUNK));
    });
    const events = streamOf(await openAi(server).text('chat', CHAT, { stream: true }));
    const err = await failure(collect(events));
    expect(err.message).toMatch(/ended before/);
  });

  it('throws when the whole-stream deadline passes mid-stream', async () => {
    const server = await serve(async (_req, res) => {
      startSse(res);
      res.write(sseFrame(CHUNK));
      await sleep(2_000);
      res.end();
    });
    const events = streamOf(await openAi(server, { textTotalMs: 200 }).text('chat', CHAT, { stream: true }));
    expect(await failure(collect(events))).toMatchObject({ code: 'upstream_timeout', retryable: false });
  });

  it('maps a 200 JSON error answer to a stream request', async () => {
    const server = await serve((_req, res) => sendJson(res, 200, { error: { message: 'overloaded', type: 'server_error' } }));
    expect(await failure(openAi(server).text('chat', CHAT, { stream: true }))).toMatchObject({
      code: 'upstream_error',
      retryable: true,
    });
  });

  it('ends quietly when the server lingers after the last event', async () => {
    const server = await serve(async (_req, res) => {
      startSse(res);
      res.write(sseFrame({ type: 'response.created' }));
      res.write(sseFrame({ type: 'response.completed', response: {} }));
      await sleep(5_000);
      res.end();
    });
    const events = streamOf(await openAi(server).text('responses', { model: 'm', input: 'x' }, { stream: true }));
    const started = Date.now();
    expect(await collect(events)).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(2_500);
  });

  it('frees the connection when the consumer stops early', async () => {
    const server = await serve(async (_req, res) => {
      startSse(res);
      for (let i = 0; i < 100 && !res.destroyed; i++) {
        res.write(sseFrame(CHUNK));
        await sleep(10);
      }
      res.end(sseFrame('[DONE]'));
    });
    const events = streamOf(await openAi(server).text('chat', CHAT, { stream: true }));
    for await (const event of events) {
      expect(event.data).toEqual(CHUNK);
      break;
    }
  });
});

function downloader(baseUrl: string): HttpClient {
  const http = new HttpClient({ provider: 'dl', baseUrl, authHeaders: { 'x-goog-api-key': KEY }, connectMs: 1_000, secrets: [KEY] });
  open.push(http);
  return http;
}

describe('HttpClient downloads', () => {
  it('passes Range through, returns 206 headers, and drops auth on a cross-origin redirect', async () => {
    const files = await serve((req, res) => {
      res.writeHead(206, {
        'content-type': 'video/mp4',
        'content-range': 'bytes 0-3/10',
        'content-length': '4',
        'x-internal': 'no',
      });
      res.end(Buffer.from([1, 2, 3, 4]));
      expect(req.headers['range']).toBe('bytes=0-3');
    });
    const api = await serve((_req, res) => {
      res.writeHead(302, { location: `${files.url}/signed/file.mp4` });
      res.end();
    });
    const download = await downloader(api.url).download({
      method: 'GET',
      url: `${api.url}/files/abc:download`,
      headers: { range: 'bytes=0-3' },
      timeoutMs: 1_000,
      idleMs: 1_000,
    });
    expect(download.status).toBe(206);
    expect(download.headers).toEqual({ 'content-type': 'video/mp4', 'content-range': 'bytes 0-3/10', 'content-length': '4' });
    expect(Buffer.concat(await collect(download.body))).toEqual(Buffer.from([1, 2, 3, 4]));
    expect(api.requests[0]!.headers['x-goog-api-key']).toBe(KEY);
    expect(files.requests[0]!.headers['x-goog-api-key']).toBeUndefined();
  });

  it('throws a committed timeout when the body stalls', async () => {
    const server = await serve(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'video/mp4' });
      res.write(Buffer.alloc(10));
      await sleep(2_000);
      res.end();
    });
    const download = await downloader(server.url).download({ method: 'GET', url: `${server.url}/v`, timeoutMs: 1_000, idleMs: 100 });
    expect(await failure(collect(download.body))).toMatchObject({ code: 'upstream_timeout', retryable: false });
  });
});

describe('stream rules', () => {
  it.each([
    ['messages', { event: 'message_stop', data: { type: 'message_stop' } }, 'last'],
    ['messages', { data: { type: 'message_delta', delta: { stop_reason: 'end_turn' } } }, 'complete'],
    ['responses', { data: { type: 'response.incomplete' } }, 'last'],
    ['gemini', { data: { candidates: [{ finishReason: 'STOP' }] } }, 'complete'],
    ['gemini', { data: { promptFeedback: { blockReason: 'SAFETY' } } }, 'complete'],
    ['chat', { data: CHUNK }, undefined],
  ] as const)('%s: %j ends as %s', (dialect, event, ending) => {
    expect(STREAM_RULES[dialect].ending(event)).toBe(ending);
  });

  it.each([
    ['messages', { event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'x' } } }],
    ['responses', { data: { type: 'response.failed', response: { error: { code: 'server_error', message: 'x' } } } }],
    ['responses', { data: { type: 'error', code: 'rate_limit_exceeded', message: 'x' } }],
    ['gemini', { data: { error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: 'x' } } }],
  ] as const)('%s: %j is an error', (dialect, event) => {
    expect(STREAM_RULES[dialect].errorIn(event)).toBeDefined();
  });
});

describe('a provider that no longer knows the model', () => {
  it('maps 404 to a retryable upstream_error, so fallback tries the next route', async () => {
    const { errorFromStatus } = await import('../src/errors.ts');
    const err = errorFromStatus('p', 404, '{"error":{"message":"model not found"}}', []);
    expect(err).toMatchObject({ code: 'upstream_error', retryable: true, upstreamStatus: 404 });
  });
});
