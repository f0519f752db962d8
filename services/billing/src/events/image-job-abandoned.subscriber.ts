import { fromBinary } from '@bufbuild/protobuf';
import { eventsV1 } from '@gw/contracts';
import { consumeDurable, processOnce, type NatsConnection } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { applyOps } from '../domain/money.ts';

const CONSUMER = 'billing-image-abandons';

/**
 * Gives back the hold of every image job its gateway abandoned mid-request (the job id is the
 * hold's id), exactly once: released if still open, refunded if it was charged (the client never
 * received the images). One `apply_ops` call does both ops in order, so whichever state the hold
 * is in, exactly one of them applies; a redelivered event replays to no change.
 */
export function settleAbandonedImageJobs(deps: {
  orm: MikroORM;
  nats: NatsConnection;
  namespace: string;
  logger: Logger;
  now: () => Date;
}): Promise<() => Promise<void>> {
  return consumeDurable({
    nats: deps.nats,
    namespace: deps.namespace,
    durable: CONSUMER,
    subject: 'media.image_job.abandoned',
    logger: deps.logger,
    handle: async (data) => {
      const event = fromBinary(eventsV1.ImageJobAbandonedSchema, data);
      await processOnce(deps.orm.em.fork(), CONSUMER, event.eventId, async (tx) => {
        const [released, refunded] = await applyOps(
          tx,
          event.accountId,
          [
            { op: 'release', request_id: event.jobId },
            { op: 'refund', request_id: event.jobId },
          ],
          deps.now(),
        );
        if (released?.ok && !released.replay) deps.logger.warn({ jobId: event.jobId }, 'abandoned image job: hold released');
        else if (refunded?.ok && !refunded.replay) {
          deps.logger.warn({ jobId: event.jobId, credits: refunded.credit_refunded }, 'abandoned image job: its charge refunded');
        }
      });
    },
  });
}
