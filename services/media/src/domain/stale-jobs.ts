import { create, toBinary } from '@bufbuild/protobuf';
import { eventsV1 } from '@gw/contracts';
import { enqueueEvent } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';

export const IMAGE_JOB_ABANDONED_SUBJECT = 'media.image_job.abandoned';

/**
 * Abandons running jobs created before `staleBefore` (their gateway died mid-request), optionally
 * only the one holding an Idempotency-Key, and announces each in the same transaction: billing
 * then gives the job's hold back (released if open, refunded if charged), so a client is never
 * charged for images it did not receive, even when it retries with the key. Returns how many.
 */
export async function abandonStaleJobs(
  em: EntityManager,
  staleBefore: Date,
  now: Date,
  key?: { accountId: string; idempotencyKey: string },
): Promise<number> {
  return em.fork().transactional(async (tx) => {
    // `status <> 'abandoned'` lets the partial unique index serve the keyed lookup.
    const rows = await tx.execute<Array<{ id: string; account_id: string }>>(
      `update image_job set status = 'abandoned', expires_at = ?
        where status <> 'abandoned' and status = 'running' and created_at < ?
          ${key ? 'and account_id = ? and idempotency_key = ?' : ''}
        returning id, account_id`,
      key ? [now, staleBefore, key.accountId, key.idempotencyKey] : [now, staleBefore],
    );
    for (const row of rows) {
      const event = create(eventsV1.ImageJobAbandonedSchema, { eventId: `${row.id}:abandoned`, jobId: row.id, accountId: row.account_id });
      enqueueEvent(tx, { subject: IMAGE_JOB_ABANDONED_SUBJECT, payload: toBinary(eventsV1.ImageJobAbandonedSchema, event), msgId: event.eventId });
    }
    await tx.flush();
    return rows.length;
  });
}
