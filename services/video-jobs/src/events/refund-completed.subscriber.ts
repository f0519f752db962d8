import { fromBinary } from '@bufbuild/protobuf';
import { eventsV1 } from '@gw/contracts';
import { consumeDurable, processOnce, type Logger, type NatsConnection } from '@gw/service-kit';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { VideoJob } from '../db/video-job.entity.ts';
import { JOB_ID } from '../domain/job-ids.ts';

export const REFUND_COMPLETED_SUBJECT = 'billing.refund.completed';
export const REFUNDS_CONSUMER = 'video-jobs-refunds';

/**
 * Records a refund on its job, once per event id (a redelivery, or a duplicate publish, changes
 * nothing). Refunds of other requests are not ours and are skipped. Resolves true when recorded.
 */
export async function recordRefund(em: EntityManager, event: eventsV1.RefundCompleted): Promise<boolean> {
  if (!JOB_ID.test(event.requestId)) return false;
  let recorded = false;
  await processOnce(em, REFUNDS_CONSUMER, event.eventId, async (tx) => {
    // Billing refunds a charge once and in full, so the amount is set, not added.
    const updated = await tx.nativeUpdate(VideoJob, { id: event.requestId, accountId: event.accountId }, { creditRefunded: event.creditRefunded });
    recorded = updated === 1;
  });
  return recorded;
}

/** The durable consumer of `billing.refund.completed`: `service.credit_refunded` comes from here. */
export function recordRefunds(deps: { orm: MikroORM; nats: NatsConnection; namespace: string; logger: Logger }): Promise<() => Promise<void>> {
  return consumeDurable({
    nats: deps.nats,
    namespace: deps.namespace,
    durable: REFUNDS_CONSUMER,
    subject: REFUND_COMPLETED_SUBJECT,
    logger: deps.logger,
    handle: async (data) => {
      const event = fromBinary(eventsV1.RefundCompletedSchema, data);
      if (await recordRefund(deps.orm.em.fork(), event)) {
        deps.logger.info({ jobId: event.requestId, credits: event.creditRefunded.toString() }, 'video job refund recorded');
      }
    },
  });
}
