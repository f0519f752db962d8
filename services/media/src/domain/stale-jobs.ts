import { create, toBinary } from '@bufbuild/protobuf';
import { eventsV1 } from '@gw/contracts';
import { enqueueEvent } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';

export const IMAGE_JOB_ABANDONED_SUBJECT = 'media.image_job.abandoned';

/**
 * Abandons the orphaned running jobs: created before `staleBefore`, or whose claim's lease ended
 * before `leaseEndedBefore` (null: leases not judged) — their gateway, or the media process that
 * held them, died mid-request. Optionally only the one holding an Idempotency-Key. Announces each
 * in the same transaction: billing then gives the job's hold back (released if open, refunded if
 * charged), so a client is never charged for images it did not receive, even when it retries with
 * the key. Returns how many.
 */
export async function abandonStaleJobs(
  em: EntityManager,
  bounds: { staleBefore: Date; leaseEndedBefore: Date | null },
  now: Date,
  key?: { accountId: string; idempotencyKey: string },
): Promise<number> {
  return em.fork().transactional(async (tx) => {
    // `status <> 'abandoned'` lets the partial unique index serve the keyed lookup.
    const rows = await tx.execute<Array<{ id: string; account_id: string }>>(
      `update image_job set status = 'abandoned', expires_at = ?
        where status <> 'abandoned' and status = 'running' and (created_at < ? or lease_until < ?)
          ${key ? 'and account_id = ? and idempotency_key = ?' : ''}
        returning id, account_id`,
      key
        ? [now, bounds.staleBefore, bounds.leaseEndedBefore, key.accountId, key.idempotencyKey]
        : [now, bounds.staleBefore, bounds.leaseEndedBefore],
    );
    for (const row of rows) {
      const event = create(eventsV1.ImageJobAbandonedSchema, { eventId: `${row.id}:abandoned`, jobId: row.id, accountId: row.account_id });
      enqueueEvent(tx, { subject: IMAGE_JOB_ABANDONED_SUBJECT, payload: toBinary(eventsV1.ImageJobAbandonedSchema, event), msgId: event.eventId });
    }
    await tx.flush();
    return rows.length;
  });
}
