import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { eventsV1 } from '@gw/contracts';
import { enqueueEvent } from '@gw/service-kit';
import { applyOps } from '../domain/money.ts';
import { handleEachEventOnce, type SubscriberDeps } from './each-event-once.ts';

export const REFUND_COMPLETED_SUBJECT = 'billing.refund.completed';
const CONSUMER = 'billing-video-refunds';

/**
 * Refunds the charge of every failed video job, exactly once: the event id is recorded, the
 * refund applied (itself idempotent by job id) and the `billing.refund.completed` announcement
 * queued, all in one transaction. A redelivered event, or one delivered while billing was down,
 * ends in the same single refund.
 */
export function refundFailedVideoJobs(deps: SubscriberDeps): Promise<() => Promise<void>> {
  return handleEachEventOnce(deps, {
    durable: CONSUMER,
    subject: 'video.job.failed',
    decode: (data) => fromBinary(eventsV1.VideoJobFailedSchema, data),
    handle: async (tx, event) => {
      const [result] = await applyOps(tx, event.accountId, [{ op: 'refund', request_id: event.jobId }], deps.now());
      if (!result?.ok) {
        // No settled charge under this id: nothing to refund (the saga never charged it).
        deps.logger.warn({ jobId: event.jobId, code: result?.code }, 'failed video job has no charge to refund');
        return;
      }
      if (result.replay) return;
      const refunded = create(eventsV1.RefundCompletedSchema, {
        eventId: `refund:${event.jobId}`,
        requestId: event.jobId,
        accountId: event.accountId,
        creditRefunded: BigInt(result.credit_refunded ?? '0'),
        balanceAfter: BigInt(result.balance_after ?? '0'),
      });
      enqueueEvent(tx, { subject: REFUND_COMPLETED_SUBJECT, payload: toBinary(eventsV1.RefundCompletedSchema, refunded), msgId: refunded.eventId });
      await tx.flush();
      deps.logger.info({ jobId: event.jobId, credits: refunded.creditRefunded.toString() }, 'video job refunded');
    },
  });
}
