import * as grpc from '@grpc/grpc-js';
import { connect, createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type MethodsOf, type ServiceImpl, RpcError, addService, billingV1, bindServer, createClient } from '../src/index.ts';

// A keepalive ping's answer can come late from a live peer: behind the answer data already on its
// way, or read late by a caller whose event loop was busy (its timers run before it reads the
// socket). With the timeout equal to the ping interval (1 s), a busy gateway dropped the text
// service's connection in the middle of long streams. Connections that carry long answers wait
// longer (`keepaliveTimeoutMs`); the others still leave a hung replica within about 2 s.

type Admin = ServiceImpl<MethodsOf<typeof billingV1.BillingAdminService>>;

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).toReversed()) await step();
});

/** A TCP relay that can hold every byte, both ways, for a while, and then pass it all on: a slow peer, not a lost one. */
async function delayable(port: number): Promise<{ port: number; hold(ms: number): void }> {
  const sockets = new Set<Socket>();
  const relay = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
    }
    client.pipe(upstream);
    upstream.pipe(client);
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
    hold: (ms) => {
      for (const s of sockets) s.pause();
      setTimeout(() => {
        for (const s of sockets) s.resume();
      }, ms);
    },
  };
}

/** A server whose `createAccount` answers after 1.5 s: a call in flight while the relay holds its bytes. */
async function slowServer(): Promise<number> {
  const server = new grpc.Server();
  const impl = Object.fromEntries(
    billingV1.BillingAdminService.methods.map((m) => [m.localName, async () => Promise.reject(new Error(`${m.localName} not in this test`))]),
  ) as unknown as Admin;
  impl.createAccount = async (req) => {
    await new Promise((r) => setTimeout(r, 1_500));
    return { accountId: `done ${req.name}` };
  };
  addService(server, billingV1.BillingAdminService, impl);
  const port = await bindServer(server, '127.0.0.1', 0);
  cleanup.push(() => server.forceShutdown());
  return port;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('keepalive on a slow but live connection', () => {
  it('with the timeout equal to the ping interval, a ping answered 1 s late drops the connection and its call', async () => {
    const relay = await delayable(await slowServer());
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
    const relay = await delayable(await slowServer());
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
