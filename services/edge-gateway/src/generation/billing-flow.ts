import { randomUUID } from 'node:crypto';
import { RpcError, type billingV1, type MoneyCalls } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { FastifyBaseLogger } from 'fastify';
import pRetry, { type Options as RetryOptions } from 'p-retry';
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

/**
 * Retries of a settle that got no answer (billing restarting, overloaded, or its database away):
 * a settle is idempotent by request id, so the retry answers the one charge whether or not the
 * lost attempt went through, and the client is told what it was really charged. Each attempt has
 * the call's deadline: about 20 s of billing away in all. Domain errors are answers, not retried.
 */
export const SETTLE_RETRIES: RetryOptions = { retries: 3, minTimeout: 250, factor: 2, randomize: true };

/** Charges the actual use. `reconcile`: the provider succeeded without usage (DECISIONS.md). */
export async function settleHold(
  billing: MoneyCalls,
  hold: Hold,
  usage: { units: bigint; inputTokens?: bigint; outputTokens?: bigint; reconcile?: boolean },
  retries: RetryOptions = SETTLE_RETRIES,
): Promise<Charge> {
  const settle = () =>
    billing.settle({
      requestId: hold.requestId,
      accountId: hold.accountId,
      unit: hold.unit,
      pricePerUnit: hold.price,
      units: usage.units,
      inputTokens: usage.inputTokens ?? 0n,
      outputTokens: usage.outputTokens ?? 0n,
      reconcile: usage.reconcile ?? false,
    });
  try {
    const res = await pRetry(settle, { ...retries, shouldRetry: ({ error }) => error instanceof RpcError });
    return { creditCharged: res.creditCharged, balanceAfter: res.balanceAfter };
  } catch (err) {
    if (!(err instanceof RpcError)) throw err;
    // An attempt may have gone through unanswered: not "nothing was charged". If none did, the
    // sweeper gives the hold back.
    throw new GatewayError(
      'upstream_error',
      'Billing did not confirm this request\'s charge. If it went through it is in your usage; otherwise the held credits return to your balance.',
    );
  }
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
