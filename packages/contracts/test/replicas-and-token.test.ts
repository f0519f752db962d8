import * as grpc from '@grpc/grpc-js';
import { createServer, connect, type Server as NetServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type MethodsOf,
  type ServiceImpl,
  HealthState,
  RpcError,
  addHealthService,
  addService,
  billingV1,
  bindServer,
  createClient,
  ExchangeClient,
  type ClientOptions,
  healthV1,
  serveExchange,
} from '../src/index.ts';
import { grpcTarget } from '../src/grpc/client.ts';

// Replicas as a cluster runs them, on loopback: several servers of one service behind one address
// (a list here; DNS in a cluster), balanced round-robin by the client; a replica that dies or hangs
// (its connection open, nothing answered, as a stopped process) is left within about two seconds
// by HTTP/2 keepalive. And the shared service token: a server with one refuses calls without it.

type Billing = ServiceImpl<MethodsOf<typeof billingV1.BillingService>>;

function unimplemented<T extends object>(service: { methods: Array<{ localName: string }> }): T {
  return Object.fromEntries(service.methods.map((m) => [m.localName, async () => Promise.reject(new Error(`${m.localName} not in this test`))])) as T;
}

/** Authorize over billing's exchange as the gateway makes it: idempotent, so resent after a broken stream. */
function moneyOn(address: string, opts: ClientOptions = {}) {
  const client = createClient(billingV1.BillingService, address, opts);
  const exchange = new ExchangeClient<billingV1.ExchangeReply>(() => client.exchange(), { service: billingV1.BillingService.typeName, resend: true, defaultTimeoutMs: opts.defaultTimeoutMs });
  return {
    authorize: (value: { accountId: string }) =>
      exchange.request<billingV1.AuthorizeResponse>('Authorize', 'authorize', (envelope) => ({ ...envelope, call: { case: 'authorize', value } })),
    close() {
      exchange.close();
      client.close();
    },
  };
}

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).toReversed()) await step();
});

/** A billing server answering LookupApiKey with its own name (as the account), and Authorize (on the exchange) with its number. */
const byHeld = (held: bigint) => (held === 1n ? 'a' : 'b');
async function replica(name: string, token?: string, options: grpc.ServerOptions = {}): Promise<{ server: grpc.Server; port: number }> {
  const server = new grpc.Server(options);
  const impl: Billing = {
    ...unimplemented<Billing>(billingV1.BillingService),
    lookupApiKey: async () => ({ keyId: 'k', accountId: name }),
    renewLease: async () => ({}),
    exchange: (call, ctx) =>
      serveExchange(call, ctx, {
        service: billingV1.BillingService.typeName,
        methodOf: () => 'Authorize',
        // Which replica answered, as the credits held: a → 1, b → 2.
        handle: async () => ({ case: 'authorize' as const, value: { held: name === 'a' ? 1n : 2n } }),
      }) as Promise<void>,
  };
  addService(server, billingV1.BillingService, impl, token === undefined ? {} : { token });
  const health = new HealthState();
  health.set(true);
  addHealthService(server, health);
  const port = await bindServer(server, '127.0.0.1', 0);
  cleanup.push(() => server.forceShutdown());
  return { server, port };
}

/**
 * A TCP relay in front of a server that can freeze: it then stops passing bytes either way and
 * accepts new connections without answering them, as the kernel does for a stopped (SIGSTOP)
 * process. The connections stay open: only keepalive can tell.
 */
async function freezable(port: number): Promise<{ port: number; freeze(): void; hold(ms: number): void; connections(): number }> {
  let frozen = false;
  let accepted = 0;
  const sockets = new Set<Socket>();
  const relay: NetServer = createServer((client) => {
    accepted++;
    sockets.add(client);
    client.on('error', () => {});
    if (frozen) return client.pause();
    const upstream = connect(port, '127.0.0.1');
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    const pass = (from: Socket, to: Socket) => from.on('data', (chunk) => !frozen && to.write(chunk));
    pass(client, upstream);
    pass(upstream, client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
  cleanup.push(() => {
    for (const s of sockets) s.destroy();
    return new Promise((r) => relay.close(r));
  });
  return {
    port: (relay.address() as { port: number }).port,
    freeze: () => {
      frozen = true;
      for (const s of sockets) s.pause();
    },
    /** Holds every byte, both ways, for `ms`, then passes it all on: a slow peer, not a lost one. */
    hold: (ms) => {
      for (const s of sockets) s.pause();
      setTimeout(() => {
        for (const s of sockets) s.resume();
      }, ms);
    },
    connections: () => accepted,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('service addresses', () => {
  it('a list of IPs is a static set of replicas; one name is resolved by DNS', () => {
    expect(grpcTarget('127.0.0.1:50051')).toBe('127.0.0.1:50051');
    expect(grpcTarget('dns:///billing-headless:50051')).toBe('dns:///billing-headless:50051');
    expect(grpcTarget('127.0.0.1:1, 127.0.0.1:2')).toBe('ipv4:127.0.0.1:1,127.0.0.1:2');
    expect(grpcTarget('[::1]:1,[::1]:2')).toBe('ipv6:[::1]:1,[::1]:2');
    expect(() => grpcTarget('billing-a:1,billing-b:2')).toThrow(/by IP and port/);
  });
});

describe('replicas behind one address', () => {
  it('spreads calls round-robin over every replica', async () => {
    const [a, b] = await Promise.all([replica('a'), replica('b')]);
    const client = createClient(billingV1.BillingService, `127.0.0.1:${a.port},127.0.0.1:${b.port}`);
    cleanup.push(() => client.close());
    await client.lookupApiKey({}); // connected
    await sleep(200); // both subchannels ready
    const served = await Promise.all(Array.from({ length: 20 }, () => client.lookupApiKey({}).then((r) => r.accountId)));
    expect(served.filter((s) => s === 'a').length).toBeGreaterThanOrEqual(5);
    expect(served.filter((s) => s === 'b').length).toBeGreaterThanOrEqual(5);
  });

  it('a replica that dies: later calls all go to the other, none fails', async () => {
    const [a, b] = await Promise.all([replica('a'), replica('b')]);
    const client = createClient(billingV1.BillingService, `127.0.0.1:${a.port},127.0.0.1:${b.port}`);
    cleanup.push(() => client.close());
    await Promise.all(Array.from({ length: 4 }, () => client.lookupApiKey({})));
    a.server.forceShutdown();
    await sleep(300);
    const served = await Promise.all(Array.from({ length: 20 }, () => client.lookupApiKey({}).then((r) => r.accountId)));
    expect(served).toEqual(Array(20).fill('b'));
  });

  it('a replica that hangs (connection open, nothing answered) is left within about 2 s: later calls succeed on the other', async () => {
    const [a, b] = await Promise.all([replica('a'), replica('b')]);
    const hung = await freezable(a.port);
    const client = createClient(billingV1.BillingService, `127.0.0.1:${hung.port},127.0.0.1:${b.port}`, { defaultTimeoutMs: 10_000 });
    cleanup.push(() => client.close());
    await client.lookupApiKey({}); // connected
    await sleep(300); // both subchannels ready
    const before = await Promise.all(Array.from({ length: 10 }, () => client.lookupApiKey({}).then((r) => r.accountId)));
    expect(new Set(before)).toEqual(new Set(['a', 'b']));

    hung.freeze();
    // A call sent to the hung replica now is in flight there: it fails UNAVAILABLE when keepalive
    // closes the connection (within about 2 s), not at its 10 s deadline.
    const inFlight = await Promise.allSettled(Array.from({ length: 4 }, () => client.lookupApiKey({}, { timeoutMs: 10_000 })));
    const outcomes = inFlight.map((r) => (r.status === 'rejected' ? (r.reason as RpcError).grpcCode : r.value.accountId));
    expect(outcomes.every((o) => o === grpc.status.UNAVAILABLE || o === 'b')).toBe(true);
    const later = await Promise.all(Array.from({ length: 20 }, () => client.lookupApiKey({}, { timeoutMs: 10_000 }).then((r) => r.accountId)));
    expect(later).toEqual(Array(20).fill('b'));
  });

  it('the money exchange: the replica under its stream hangs; the calls on it are answered by the other', async () => {
    const [a, b] = await Promise.all([replica('a'), replica('b')]);
    const relays = { a: await freezable(a.port), b: await freezable(b.port) };
    const money = moneyOn(`127.0.0.1:${relays.a.port},127.0.0.1:${relays.b.port}`, { defaultTimeoutMs: 10_000 });
    cleanup.push(() => money.close());
    const under = byHeld((await money.authorize({ accountId: 'acct' })).held);
    relays[under].freeze();
    const other = under === 'a' ? 'b' : 'a';
    // Sent on the stream to the hung replica: unanswered until keepalive closes its connection,
    // then sent again (authorize is idempotent) on a new stream, to the live replica.
    const calls = await Promise.all(Array.from({ length: 10 }, () => money.authorize({ accountId: 'acct' }).then((r) => byHeld(r.held))));
    expect(calls).toEqual(Array(10).fill(other));
  });

  it('the exchange moves to a new stream (balanced afresh) once its stream is old', async () => {
    const [a, b] = await Promise.all([replica('a'), replica('b')]);
    const client = createClient(billingV1.BillingService, `127.0.0.1:${a.port},127.0.0.1:${b.port}`);
    cleanup.push(() => client.close());
    await client.lookupApiKey({});
    await sleep(200);
    const exchange = new ExchangeClient<billingV1.ExchangeReply>(() => client.exchange(), { service: billingV1.BillingService.typeName, resend: true, rotateMs: 100 });
    cleanup.push(() => exchange.close());
    const seen = new Set<string>();
    for (let i = 0; i < 8; i++) {
      const res = await exchange.call('Authorize', (env) => ({ ...env, call: { case: 'authorize', value: {} } }));
      seen.add(byHeld((res.result.value as { held: bigint }).held));
      await sleep(120);
    }
    expect(seen).toEqual(new Set(['a', 'b']));
  });
});

describe('connections asked to close by age (GRPC_MAX_CONNECTION_AGE_MS, the chart sets 5 min)', () => {
  it('unary calls and the money exchange go on across many closings, none failing', async () => {
    // As the service runner sets it, with an age of 200 ms instead of minutes.
    const { port } = await replica('a', undefined, { 'grpc.max_connection_age_ms': 200, 'grpc.max_connection_age_grace_ms': 15 * 60_000 });
    const relay = await freezable(port); // counts the connections made
    const client = createClient(billingV1.BillingService, `127.0.0.1:${relay.port}`);
    const money = moneyOn(`127.0.0.1:${relay.port}`);
    cleanup.push(() => (client.close(), money.close()));
    const until = Date.now() + 2_000;
    let calls = 0;
    while (Date.now() < until) {
      const [account, hold] = await Promise.all([client.lookupApiKey({}), money.authorize({ accountId: 'acct' })]);
      expect([account.accountId, hold.held]).toEqual(['a', 1n]);
      calls++;
      await sleep(20);
    }
    expect(calls).toBeGreaterThan(20);
    // The connections were closed and made again, many times.
    expect(relay.connections()).toBeGreaterThan(5);
  });
});

describe('the service token', () => {
  it('a server with a token refuses a call without it (UNAUTHENTICATED) or with another, and serves one with it', async () => {
    const token = 'a-long-shared-service-token';
    const { port } = await replica('a', token);
    const address = `127.0.0.1:${port}`;
    const none = createClient(billingV1.BillingService, address, { token: '' });
    const wrong = createClient(billingV1.BillingService, address, { token: 'another-long-service-token' });
    const right = createClient(billingV1.BillingService, address, { token });
    cleanup.push(() => (none.close(), wrong.close(), right.close()));

    const missing = await none.lookupApiKey({}).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(RpcError);
    expect((missing as RpcError).grpcCode).toBe(grpc.status.UNAUTHENTICATED);
    expect((missing as Error).message).toMatch(/no service token.*SERVICE_TOKEN/);
    const bad = await wrong.lookupApiKey({}).catch((e: unknown) => e);
    expect((bad as RpcError).grpcCode).toBe(grpc.status.UNAUTHENTICATED);
    expect((bad as Error).message).toMatch(/wrong service token/);
    // The bidirectional exchange is refused too: no call on it is served.
    const noneMoney = moneyOn(address, { token: '' });
    cleanup.push(() => noneMoney.close());
    const refused = await noneMoney.authorize({ accountId: 'acct' }).catch((e: unknown) => e);
    expect((refused as RpcError).grpcCode).toBe(grpc.status.UNAUTHENTICATED);

    expect((await right.lookupApiKey({})).accountId).toBe('a');
    const money = moneyOn(address, { token });
    cleanup.push(() => money.close());
    expect((await money.authorize({ accountId: 'acct' })).held).toBe(1n);
    // Health checks (Kubernetes probes) need no token.
    const health = createClient(healthV1.Health, address, { token: '' });
    cleanup.push(() => health.close());
    expect((await health.check({ service: '' })).status).toBe(healthV1.HealthCheckResponse_ServingStatus.SERVING);
  });

  it('clients send SERVICE_TOKEN from the environment by default', async () => {
    const token = 'token-from-the-environment';
    const { port } = await replica('a', token);
    const saved = process.env.SERVICE_TOKEN;
    process.env.SERVICE_TOKEN = token;
    try {
      const client = createClient(billingV1.BillingService, `127.0.0.1:${port}`);
      cleanup.push(() => client.close());
      expect((await client.lookupApiKey({})).accountId).toBe('a');
    } finally {
      if (saved === undefined) delete process.env.SERVICE_TOKEN;
      else process.env.SERVICE_TOKEN = saved;
    }
  });
});

// A keepalive ping's answer can come late from a live peer: behind the answer data already on its
// way, or read late by a caller whose event loop was busy (its timers run before it reads the
// socket). With the timeout equal to the ping interval (1 s), a busy gateway dropped the text
// service's connection in the middle of long streams. Connections that carry long answers wait
// longer (`keepaliveTimeoutMs`); the others still leave a hung replica within about 2 s.

type Admin = ServiceImpl<MethodsOf<typeof billingV1.BillingAdminService>>;

/** A server whose `createAccount` answers after 1.5 s: a call in flight while the relay holds its bytes. */
async function slowServer(): Promise<number> {
  const server = new grpc.Server();
  const impl: Admin = {
    ...unimplemented<Admin>(billingV1.BillingAdminService),
    createAccount: async (req) => {
      await sleep(1_500);
      return { accountId: `done ${req.name}` };
    },
  };
  addService(server, billingV1.BillingAdminService, impl);
  const port = await bindServer(server, '127.0.0.1', 0);
  cleanup.push(() => server.forceShutdown());
  return port;
}

describe('keepalive on a slow but live connection', () => {
  it('with the timeout equal to the ping interval, a ping answered 1 s late drops the connection and its call', async () => {
    const relay = await freezable(await slowServer());
    const client = createClient(billingV1.BillingAdminService, `127.0.0.1:${relay.port}`, { keepaliveMs: 200, defaultTimeoutMs: 10_000 });
    cleanup.push(() => client.close());
    const call = client.createAccount({ name: 'a' }).catch((e: unknown) => e);
    await sleep(300);
    relay.hold(1_000);
    const outcome = await call;
    expect(outcome).toBeInstanceOf(RpcError);
    expect((outcome as RpcError).grpcCode).toBe(grpc.status.UNAVAILABLE);
  });

  it('with a longer timeout the same late answer keeps the connection, and the call finishes', async () => {
    const relay = await freezable(await slowServer());
    const client = createClient(billingV1.BillingAdminService, `127.0.0.1:${relay.port}`, {
      keepaliveMs: 200,
      keepaliveTimeoutMs: 3_000,
      defaultTimeoutMs: 10_000,
    });
    cleanup.push(() => client.close());
    const call = client.createAccount({ name: 'b' });
    await sleep(300);
    relay.hold(1_000);
    await expect(call).resolves.toEqual(expect.objectContaining({ accountId: 'done b' }));
  });
});
