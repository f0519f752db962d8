import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { type MethodsOf, type ServiceImpl, addService, billingV1, bindServer, createClient, shutdownServer } from '../src/index.ts';

// A service stopped on purpose (SIGTERM: shutdownServer) sends its callers a graceful GOAWAY and
// lets the calls in flight finish. The callers' keepalive pings a second later must not drop those
// calls: grpc-js 1.14.7 sent a PING on the draining connection, which cannot carry one, took the
// failure for a dead connection and failed every call on it UNAVAILABLE "Connection dropped"
// (grpc/grpc-node#3068; patched in patches/@grpc__grpc-js@1.14.7.patch). A media job running
// when media was stopped was lost that way instead of finished.

type Billing = ServiceImpl<MethodsOf<typeof billingV1.BillingAdminService>>;

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).toReversed()) await step();
});

describe('a server shutting down gracefully', () => {
  it('finishes a call in flight that outlasts several of the caller’s keepalive pings', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const server = new grpc.Server();
    const impl = Object.fromEntries(
      billingV1.BillingAdminService.methods.map((m) => [m.localName, async () => Promise.reject(new Error(`${m.localName} not in this test`))]),
    ) as unknown as Billing;
    impl.createAccount = async (req) => {
      started();
      await new Promise((r) => setTimeout(r, 3_500));
      return { accountId: `finished ${req.name}` };
    };
    addService(server, billingV1.BillingAdminService, impl);
    const port = await bindServer(server, '127.0.0.1', 0);
    cleanup.push(() => server.forceShutdown());
    // Keepalive every 500 ms: at least five pings fall while the call drains.
    const client = createClient(billingV1.BillingAdminService, `127.0.0.1:${port}`, { keepaliveMs: 500, defaultTimeoutMs: 20_000 });
    cleanup.push(() => client.close());

    const call = client.createAccount({ name: 'slow' });
    await running;
    const stopped = shutdownServer(server, 15_000);

    await expect(call).resolves.toEqual(expect.objectContaining({ accountId: 'finished slow' }));
    await stopped;
  }, 30_000);
});
