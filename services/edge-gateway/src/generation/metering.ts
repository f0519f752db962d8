import { RpcError, type billingV1, type MethodsOf, type ServiceClient, type textV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { Options as RetryOptions } from 'p-retry';
import type { KeyRecord } from '../auth/key-cache.ts';
import type { GatewayDeps } from '../deps.ts';
import type { ResolvedModel } from '../state/catalog-cache.ts';
import type { MoneyCalls } from './billing-exchange.ts';
import { IN_BACKGROUND, ON_REQUEST, untilAnswered } from './retries.ts';

/*
 * Metering of the requests the edge answers itself, text and images: hold the worst case before
 * the provider runs (`holdFor`, `holdCredits`), then settle to the actual use (`settleHold`,
 * `settleText`) or release on failure (`releaseHold`); each hold is settled or released once.
 *
 * Video is metered by video-jobs (`services/video-jobs/src/domain/billing-port.ts`), not here: a
 * video job outlives the request that creates it (the provider works for minutes after the
 * answer, the job can fail and be refunded later, a replica dying mid-creation is recovered by a
 * sweep), so the process that owns the job owns its charge. The edge only forwards the creation.
 */

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

/** What one request asks billing to hold. */
export interface HoldSpec {
  /** Whose credits, by which key. */
  key: KeyRecord;
  model: ResolvedModel;
  /** Endpoint path below the base path (`chat/completions`, `images/edits`...). */
  endpoint: string;
  /** Worst-case quantity in the model's unit (tokens or images) the hold covers. */
  worstUnits: bigint;
  /** A text endpoint: billing applies reconciliation and the per-key token limits. */
  text: boolean;
  /** The request's id in billing (the `x-request-id` the client sees). */
  requestId: string;
  /** The client's own `x-request-id`, recorded beside ours ('' when none). */
  clientRequestId: string;
  /** Count the account rate limit first, in the same call: the route deferred step 2 to here. */
  checkRateLimit: boolean;
}

/**
 * Steps 6 and 8 of the order of checks in one billing call: key state (reconciliation, per-key
 * limits), then the hold of the worst-case cost; with `checkRateLimit`, step 2 first. Refusals
 * arrive as domain errors.
 */
export async function holdCredits(billing: MoneyCalls, log: FastifyBaseLogger, spec: HoldSpec, retries: RetryOptions = ON_REQUEST): Promise<Hold> {
  const { key, model, requestId } = spec;
  const authorize = () =>
    billing.authorize({
      requestId,
      clientRequestId: spec.clientRequestId,
      accountId: key.accountId,
      keyId: key.keyId,
      endpoint: spec.endpoint,
      model: model.id,
      unit: model.unit,
      pricePerUnit: model.price,
      worstUnits: spec.worstUnits,
      text: spec.text,
      checkRateLimit: spec.checkRateLimit,
    });
  // Idempotent by request id: a retry after a lost answer finds the one hold.
  try {
    await untilAnswered(authorize, retries);
  } catch (err) {
    // Never answered: billing may have taken the hold all the same. It is given back once billing
    // is reachable again, not left to the sweeper's 30 minutes of a smaller available balance.
    if (err instanceof RpcError) releaseInBackground(billing, { requestId, accountId: key.accountId }, log);
    throw err;
  }
  return { requestId, accountId: key.accountId, unit: model.unit, price: model.price };
}

/**
 * The hold of a request of the public API: its key and ids from the request, and the account rate
 * limit counted in the same call when the route deferred it (`rateLimitPending`, see
 * route-checks.ts); from here on it is billing's to count. `requestId` defaults to the request's
 * id (a media job's id for images).
 */
export function holdFor(
  deps: Pick<GatewayDeps, 'money'>,
  request: FastifyRequest,
  hold: Pick<HoldSpec, 'model' | 'endpoint' | 'worstUnits' | 'text'> & { requestId?: string; log?: FastifyBaseLogger },
): Promise<Hold> {
  const checkRateLimit = request.rateLimitPending;
  request.rateLimitPending = false;
  const { log = request.log, requestId = request.id, ...spec } = hold;
  return holdCredits(deps.money, log, { ...spec, key: request.apiKey, requestId, clientRequestId: request.clientRequestId, checkRateLimit });
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

/** Settles a text hold from the provider's usage; no usage = minimum charge and reconciliation. */
export function settleText(calls: SettleCalls, log: FastifyBaseLogger, hold: Hold, usage: textV1.Usage | undefined): Promise<Charge> {
  if (!usage) return settleHold(calls, log, hold, { units: 0n, reconcile: true });
  return settleHold(calls, log, hold, { units: usage.billableTokens, inputTokens: usage.inputTokens, outputTokens: usage.outputTokens });
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
