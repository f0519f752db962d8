import { randomUUID } from 'node:crypto';
import type { billingV1, MoneyCalls } from '@gw/contracts';
import type { FastifyBaseLogger } from 'fastify';
import type { KeyRecord } from '../auth/key-cache.ts';
import type { ResolvedModel } from '../state/catalog-cache.ts';

/** Credits held for one generation request; settled or released exactly once. */
export interface Hold {
  /** Our own id: never the client's x-request-id, which a client could reuse. */
  requestId: string;
  accountId: string;
  unit: billingV1.BillingUnit;
  price: bigint;
}

export interface Charge {
  creditCharged: bigint;
  balanceAfter: bigint;
}

/**
 * Steps 6 and 8 of the order of checks in one billing call: key state (reconciliation, per-key
 * limits), then the hold of the worst-case cost; with `checkRateLimit`, step 2 first (the route
 * deferred it). Refusals arrive as domain errors.
 */
export async function holdCredits(
  billing: MoneyCalls,
  key: KeyRecord,
  model: ResolvedModel,
  endpoint: string,
  worstUnits: bigint,
  text: boolean,
  opts: { checkRateLimit?: boolean; requestId?: string } = {},
): Promise<Hold> {
  const requestId = opts.requestId ?? randomUUID();
  await billing.authorize({
    requestId,
    accountId: key.accountId,
    keyId: key.keyId,
    endpoint,
    model: model.id,
    unit: model.unit,
    pricePerUnit: model.price,
    worstUnits,
    text,
    checkRateLimit: opts.checkRateLimit ?? false,
  });
  return { requestId, accountId: key.accountId, unit: model.unit, price: model.price };
}

/** Charges the actual use. `reconcile`: the provider succeeded without usage (DECISIONS.md). */
export async function settleHold(
  billing: MoneyCalls,
  hold: Hold,
  usage: { units: bigint; inputTokens?: bigint; outputTokens?: bigint; reconcile?: boolean },
): Promise<Charge> {
  const res = await billing.settle({
    requestId: hold.requestId,
    accountId: hold.accountId,
    unit: hold.unit,
    pricePerUnit: hold.price,
    units: usage.units,
    inputTokens: usage.inputTokens ?? 0n,
    outputTokens: usage.outputTokens ?? 0n,
    reconcile: usage.reconcile ?? false,
  });
  return { creditCharged: res.creditCharged, balanceAfter: res.balanceAfter };
}

/**
 * Gives the whole hold back (the request failed; nothing is charged). A failure here is logged,
 * not thrown: the client gets the original error, and billing's sweeper releases holds that
 * outlive any request.
 */
export async function releaseHold(billing: MoneyCalls, hold: Hold, log: FastifyBaseLogger): Promise<void> {
  await billing.release({ requestId: hold.requestId, accountId: hold.accountId }).catch((err: unknown) => {
    log.error({ err, holdId: hold.requestId }, 'hold release failed; the sweeper will release it');
  });
}

/** The `service` object of spec 2.3. */
export function serviceObject(charge: Charge): { credit_charged: number; balance_after: number } {
  return { credit_charged: Number(charge.creditCharged), balance_after: Number(charge.balanceAfter) };
}
