import { billingV1, RpcError, type MoneyCalls } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { settleHold, type Hold } from '../src/generation/billing-flow.ts';

const hold: Hold = { requestId: 'req-1', accountId: 'acct-1', unit: billingV1.BillingUnit.IMAGE, price: 3n };
const fast = { retries: 3, minTimeout: 1, factor: 1 };

/**
 * Billing's settle as far as the gateway sees it: idempotent by request id (a repeat answers the
 * first outcome), with the answers of the first `lose` attempts lost after the charge went
 * through (a deadline passing, a stream breaking) or, with `failAll`, every attempt failing.
 */
function billing(opts: { lose?: number; failAll?: number; refuse?: GatewayError }) {
  let balance = 1_000n;
  const settled = new Map<string, billingV1.SettleResponse>();
  const calls = { settle: 0 };
  const money = {
    settle: async (req: { requestId: string; units: bigint; pricePerUnit: bigint }) => {
      calls.settle++;
      if (opts.refuse) throw opts.refuse;
      if (opts.failAll !== undefined) throw new RpcError(opts.failAll, 'no answer');
      let res = settled.get(req.requestId);
      if (!res) {
        balance -= req.units * req.pricePerUnit;
        res = { creditCharged: req.units * req.pricePerUnit, balanceAfter: balance } as billingV1.SettleResponse;
        settled.set(req.requestId, res);
      }
      if (calls.settle <= (opts.lose ?? 0)) throw new RpcError(status.DEADLINE_EXCEEDED, 'the answer was lost');
      return res;
    },
  } as unknown as MoneyCalls;
  return { money, calls, balance: () => balance };
}

describe('settling a hold', () => {
  it('answers the one charge when the answers of earlier attempts were lost', async () => {
    const b = billing({ lose: 2 });
    const charge = await settleHold(b.money, hold, { units: 10n }, fast);
    expect(charge).toEqual({ creditCharged: 30n, balanceAfter: 970n });
    expect(b.calls.settle).toBe(3);
    expect(b.balance()).toBe(970n); // charged once
  });

  it('does not retry an answer: a refusal is thrown as it is', async () => {
    const refusal = new GatewayError('invalid_request', 'The operation does not match the request it refers to.');
    const b = billing({ refuse: refusal });
    await expect(settleHold(b.money, hold, { units: 10n }, fast)).rejects.toBe(refusal);
    expect(b.calls.settle).toBe(1);
  });

  it.each([
    ['deadline passing', status.DEADLINE_EXCEEDED],
    ['billing away', status.UNAVAILABLE],
  ])('gives up after its retries (%s) without claiming nothing was charged', async (_name, code) => {
    const b = billing({ failAll: code });
    const err = await settleHold(b.money, hold, { units: 10n }, fast).catch((e: unknown) => e);
    expect(b.calls.settle).toBe(4);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ code: 'upstream_error' });
    expect((err as Error).message).toMatch(/did not confirm/);
    expect((err as Error).message).not.toMatch(/not charged|nothing was charged/i);
  });
});
