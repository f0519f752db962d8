import { create, toBinary } from '@bufbuild/protobuf';
import { eventsV1 } from '@gw/contracts';
import { enqueueEvent, releaseClaims } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';

export const IMAGE_JOB_ABANDONED_SUBJECT = 'media.image_job.abandoned';

/**
 * Abandons the orphaned running jobs: created before `staleBefore`, or whose run's lease ended
 * before `leaseEndedBefore` (null: leases not judged) — their gateway, or the media process that
 * held them, died mid-request. Optionally only the one job `only` names. Each is announced and its
 * Idempotency-Key claim released in the same transaction (the caller's, when `em` is one): billing
 * then gives the job's hold back (released if open, refunded if charged), so a client is never
 * charged for images it did not receive, even when it retries with the key. Returns how many.
 */
export async function abandonStaleJobs(
  em: EntityManager,
  bounds: { staleBefore: Date; leaseEndedBefore: Date | null },
  now: Date,
  only?: { jobId: string },
): Promise<number> {
  return em.transactional(async (tx) => {
    const rows = await tx.execute<Array<{ id: string; account_id: string }>>(
      `update image_job set status = 'abandoned', expires_at = ?
        where status = 'running' and (created_at < ? or lease_until < ?) ${only ? 'and id = ?' : ''}
        returning id, account_id`,
      only ? [now, bounds.staleBefore, bounds.leaseEndedBefore, only.jobId] : [now, bounds.staleBefore, bounds.leaseEndedBefore],
    );
    for (const row of rows) {
      const event = create(eventsV1.ImageJobAbandonedSchema, { eventId: `${row.id}:abandoned`, jobId: row.id, accountId: row.account_id });
      enqueueEvent(tx, { subject: IMAGE_JOB_ABANDONED_SUBJECT, payload: toBinary(eventsV1.ImageJobAbandonedSchema, event), msgId: event.eventId });
    }
    await tx.flush();
    await releaseClaims(tx, rows.map((row) => row.id));
    return rows.length;
  });
}
