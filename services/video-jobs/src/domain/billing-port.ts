import { billingV1, type MethodsOf, type ServiceClient } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { HoldLease } from '@gw/service-kit';

/** The billing calls video-jobs makes; a narrow port so tests can stand in for billing. */
export type BillingPort = Pick<ServiceClient<MethodsOf<typeof billingV1.BillingService>>, 'authorize' | 'settle' | 'release' | 'refund' | 'renewLease'>;

/**
 * This process's lease on its holds, one per billing client: renewed from the first hold on (every
 * 20 s) while the process lives, so a hold whose creation saga died with the process is released by
 * billing within minutes (the recovery sweep then finds it released and cancels the job).
 */
const leases = new WeakMap<BillingPort, HoldLease>();

function leaseOf(billing: BillingPort): HoldLease {
  let lease = leases.get(billing);
  if (!lease) {
    lease = new HoldLease();
    leases.set(billing, lease);
    lease.keep((owner) => billing.renewLease({ owner }));
  }
  return lease;
}

/** What billing needs to know about a job's charge. Its request id is the job id. */
export interface ChargeFacts {
  id: string;
  accountId: string;
  keyId: string;
  model: string;
  durationSeconds: number;
  pricePerSecond: bigint;
}

export const VIDEO_ENDPOINT = 'videos/generations';

/** Key state and the hold of duration x price, in one billing step. Idempotent by job id. */
export async function authorizeCharge(billing: BillingPort, job: ChargeFacts): Promise<void> {
  await billing.authorize({
    leaseOwner: leaseOf(billing).owner,
    requestId: job.id,
    accountId: job.accountId,
    keyId: job.keyId,
    endpoint: VIDEO_ENDPOINT,
    model: job.model,
    unit: billingV1.BillingUnit.SECOND,
    pricePerUnit: job.pricePerSecond,
    worstUnits: BigInt(job.durationSeconds),
    text: false,
  });
}

/**
 * Turns the hold into the charge: the duration, at the price stored with the hold. Idempotent: on a settled hold it answers the charge again, on a
 * released one a charge of 0, and on no hold at all `not_found`.
 */
export async function settleCharge(billing: BillingPort, job: ChargeFacts): Promise<{ creditCharged: bigint; balanceAfter: bigint }> {
  const res = await billing.settle({
    requestId: job.id,
    accountId: job.accountId,
    units: BigInt(job.durationSeconds),
  });
  return { creditCharged: res.creditCharged, balanceAfter: res.balanceAfter };
}

/**
 * Decides the charge of a job whose creation did not finish: cancels a hold that was never
 * settled, then reads what stands. Returns the settled charge, or null when nothing is charged
 * (no hold ever existed, or it is released now). Two idempotent calls, safe to repeat at any point
 * and from any replica. (A price of 0 reads as "nothing charged": cancelling such a job costs no
 * one anything.)
 */
export async function resolveCharge(billing: BillingPort, job: ChargeFacts): Promise<{ creditCharged: bigint; balanceAfter: bigint } | null> {
  try {
    await billing.release({ requestId: job.id, accountId: job.accountId });
  } catch (err) {
    if (err instanceof GatewayError && err.code === 'not_found') return null;
    throw err;
  }
  const settled = await settleCharge(billing, job);
  return settled.creditCharged > 0n ? settled : null;
}
