import { RpcError, type billingV1, type MethodsOf, type MoneyCalls, type ServiceClient } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { FastifyBaseLogger } from 'fastify';
import type { Options as RetryOptions } from 'p-retry';
import type { KeyRecord } from '../auth/key-cache.ts';
import type { ResolvedModel } from '../state/catalog-cache.ts';
import { IN_BACKGROUND, ON_REQUEST, untilAnswered } from './retries.ts';

/** Credits held for one generation request; settled or released exactly once. */
export interface Hold {
  /** Our own id, the `x-request-id` the client sees (a media job's id for media); never one a client chose. */
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
 * deferred it). Refusals arrive as domain errors. `ids.requestId` is the request's id in billing
 * (the `x-request-id` the client sees); `ids.clientRequestId` the client's own, recorded beside it.
 */
export async function holdCredits(
  billing: MoneyCalls,
  log: FastifyBaseLogger,
  key: KeyRecord,
  model: ResolvedModel,
  endpoint: string,
  worstUnits: bigint,
  text: boolean,
  ids: { requestId: string; clientRequestId: string },
  opts: { checkRateLimit?: boolean; retries?: RetryOptions } = {},
): Promise<Hold> {
  const { requestId } = ids;
  const authorize = () =>
    billing.authorize({
      requestId,
      clientRequestId: ids.clientRequestId,
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
  // Idempotent by request id: a retry after a lost answer finds the one hold.
  try {
    await untilAnswered(authorize, opts.retries ?? ON_REQUEST);
  } catch (err) {
    // Never answered: billing may have taken the hold all the same. It is given back once billing
    // is reachable again, not left to the sweeper's 30 minutes of a smaller available balance.
    if (err instanceof RpcError) releaseInBackground(billing, { requestId, accountId: key.accountId }, log);
    throw err;
  }
  return { requestId, accountId: key.accountId, unit: model.unit, price: model.price };
}

/** The billing calls of a settlement: settle over the exchange; release and refund to take a charge back. */
export interface SettleCalls {
  money: MoneyCalls;
  billing: Pick<ServiceClient<MethodsOf<typeof billingV1.BillingService>>, 'release' | 'refund'>;
}

/**
 * Charges the actual use. `reconcile`: the provider succeeded without usage (DECISIONS.md).
 * Idempotent by request id, so a settle whose answer is lost is sent again and answers the one
 * charge that happened. If billing stays away, whatever the request may have cost is taken back
 * in the background (`undoCharge`) and the client is told it is not charged: the truth, once
 * that has run.
 */
export async function settleHold(
  calls: SettleCalls,
  log: FastifyBaseLogger,
  hold: Hold,
  usage: { units: bigint; inputTokens?: bigint; outputTokens?: bigint; reconcile?: boolean },
  retries: RetryOptions = ON_REQUEST,
): Promise<Charge> {
  const settle = () =>
    calls.money.settle({
      requestId: hold.requestId,
      accountId: hold.accountId,
      units: usage.units,
      inputTokens: usage.inputTokens ?? 0n,
      outputTokens: usage.outputTokens ?? 0n,
      reconcile: usage.reconcile ?? false,
    });
  try {
    const res = await untilAnswered(settle, retries);
    return { creditCharged: res.creditCharged, balanceAfter: res.balanceAfter };
  } catch (err) {
    if (!(err instanceof RpcError)) throw err;
    log.error({ err, holdId: hold.requestId }, 'a settle got no answer; taking back whatever it may have charged');
    void undoCharge(calls.billing, hold, log);
    throw new GatewayError('upstream_error', 'Billing did not confirm the charge of this request, so it is not charged: its hold is given back.');
  }
}

/**
 * Takes back what a request whose settle went unanswered may have cost: releases its hold (a
 * settle still on its way then charges nothing) and refunds a charge that went through. Both are
 * idempotent; retried in the background while billing is away. Only a gateway dying within those
 * 10 minutes leaves it undone (an open hold is still released by billing's sweeper).
 */
async function undoCharge(billing: SettleCalls['billing'], hold: Hold, log: FastifyBaseLogger): Promise<void> {
  const ids = { requestId: hold.requestId, accountId: hold.accountId };
  const undo = async () => {
    await billing.release(ids);
    // A released hold has no charge to refund: `not_found`.
    const refunded = await billing.refund(ids).catch((err: unknown) => {
      if (err instanceof GatewayError && err.code === 'not_found') return undefined;
      throw err;
    });
    return refunded?.creditRefunded ?? 0n;
  };
  await untilAnswered(undo, IN_BACKGROUND).then(
    (refunded) => log.warn({ holdId: hold.requestId, refunded: Number(refunded) }, 'an unconfirmed charge is taken back'),
    (err: unknown) => log.error({ err, holdId: hold.requestId }, 'taking back an unconfirmed charge failed; an open hold is left to the sweeper'),
  );
}

/**
 * Gives the whole hold back (the request failed; nothing is charged). A failure here is logged,
 * not thrown: the client gets the original error. Unanswered, the release goes on in the
 * background; billing's sweeper releases what still outlives any request.
 */
export async function releaseHold(billing: MoneyCalls, hold: Hold, log: FastifyBaseLogger): Promise<void> {
  const ids = { requestId: hold.requestId, accountId: hold.accountId };
  await billing.release(ids).catch((err: unknown) => {
    if (err instanceof RpcError) releaseInBackground(billing, ids, log);
    else log.error({ err, holdId: hold.requestId }, 'hold release refused');
  });
}

/**
 * Releases a hold that may exist, retrying while billing is away (10 minutes at most). Billing
 * answering `not_found` means there was no hold to give back.
 */
function releaseInBackground(billing: MoneyCalls, ids: { requestId: string; accountId: string }, log: FastifyBaseLogger): void {
  log.warn({ holdId: ids.requestId }, 'a hold release got no answer; retrying in the background');
  void untilAnswered(() => billing.release(ids), IN_BACKGROUND).then(
    () => log.warn({ holdId: ids.requestId }, 'a hold left by a failed request is given back'),
    (err: unknown) => {
      if (err instanceof GatewayError && err.code === 'not_found') return;
      log.error({ err, holdId: ids.requestId }, 'releasing a hold failed; the sweeper will release it');
    },
  );
}

/** The `service` object of spec 2.3. */
export function serviceObject(charge: Charge): { credit_charged: number; balance_after: number } {
  return { credit_charged: Number(charge.creditCharged), balance_after: Number(charge.balanceAfter) };
}
