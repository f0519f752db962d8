import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { addService, bindServer, serveExchange, shutdownServer, textV1, type MethodsOf, type RpcError, type ServiceImpl } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createGenerateExchange } from '../src/generation/text-exchange.ts';

// The text service's exchange as the edge calls it, on a real grpc-js server and loopback port.
const servers: grpc.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) s.forceShutdown();
});

// GenerateStream on the text exchange: a fake text service whose streams yield three frames, one
// every `itemDelayMs`, then their end. Which streams it ran is recorded, so a rerun would show.
type TextImpl = ServiceImpl<MethodsOf<typeof textV1.TextService>>;

async function startTextFake(opts: { port?: number; itemDelayMs?: number } = {}) {
  const server = new grpc.Server();
  const ran: string[] = [];
  /** Streams whose work was stopped by their caller's cancellation. */
  const stopped: string[] = [];
  /** Each stream message received: its calls' request ids, a cancellation as `cancel <id>`. */
  const messages: string[][] = [];
  const exchange: TextImpl['exchange'] = (call, ctx) => {
    call.on('data', (msg: textV1.ExchangeRequest) =>
      messages.push(msg.calls.map((c) => (c.cancel ? `cancel ${c.id}` : (c.generate ?? c.generateStream)!.requestId))),
    );
    return serveExchange(call, ctx, {
      service: textV1.TextService.typeName,
      methodOf: (req) => (req.generateStream ? 'GenerateStream' : 'Generate'),
      isCancel: (req) => req.cancel,
      handle: (req, signal) => {
        const g = req.generate;
        if (g) {
          if (g.publicModel === 'cooling') return Promise.reject(new GatewayError('model_temporarily_unavailable', 'Every route is cooling down.', { retry_after_seconds: 7 }));
          ran.push(g.requestId);
          return Promise.resolve({ case: 'generate' as const, value: create(textV1.GenerateResponseSchema, { body: Buffer.from(`{"id":"${g.requestId}"}`), provider: 'fake' }) });
        }
        const s = req.generateStream!;
        if (s.publicModel === 'cooling') throw new GatewayError('model_temporarily_unavailable', 'Every route is cooling down.', { retry_after_seconds: 7 });
        ran.push(s.requestId);
        return (async function* () {
          for (let i = 0; i < 3; i++) {
            await new Promise((r) => setTimeout(r, opts.itemDelayMs ?? 0));
            if (signal.aborted) {
              stopped.push(s.requestId);
              return;
            }
            yield { case: 'item' as const, value: create(textV1.GenerateStreamResponseSchema, { item: { case: 'frame', value: { data: Buffer.from(`${s.requestId}:${i}`) } } }) };
          }
          yield { case: 'item' as const, value: create(textV1.GenerateStreamResponseSchema, { item: { case: 'end', value: { provider: 'fake' } } }) };
        })();
      },
    });
  };
  const others = Object.fromEntries(textV1.TextService.methods.map((m) => [m.localName, async () => Promise.reject(new Error('not in this test'))]));
  addService(server, textV1.TextService, { ...others, exchange } as unknown as TextImpl, { onUnexpectedError: () => undefined });
  const port = await bindServer(server, '127.0.0.1', opts.port ?? 0);
  servers.push(server);
  return { address: `127.0.0.1:${port}`, port, server, ran, stopped, messages };
}

/** A stream's items as `frame data` strings and `end`, or the error that ended it. */
async function itemsOf(items: AsyncIterable<textV1.GenerateStreamResponse>): Promise<string[]> {
  const seen: string[] = [];
  try {
    for await (const { item } of items) seen.push(item.case === 'frame' ? Buffer.from(item.value.data).toString() : String(item.case));
  } catch (err) {
    seen.push(`error ${(err as { code?: string; grpcCode?: number }).code ?? (err as RpcError).grpcCode}`);
  }
  return seen;
}

/** What a fake stream of `id` delivers. */
const streamed = (id: string) => ['0', '1', '2'].map((i) => `${id}:${i}`).concat('end');

describe('text exchange: streamed answers', () => {
  it('streams many calls at once on one stream, each its own items in order, over with its end', async () => {
    const fake = await startTextFake({ itemDelayMs: 2 });
    const text = createGenerateExchange(fake.address);
    const ids = Array.from({ length: 50 }, (_, i) => `s${i}`);
    const all = await Promise.all(ids.map((id) => itemsOf(text.generateStream({ requestId: id, publicModel: 'm' }))));
    all.forEach((items, i) => expect(items).toEqual(streamed(ids[i]!)));
    expect(fake.ran.toSorted()).toEqual(ids.toSorted());
    text.close();
  });

  it('a refusal before any item is thrown as the rpc throws it, details included', async () => {
    const fake = await startTextFake();
    const text = createGenerateExchange(fake.address);
    const err = await text.generateStream({ requestId: 'c1', publicModel: 'cooling' })[Symbol.asyncIterator]().next().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ code: 'model_temporarily_unavailable', details: { retry_after_seconds: 7 } });
    // The exchange goes on.
    expect(await itemsOf(text.generateStream({ requestId: 'c2', publicModel: 'm' }))).toEqual(streamed('c2'));
    text.close();
  });

  it('a server shutting down finishes the streams it took; a stream asked for meanwhile runs on its successor, once', async () => {
    const first = await startTextFake({ itemDelayMs: 150 });
    const text = createGenerateExchange(first.address, { defaultTimeoutMs: 10_000 });
    const taken = itemsOf(text.generateStream({ requestId: 'taken', publicModel: 'm' }));
    await new Promise((r) => setTimeout(r, 50));
    const stopping = shutdownServer(first.server, 5_000);
    const late = itemsOf(text.generateStream({ requestId: 'late', publicModel: 'm' }));
    await stopping;
    expect(await taken).toEqual(streamed('taken'));
    const second = await startTextFake({ port: first.port });
    expect(await late).toEqual(streamed('late'));
    expect([first.ran, second.ran]).toEqual([['taken'], ['late']]);
    text.close();
  });

  it('a stream that breaks mid-answer fails after the items it delivered, and is not run again', async () => {
    const first = await startTextFake({ itemDelayMs: 200 });
    const text = createGenerateExchange(first.address, { defaultTimeoutMs: 10_000 });
    const broken = itemsOf(text.generateStream({ requestId: 'b1', publicModel: 'm' }));
    await new Promise((r) => setTimeout(r, 300)); // one item delivered
    first.server.forceShutdown();
    const second = await startTextFake({ port: first.port });
    expect(await broken).toEqual(['b1:0', `error ${grpc.status.UNAVAILABLE}`]);
    await new Promise((r) => setTimeout(r, 300));
    expect(second.ran).toEqual([]);
    text.close();
  });

  it('bounds the whole stream by its deadline, and the server stops the stream too', async () => {
    const fake = await startTextFake({ itemDelayMs: 200 });
    const text = createGenerateExchange(fake.address);
    expect(await itemsOf(text.generateStream({ requestId: 'd1', publicModel: 'm' }, { timeoutMs: 300 }))).toEqual(['d1:0', `error ${grpc.status.DEADLINE_EXCEEDED}`]);
    await vi.waitFor(() => expect(fake.stopped).toEqual(['d1']), { timeout: 2_000 });
    text.close();
  });

  it("a caller that stops reading stops the server's work, and the exchange goes on", async () => {
    const fake = await startTextFake({ itemDelayMs: 150 });
    const text = createGenerateExchange(fake.address);
    for await (const { item } of text.generateStream({ requestId: 'e1', publicModel: 'm' })) {
      expect(item.case).toBe('frame');
      break;
    }
    await vi.waitFor(() => expect(fake.stopped).toEqual(['e1']), { timeout: 2_000 });
    expect(await itemsOf(text.generateStream({ requestId: 'e2', publicModel: 'm' }))).toEqual(streamed('e2'));
    text.close();
  });
});

describe('text exchange: calls made together', () => {
  it('streams asked for in one turn go as one message; one given up midway is stopped on the server, the others finish', async () => {
    const fake = await startTextFake({ itemDelayMs: 100 });
    const text = createGenerateExchange(fake.address);
    const quit = new AbortController();
    const [m1, m2, m3] = ['m1', 'm2', 'm3'].map((id) => text.generateStream({ requestId: id, publicModel: 'm' }, id === 'm2' ? { signal: quit.signal } : {}));
    const it2 = m2![Symbol.asyncIterator]();
    const kept1 = itemsOf(m1!);
    const first2 = it2.next();
    const kept = [kept1, itemsOf(m3!)];
    expect((await first2).value).toMatchObject({ item: { case: 'frame' } });
    quit.abort();
    await expect(it2.next()).rejects.toMatchObject({ grpcCode: grpc.status.CANCELLED });
    expect(await Promise.all(kept)).toEqual([streamed('m1'), streamed('m3')]);
    await vi.waitFor(() => expect(fake.stopped).toEqual(['m2']), { timeout: 2_000 });
    expect(fake.messages[0]).toEqual(['m1', 'm2', 'm3']);
    expect(fake.messages.slice(1)).toEqual([[expect.stringMatching(/^cancel \d+$/)]]);
    text.close();
  });

  it('a call given up in the turn it was made is never sent; the others of that turn are', async () => {
    const fake = await startTextFake();
    const text = createGenerateExchange(fake.address);
    const quit = new AbortController();
    const dropped = text.generateStream({ requestId: 'q1', publicModel: 'm' }, { signal: quit.signal })[Symbol.asyncIterator]().next();
    const sent = itemsOf(text.generateStream({ requestId: 'q2', publicModel: 'm' }));
    quit.abort();
    await expect(dropped).rejects.toMatchObject({ grpcCode: grpc.status.CANCELLED });
    expect(await sent).toEqual(streamed('q2'));
    expect(fake.messages).toEqual([['q2']]);
    expect(fake.ran).toEqual(['q2']);
    text.close();
  });

  it('answers Generate calls of one message each with its own result or error', async () => {
    const fake = await startTextFake();
    const text = createGenerateExchange(fake.address);
    const [a, b, c] = await Promise.allSettled([
      text.generate({ requestId: 'h1', publicModel: 'm' }),
      text.generate({ requestId: 'h2', publicModel: 'cooling' }),
      text.generate({ requestId: 'h3', publicModel: 'm' }),
    ]);
    expect(fake.messages).toEqual([['h1', 'h2', 'h3']]);
    expect(a.status === 'fulfilled' && Buffer.from(a.value.body).toString()).toBe('{"id":"h1"}');
    expect(b).toMatchObject({ status: 'rejected', reason: { code: 'model_temporarily_unavailable', details: { retry_after_seconds: 7 } } });
    expect(c.status === 'fulfilled' && Buffer.from(c.value.body).toString()).toBe('{"id":"h3"}');
    text.close();
  });
});

describe('text exchange: complete answers', () => {
  it('answers each Generate with its own response, run once', async () => {
    const fake = await startTextFake();
    const text = createGenerateExchange(fake.address);
    const answers = await Promise.all(['g1', 'g2'].map((id) => text.generate({ requestId: id, publicModel: 'm' })));
    expect(answers.map((a) => Buffer.from(a.body).toString())).toEqual(['{"id":"g1"}', '{"id":"g2"}']);
    expect(fake.ran.toSorted()).toEqual(['g1', 'g2']);
    text.close();
  });

  it('throws a refusal as the domain error it is, details included', async () => {
    const fake = await startTextFake();
    const text = createGenerateExchange(fake.address);
    await expect(text.generate({ requestId: 'g3', publicModel: 'cooling' })).rejects.toMatchObject({ code: 'model_temporarily_unavailable', details: { retry_after_seconds: 7 } });
    text.close();
  });
});
