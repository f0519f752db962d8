import { fromBinary } from '@bufbuild/protobuf';
import { eventsV1 } from '@gw/contracts';
import { applyOps } from '../domain/money.ts';
import { handleEachEventOnce, type SubscriberDeps } from './each-event-once.ts';

/**
 * Gives back the hold of every image job its gateway abandoned mid-request (the job id is the
 * hold's id), exactly once: released if still open, refunded if it was charged (the client never
 * received the images). One `apply_ops` call does both ops in order, so whichever state the hold
 * is in, exactly one of them applies; a redelivered event replays to no change.
 */
export function settleAbandonedImageJobs(deps: SubscriberDeps): Promise<() => Promise<void>> {
  return handleEachEventOnce(deps, {
    durable: 'billing-image-abandons',
    subject: 'media.image_job.abandoned',
    decode: (data) => fromBinary(eventsV1.ImageJobAbandonedSchema, data),
    handle: async (tx, event) => {
      const ops = [
        { op: 'release', request_id: event.jobId },
        { op: 'refund', request_id: event.jobId },
      ] as const;
      const [released, refunded] = await applyOps(tx, event.accountId, [...ops], deps.now());
      if (released?.ok && !released.replay) deps.logger.warn({ jobId: event.jobId }, 'abandoned image job: hold released');
      else if (refunded?.ok && !refunded.replay) {
        deps.logger.warn({ jobId: event.jobId, credits: refunded.credit_refunded }, 'abandoned image job: its charge refunded');
      }
    },
  });
}
