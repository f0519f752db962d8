import * as grpc from '@grpc/grpc-js';
import { addService, billingV1, bindServer, serveExchange, type MethodsOf, type ServiceImpl } from '@gw/contracts';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMoneyExchange } from '../src/generation/billing-exchange.ts';

// The gateway's money client on a real grpc-js server and loopback port: what it adds to the
// exchange adapter (tested in packages/contracts) is the hold lease and the refusal of values a
// message cannot carry. Billing itself is tested with this client end to end.
type Impl = ServiceImpl<MethodsOf<typeof billingV1.BillingService>>;

const servers: grpc.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.forceShutdown();
});

/** A billing that answers Authorize on the exchange and records lease owners and renewals. */
async function startFake() {
  const server = new grpc.Server();
  const seen: string[] = [];
  const owners: string[] = [];
  const renewals: string[] = [];
  const exchange: Impl['exchange'] = (call, ctx) =>
    serveExchange(call, ctx, {
      service: billingV1.BillingService.typeName,
      methodOf: () => 'Authorize',
      handle: async (req) => {
        if (req.call.case !== 'authorize') throw new Error('only authorize here');
        seen.push(req.call.value.requestId);
        owners.push(req.call.value.leaseOwner);
        return { case: 'authorize' as const, value: { held: req.call.value.worstUnits } };
      },
    });
  const renewLease: Impl['renewLease'] = async (req) => {
    renewals.push(req.owner);
    return { leaseUntilUnixMs: 0n };
  };
  const others = Object.fromEntries(billingV1.BillingService.methods.map((m) => [m.localName, async () => Promise.reject(new Error('not in this test'))]));
  addService(server, billingV1.BillingService, { ...others, exchange, renewLease } as unknown as Impl);
  const port = await bindServer(server, '127.0.0.1', 0);
  servers.push(server);
  return { address: `127.0.0.1:${port}`, seen, owners, renewals };
}

const authorize = (requestId: string) => ({ requestId, accountId: 'a', worstUnits: 7n });

describe('the money exchange', () => {
  it('leases every hold to its process and renews that lease from the first hold until closed', async () => {
    const fake = await startFake();
    const money = createMoneyExchange(fake.address, { leaseRenewMs: 50 });
    await new Promise((r) => setTimeout(r, 150));
    expect(fake.renewals).toEqual([]); // no hold, no lease to keep
    await money.authorize(authorize('lease-1'));
    await money.authorize({ ...authorize('lease-2'), leaseOwner: 'someone-else' }); // a caller's own owner is kept
    await vi.waitFor(() => expect(fake.renewals.length).toBeGreaterThanOrEqual(3), { timeout: 2_000, interval: 20 });
    expect(fake.owners).toEqual([money.leaseOwner, 'someone-else']);
    expect(new Set(fake.renewals)).toEqual(new Set([money.leaseOwner]));
    money.close();
    const renewed = fake.renewals.length;
    await new Promise((r) => setTimeout(r, 200));
    expect(fake.renewals.length).toBe(renewed);
  });

  it('refuses a call it cannot encode on its own, and the stream every other call shares goes on', async () => {
    const fake = await startFake();
    const money = createMoneyExchange(fake.address, { leaseRenewMs: 60_000 });
    const others = Array.from({ length: 5 }, (_, i) => money.authorize(authorize(`fine-${i}`)));
    const err = await money.authorize({ ...authorize('huge'), worstUnits: 2n ** 64n }).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'GatewayError', code: 'invalid_request', message: 'worstUnits is out of range.' });
    await expect(Promise.all(others)).resolves.toHaveLength(5);
    expect(fake.seen).not.toContain('huge');
    money.close();
  });
});
