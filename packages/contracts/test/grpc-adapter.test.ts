import * as grpc from '@grpc/grpc-js';
import { GatewayError } from '@gw/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  healthV1,
  shutdownServer,
} from '../src/index.ts';

// The adapter's own test: a real grpc-js server on a loopback port with a small in-test
// implementation of the billing contract, called through the real typed client.
/** Every rpc of a service answering UNIMPLEMENTED-like errors, for tests that need only a few. */
function unimplemented<T extends object>(service: { methods: Array<{ localName: string }> }): T {
  return Object.fromEntries(
    service.methods.map((m) => [m.localName, async () => Promise.reject(new Error(`${m.localName} not in this test`))]),
  ) as T;
}

/** A server answering SERVING to health checks, bound to `port` (0: any free one). */
async function healthServer(port: number): Promise<{ server: grpc.Server; port: number }> {
  const server = new grpc.Server();
  const health = new HealthState();
  health.set(true);
  addHealthService(server, health);
  return { server, port: await bindServer(server, '127.0.0.1', port) };
}

/** A loopback port nothing listens on. */
function freePort(): Promise<number> {
  return new Promise<number>((resolve) => {
    const probe = new grpc.Server();
    probe.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (_e, p) => probe.tryShutdown(() => resolve(p)));
  });
}

describe('grpc adapter', () => {
  const server = new grpc.Server();
  const health = new HealthState();
  const unexpected: unknown[] = [];
  let address = '';

  beforeAll(async () => {
    addService(
      server,
      billingV1.BillingAdminService,
      {
        ...unimplemented<ServiceImpl<MethodsOf<typeof billingV1.BillingAdminService>>>(billingV1.BillingAdminService),
        createAccount: async (req) => {
          if (req.name === 'boom') throw new Error('db password=secret leaked?');
          if (req.name === '') throw new GatewayError('invalid_request', 'name is required');
          return { accountId: `acct-${req.name}` };
        },
        topUp: async (req) => ({ balance: req.credits * 2n, applied: true }),
        listAccounts: async () => {
          await new Promise((r) => setTimeout(r, 300));
          return { accounts: [] };
        },
        setKeyLimit: async () => {
          throw new GatewayError('api_key_limit_exceeded', 'limit', { limit_type: 'requests', period: 'daily' });
        },
        revokeApiKey: async () => ({ revokedAtUnixMs: 1n }),
      },
      { onUnexpectedError: (err) => unexpected.push(err) },
    );
    addHealthService(server, health);
    const port = await bindServer(server, '127.0.0.1', 0);
    address = `127.0.0.1:${port}`;
  });
  afterAll(() => shutdownServer(server, 1000));

  it('round-trips unary calls, int64 included', async () => {
    const client = createClient(billingV1.BillingAdminService, address);
    expect((await client.createAccount({ name: 'x' })).accountId).toBe('acct-x');
    expect((await client.topUp({ accountId: 'a', credits: 9_007_199_254_740_993n, reference: 'r' })).balance).toBe(
      18_014_398_509_481_986n,
    );
    client.close();
  });

  it('carries a domain error code and its details across', async () => {
    const client = createClient(billingV1.BillingAdminService, address);
    await expect(client.createAccount({ name: '' })).rejects.toMatchObject({
      name: 'GatewayError',
      code: 'invalid_request',
      message: 'name is required',
    });
    const err = await client.setKeyLimit({ keyId: 'k' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).details).toEqual({ limit_type: 'requests', period: 'daily' });
    client.close();
  });

  it('hides unexpected errors behind INTERNAL and reports them to the service', async () => {
    const client = createClient(billingV1.BillingAdminService, address);
    const err = await client.createAccount({ name: 'boom' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcError);
    expect((err as RpcError).grpcCode).toBe(grpc.status.INTERNAL);
    expect((err as Error).message).not.toContain('secret');
    expect(unexpected).toHaveLength(1);
    client.close();
  });

  it('waits for a server that is starting, within the deadline, instead of failing at once', async () => {
    const port = await freePort();
    const client = createClient(healthV1.Health, `127.0.0.1:${port}`, { defaultTimeoutMs: 5_000 });
    let late: grpc.Server | undefined;
    try {
      const call = client.check({ service: '' });
      await new Promise((r) => setTimeout(r, 300)); // the call is made while nothing listens
      late = (await healthServer(port)).server;
      await expect(call).resolves.toMatchObject({ status: healthV1.HealthCheckResponse_ServingStatus.SERVING });
    } finally {
      client.close();
      late?.forceShutdown();
    }
  });

  // grpc-js's own reconnect backoff grows to 1.6, 2.6, 4.1 s... (up to 2 minutes): a service away
  // for three seconds during a restart would be found again only after about five, past a call's
  // deadline. Our channels try again at least every second.
  it('finds a server that was away for 3 s within the call\'s 5 s deadline, not after a grown backoff', async () => {
    const first = await healthServer(0);
    const client = createClient(healthV1.Health, `127.0.0.1:${first.port}`, { defaultTimeoutMs: 5_000 });
    let second: grpc.Server | undefined;
    try {
      await client.check({ service: '' }); // connected
      first.server.forceShutdown();
      const call = client.check({ service: '' });
      await new Promise((r) => setTimeout(r, 3_000)); // away while the channel keeps trying
      second = (await healthServer(first.port)).server;
      // Within the 5 s deadline: grpc-js's default would try next at about 5.2 s.
      await expect(call).resolves.toMatchObject({ status: healthV1.HealthCheckResponse_ServingStatus.SERVING });
    } finally {
      client.close();
      second?.forceShutdown();
    }
  });

  // A long deadline (a Generate has 11 minutes) must not become a long hang when the service is
  // down: a call waits for it to be reachable only so long, then fails UNAVAILABLE.
  it('fails a call to a service that stays unreachable after the connect wait, not at its long deadline', async () => {
    const port = await freePort();
    const client = createClient(healthV1.Health, `127.0.0.1:${port}`, { defaultTimeoutMs: 120_000, connectWaitMs: 300 });
    try {
      await expect(client.check({ service: '' })).rejects.toMatchObject({ name: 'RpcError', grpcCode: grpc.status.UNAVAILABLE, message: expect.stringMatching(/could not be reached/) });
      const watching = (async () => {
        for await (const _ of client.watch({ service: '' })) return 'answered';
        return 'ended';
      })();
      await expect(watching).rejects.toMatchObject({ grpcCode: grpc.status.UNAVAILABLE, message: expect.stringMatching(/could not be reached/) });
    } finally {
      client.close();
    }
  });

  it('enforces deadlines', async () => {
    const client = createClient(billingV1.BillingAdminService, address, { defaultTimeoutMs: 50 });
    const err = await client.listAccounts({}).catch((e: unknown) => e);
    expect((err as RpcError).grpcCode).toBe(grpc.status.DEADLINE_EXCEEDED);
    client.close();
  });

  it('serves the standard health protocol, unary and streaming', async () => {
    const client = createClient(healthV1.Health, address);
    const { HealthCheckResponse_ServingStatus: S } = healthV1;
    expect((await client.check({})).status).toBe(S.NOT_SERVING);
    const seen: number[] = [];
    const controller = new AbortController();
    const watching = (async () => {
      try {
        for await (const res of client.watch({}, { signal: controller.signal, timeoutMs: 5000 })) {
          seen.push(res.status);
          if (seen.length === 2) controller.abort();
        }
      } catch {
        // cancelled by us
      }
    })();
    await new Promise((r) => setTimeout(r, 100));
    health.set(true);
    await watching;
    expect(seen).toEqual([S.NOT_SERVING, S.SERVING]);
    expect((await client.check({})).status).toBe(S.SERVING);
    client.close();
  });
});
