import * as grpc from '@grpc/grpc-js';
import { GatewayError } from '@gw/errors';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type MethodsOf,
  type ServiceImpl,
  ExchangeClient,
  RpcError,
  addService,
  billingV1,
  bindServer,
  createClient,
  serveExchange,
  shutdownServer,
} from '../src/index.ts';
import { deserializer, serializer } from '../src/grpc/codec.ts';

// The exchange adapter on a real grpc-js server and loopback port. The in-test billing answers
// from a map of request ids, so replays can be counted; the real billing is tested end to end.
type Impl = ServiceImpl<MethodsOf<typeof billingV1.BillingService>>;

interface Fake {
  address: string;
  server: grpc.Server;
  /** Authorize calls seen per request id (a resent call shows as 2). */
  seen: Map<string, number>;
  /** The number of calls in each stream message the server received, in order. */
  messages: number[];
  unexpected: unknown[];
}

const servers: grpc.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) s.forceShutdown();
});

/**
 * `delayMs`: each call waits that long before it is answered (none: answered at once, so the
 * answers to the calls of one message are finished in one turn). Account `slow` waits 300 ms more.
 */
async function startFake(opts: { port?: number; delayMs?: number } = {}): Promise<Fake> {
  const server = new grpc.Server();
  const seen = new Map<string, number>();
  const messages: number[] = [];
  const unexpected: unknown[] = [];
  const exchange: Impl['exchange'] = (call, ctx) => {
    call.on('data', (msg: billingV1.ExchangeRequest) => messages.push(msg.calls.length));
    return serveExchange(call, ctx, {
      service: billingV1.BillingService.typeName,
      methodOf: (req) => req.call.case ?? 'Exchange',
      handle: async (req) => {
        if (opts.delayMs !== undefined) await new Promise((r) => setTimeout(r, opts.delayMs));
        if (req.call.case !== 'authorize') throw new Error('only authorize here');
        const a = req.call.value;
        if (a.accountId === 'slow') await new Promise((r) => setTimeout(r, 300));
        seen.set(a.requestId, (seen.get(a.requestId) ?? 0) + 1);
        if (a.accountId === 'poor') throw new GatewayError('insufficient_balance', 'The wallet balance is not enough for this request.');
        if (a.accountId === 'limited') throw new GatewayError('api_key_limit_exceeded', 'limit', { limit_type: 'requests', period: 'daily' });
        if (a.accountId === 'boom') throw new Error('db password=secret leaked?');
        if (a.accountId === 'bulky') throw new GatewayError('insufficient_balance', `${a.requestId}: ${'x'.repeat(400_000)}`);
        return { case: 'authorize' as const, value: { held: a.worstUnits, balanceAfter: BigInt(a.requestId.length) } };
      },
    });
  };
  const others = Object.fromEntries(billingV1.BillingService.methods.map((m) => [m.localName, async () => Promise.reject(new Error('not in this test'))]));
  addService(server, billingV1.BillingService, { ...others, exchange } as unknown as Impl, { onUnexpectedError: (err) => unexpected.push(err) });
  const port = await bindServer(server, '127.0.0.1', opts.port ?? 0);
  servers.push(server);
  return { address: `127.0.0.1:${port}`, server, seen, messages, unexpected };
}

const authorize = (requestId: string, accountId = 'a') => ({ requestId, accountId, worstUnits: 7n });

/**
 * Authorize over billing's exchange as an idempotent caller makes it (resent after a broken
 * stream). The gateway's own money client, with its hold lease, is tested in edge-gateway.
 */
function moneyOn(address: string, opts: { defaultTimeoutMs?: number } = {}) {
  const client = createClient(billingV1.BillingService, address, opts);
  /** The number of replies in each stream message the caller received, in order. */
  const replies: number[] = [];
  const open = () => {
    const stream = client.exchange();
    stream.on('data', (msg: billingV1.ExchangeResponse) => replies.push(msg.replies.length));
    return stream;
  };
  const exchange = new ExchangeClient<billingV1.ExchangeReply>(open, { service: billingV1.BillingService.typeName, resend: true, defaultTimeoutMs: opts.defaultTimeoutMs });
  return {
    replies,
    authorize: (value: ReturnType<typeof authorize>, callOpts: { timeoutMs?: number } = {}) =>
      exchange.request<billingV1.AuthorizeResponse>('Authorize', 'authorize', (envelope) => ({ ...envelope, call: { case: 'authorize', value } }), callOpts.timeoutMs),
    close() {
      exchange.close();
      client.close();
    },
  };
}

describe('billing exchange', () => {
  it('answers many concurrent calls on one stream, each with its own response', async () => {
    const fake = await startFake({ delayMs: 1 });
    const money = moneyOn(fake.address);
    const ids = Array.from({ length: 300 }, (_, i) => `req-${'x'.repeat(i % 37)}-${i}`);
    const answers = await Promise.all(ids.map((id) => money.authorize(authorize(id))));
    answers.forEach((a, i) => {
      expect(a.held).toBe(7n);
      expect(a.balanceAfter).toBe(BigInt(ids[i]!.length));
    });
    expect([...fake.seen.values()].every((n) => n === 1)).toBe(true);
    money.close();
  });

  it('carries domain errors with their details, and hides unexpected ones behind INTERNAL', async () => {
    const fake = await startFake();
    const money = moneyOn(fake.address);
    await expect(money.authorize(authorize('r1', 'poor'))).rejects.toMatchObject({ name: 'GatewayError', code: 'insufficient_balance' });
    const limited = await money.authorize(authorize('r2', 'limited')).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(GatewayError);
    expect((limited as GatewayError).details).toEqual({ limit_type: 'requests', period: 'daily' });
    const boom = await money.authorize(authorize('r3', 'boom')).catch((e: unknown) => e);
    expect(boom).toBeInstanceOf(RpcError);
    expect((boom as RpcError).grpcCode).toBe(grpc.status.INTERNAL);
    expect((boom as Error).message).not.toContain('secret');
    expect(fake.unexpected).toHaveLength(1);
    // The stream survives failed calls.
    await expect(money.authorize(authorize('r4'))).resolves.toMatchObject({ held: 7n });
    money.close();
  });

  it('gives each call its own deadline', async () => {
    const fake = await startFake({ delayMs: 300 });
    const money = moneyOn(fake.address, { defaultTimeoutMs: 50 });
    const err = await money.authorize(authorize('slow')).catch((e: unknown) => e);
    expect((err as RpcError).grpcCode).toBe(grpc.status.DEADLINE_EXCEEDED);
    await expect(money.authorize(authorize('patient'), { timeoutMs: 2_000 })).resolves.toMatchObject({ held: 7n });
    money.close();
  });

  it('a server shutting down answers what it took and refuses the rest, which go to its successor: none lost, none run twice', async () => {
    const first = await startFake({ delayMs: 200 });
    const port = Number(first.address.split(':')[1]);
    const client = createClient(billingV1.BillingService, first.address);
    // Not idempotent as far as the caller knows: nothing may be sent twice.
    const exchange = new ExchangeClient<billingV1.ExchangeReply>(() => client.exchange(), {
      service: billingV1.BillingService.typeName,
      resend: false,
      defaultTimeoutMs: 10_000,
    });
    const send = (id: string) => exchange.call('Authorize', (envelope) => ({ ...envelope, call: { case: 'authorize', value: authorize(id) } }));
    const taken = Array.from({ length: 20 }, (_, i) => send(`taken-${i}`));
    await new Promise((r) => setTimeout(r, 50)); // the first server has them in hand
    const started = Date.now();
    const stopping = shutdownServer(first.server, 5_000);
    // Sent before the caller hears of the shutdown: refused as not taken, then sent to the successor.
    const late = Array.from({ length: 5 }, (_, i) => send(`late-${i}`));
    await stopping;
    // The open exchange did not hold the shutdown up until its timeout.
    expect(Date.now() - started).toBeLessThan(2_000);
    await expect(Promise.all(taken)).resolves.toHaveLength(20);
    expect([...first.seen.keys()].sort()).toEqual(Array.from({ length: 20 }, (_, i) => `taken-${i}`).sort());

    const second = await startFake({ port });
    await expect(Promise.all(late)).resolves.toHaveLength(5);
    expect([...second.seen.keys()].sort()).toEqual(Array.from({ length: 5 }, (_, i) => `late-${i}`).sort());
    expect([...first.seen.values(), ...second.seen.values()].every((n) => n === 1)).toBe(true);
    exchange.close();
    client.close();
  });

  it('resends unanswered calls when the stream breaks (calls are idempotent, so a replay is safe)', async () => {
    const first = await startFake({ delayMs: 400 });
    const port = Number(first.address.split(':')[1]);
    const money = moneyOn(first.address, { defaultTimeoutMs: 10_000 });
    const inFlight = Array.from({ length: 10 }, (_, i) => money.authorize(authorize(`lost-${i}`)));
    await new Promise((r) => setTimeout(r, 100));
    first.server.forceShutdown(); // the process dies: its answers never come
    const second = await startFake({ port });
    await expect(Promise.all(inFlight)).resolves.toHaveLength(10);
    expect([...second.seen.keys()].sort()).toEqual(Array.from({ length: 10 }, (_, i) => `lost-${i}`).sort());
    money.close();
  });

  it('fails unanswered calls when the stream breaks, if the calls are not idempotent', async () => {
    const first = await startFake({ delayMs: 400 });
    const client = createClient(billingV1.BillingService, first.address);
    const exchange = new ExchangeClient<billingV1.ExchangeReply>(() => client.exchange(), { service: billingV1.BillingService.typeName, resend: false });
    const inFlight = Array.from({ length: 3 }, (_, i) =>
      exchange.call('Authorize', (envelope) => ({ ...envelope, call: { case: 'authorize', value: authorize(`once-${i}`) } })).catch((e: unknown) => e),
    );
    await new Promise((r) => setTimeout(r, 100));
    first.server.forceShutdown();
    const second = await startFake({ port: Number(first.address.split(':')[1]) });
    for (const err of await Promise.all(inFlight)) expect((err as RpcError).grpcCode).toBe(grpc.status.UNAVAILABLE);
    await new Promise((r) => setTimeout(r, 300));
    expect(second.seen.size).toBe(0); // never sent again
    // The exchange itself goes on: the next call opens a new stream.
    await expect(exchange.call('Authorize', (envelope) => ({ ...envelope, call: { case: 'authorize', value: authorize('next') } }))).resolves.toMatchObject({ id: expect.any(BigInt) });
    expect(second.seen.get('next')).toBe(1);
    exchange.close();
    client.close();
  });

  it('fails a call that is not resent when the service cannot be reached within the connect wait, not at its long deadline (a Generate has 11 minutes)', async () => {
    const gone = await startFake();
    const address = gone.address;
    gone.server.forceShutdown();
    const client = createClient(billingV1.BillingService, address, { connectWaitMs: 300 });
    const exchange = new ExchangeClient<billingV1.ExchangeReply>(() => client.exchange(), { service: billingV1.BillingService.typeName, resend: false });
    const call = exchange.call('Authorize', (envelope) => ({ ...envelope, call: { case: 'authorize', value: authorize('unsent') } }), 11 * 60_000);
    await expect(call).rejects.toMatchObject({ grpcCode: grpc.status.UNAVAILABLE });
    exchange.close();
    client.close();
  });

  it('sends the calls made in one turn as one message, and the answers finished in one turn as one message', async () => {
    const fake = await startFake();
    const money = moneyOn(fake.address);
    await money.authorize(authorize('warm')); // the stream is open
    const ids = ['b1', 'b22', 'b333', 'b4444', 'b55555'];
    const answers = await Promise.all(ids.map((id) => money.authorize(authorize(id))));
    expect(answers.map((a) => [a.held, a.balanceAfter])).toEqual(ids.map((id) => [7n, BigInt(id.length)]));
    expect(fake.messages).toEqual([1, 5]);
    expect(money.replies).toEqual([1, 5]);
    // Calls made in later turns go in messages of their own, each answered as itself.
    for (const id of ['c1', 'c22']) await expect(money.authorize(authorize(id))).resolves.toMatchObject({ balanceAfter: BigInt(id.length) });
    expect(fake.messages).toEqual([1, 5, 1, 1]);
    money.close();
  });

  it('never gathers calls or replies past 1 MiB in one message: large ones of one turn go in several, each whole', async () => {
    const fake = await startFake();
    const money = moneyOn(fake.address);
    await money.authorize(authorize('warm'));
    // Five calls of 400 kB each in one turn: two, two and one per message, in the order made.
    const ids = [1, 2, 3, 4, 5].map((i) => `${i}${'r'.repeat(400_000)}`);
    const answers = await Promise.all(ids.map((id) => money.authorize(authorize(id))));
    expect(answers.map((a) => a.balanceAfter)).toEqual(ids.map((id) => BigInt(id.length)));
    expect(fake.messages).toEqual([1, 2, 2, 1]);
    const before = money.replies.length;
    // Five small calls in one message, refused with replies of 400 kB each: two, two and one per message.
    const refusals = await Promise.all(['p1', 'p2', 'p3', 'p4', 'p5'].map((id) => money.authorize(authorize(id, 'bulky')).catch((err: unknown) => err)));
    expect(refusals.map((err) => (err as GatewayError).message.slice(0, 3))).toEqual(['p1:', 'p2:', 'p3:', 'p4:', 'p5:']);
    expect(fake.messages).toEqual([1, 2, 2, 1, 5]);
    expect(money.replies.slice(before)).toEqual([2, 2, 1]);
    money.close();
  });

  it('answers each call of a message with its own outcome: results, domain errors and internal failures side by side', async () => {
    const fake = await startFake();
    const money = moneyOn(fake.address);
    const outcomes = await Promise.allSettled([
      money.authorize(authorize('ok-1')),
      money.authorize(authorize('poor-1', 'poor')),
      money.authorize(authorize('boom-1', 'boom')),
      money.authorize(authorize('limited-1', 'limited')),
      money.authorize(authorize('ok-22')),
    ]);
    expect(fake.messages).toEqual([5]);
    expect(money.replies).toEqual([5]);
    const [ok1, poor, boom, limited, ok2] = outcomes;
    expect(ok1).toMatchObject({ status: 'fulfilled', value: { held: 7n, balanceAfter: 4n } });
    expect(ok2).toMatchObject({ status: 'fulfilled', value: { held: 7n, balanceAfter: 5n } });
    expect(poor).toMatchObject({ status: 'rejected', reason: { name: 'GatewayError', code: 'insufficient_balance' } });
    expect(limited).toMatchObject({ status: 'rejected', reason: { name: 'GatewayError', code: 'api_key_limit_exceeded', details: { limit_type: 'requests', period: 'daily' } } });
    expect(boom).toMatchObject({ status: 'rejected', reason: { name: 'RpcError', grpcCode: grpc.status.INTERNAL } });
    expect((boom as PromiseRejectedResult).reason.message).not.toContain('secret');
    expect(fake.unexpected).toHaveLength(1);
    money.close();
  });

  it('keeps each call of a message to its own deadline: one passes it, the others are answered', async () => {
    const fake = await startFake();
    const money = moneyOn(fake.address);
    const slow = money.authorize(authorize('slow-1', 'slow'), { timeoutMs: 100 }).catch((e: unknown) => e);
    const fast = ['f1', 'f22', 'f333'].map((id) => money.authorize(authorize(id), { timeoutMs: 2_000 }));
    await expect(Promise.all(fast)).resolves.toMatchObject([{ balanceAfter: 2n }, { balanceAfter: 3n }, { balanceAfter: 4n }]);
    expect(await slow).toMatchObject({ name: 'RpcError', grpcCode: grpc.status.DEADLINE_EXCEEDED });
    expect(fake.messages).toEqual([4]);
    // Its late answer is dropped, and the exchange goes on.
    await new Promise((r) => setTimeout(r, 350));
    await expect(money.authorize(authorize('after'))).resolves.toMatchObject({ held: 7n });
    money.close();
  });

  it('sends a message of calls again, whole, to the successor of a server that refused it as not taken', async () => {
    const first = await startFake({ delayMs: 200 });
    const port = Number(first.address.split(':')[1]);
    const money = moneyOn(first.address, { defaultTimeoutMs: 10_000 });
    await money.authorize(authorize('warm'));
    const stopping = shutdownServer(first.server, 5_000);
    // In the same turn as the shutdown's start: they reach the server after it stopped taking calls.
    const refused = ['n1', 'n2', 'n3'].map((id) => money.authorize(authorize(id)));
    await stopping;
    const second = await startFake({ port });
    await expect(Promise.all(refused)).resolves.toHaveLength(3);
    expect(first.messages).toEqual([1, 3]); // received, and refused
    expect(first.seen.has('n1')).toBe(false);
    expect([...second.seen.keys()].sort()).toEqual(['n1', 'n2', 'n3']);
    expect(second.messages).toEqual([3]);
    money.close();
  });

  it('fails calls made on a closed exchange', async () => {
    const fake = await startFake();
    const money = moneyOn(fake.address);
    money.close();
    await expect(money.authorize(authorize('late'))).rejects.toMatchObject({ grpcCode: grpc.status.CANCELLED });
  });
});

// A service from before the exchange, as a gateway may meet during a rollout: it serves one unary
// rpc and nothing else, so its server refuses the exchange stream (UNIMPLEMENTED) before taking
// anything.
async function startWithoutExchange<I extends object, O extends object>(path: string, input: Parameters<typeof deserializer>[0], output: Parameters<typeof serializer>[0], answer: (req: I) => O) {
  const server = new grpc.Server();
  const calls: I[] = [];
  server.register<I, O>(
    path,
    (call: grpc.ServerUnaryCall<I, O>, done: grpc.sendUnaryData<O>) => {
      calls.push(call.request);
      done(null, answer(call.request));
    },
    serializer(output) as (value: O) => Buffer,
    deserializer(input) as (buf: Buffer) => I,
    'unary',
  );
  const port = await bindServer(server, '127.0.0.1', 0);
  servers.push(server);
  return { address: `127.0.0.1:${port}`, port, server, calls };
}

describe('a service without the exchange', () => {
  it('refuses the stream before taking anything: its calls fail UNIMPLEMENTED at once, idempotent ones too, none sent again', async () => {
    const old = await startWithoutExchange(`/${billingV1.BillingService.typeName}/Authorize`, billingV1.AuthorizeRequestSchema, billingV1.AuthorizeResponseSchema, () => ({}));
    const client = createClient(billingV1.BillingService, old.address);
    let streams = 0;
    const open = () => {
      streams++;
      return client.exchange();
    };
    const exchange = new ExchangeClient<billingV1.ExchangeReply>(open, { service: billingV1.BillingService.typeName, resend: true, defaultTimeoutMs: 10_000 });
    const send = (id: string) => exchange.call('Authorize', (envelope) => ({ ...envelope, call: { case: 'authorize', value: authorize(id) } }));
    const started = Date.now();
    const errors = await Promise.all(['x1', 'x2'].map((id) => send(id).catch((e: unknown) => e)));
    for (const err of errors) expect(err).toMatchObject({ name: 'RpcError', grpcCode: grpc.status.UNIMPLEMENTED });
    expect(Date.now() - started).toBeLessThan(5_000); // not held until the deadline by resends
    expect(streams).toBe(1);
    expect(old.calls).toEqual([]); // the unary rpc is not made behind the caller's back
    exchange.close();
    client.close();
  });
});
