import { completeClaim, releaseClaims } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';
import { VideoJobInput } from '../db/video-job-input.entity.ts';
import { VideoJob } from '../db/video-job.entity.ts';
import { announceStatus } from './job-events.ts';

/**
 * The two ends of a creation saga. Both are conditional on the job still being `pending`, so the
 * creating request and the recovery sweep (on any replica) can race and exactly one of them moves
 * the job; the other sees the outcome. `em` is a fresh fork, or the sweep's transaction (which
 * holds the job's row lock; these then run inside it).
 */

/**
 * Charged: `pending` → `queued`, announced and its Idempotency-Key claim completed (a retry answers
 * the job) in the same transaction. Returns the job as it stands.
 */
export async function markQueued(em: EntityManager, jobId: string, creditCharged: bigint, now: Date): Promise<VideoJob> {
  return em.transactional(async (tx) => {
    const moved = await tx.nativeUpdate(
      VideoJob,
      { id: jobId, status: 'pending' },
      { status: 'queued', creditCharged, nextAttemptAt: now, updatedAt: now },
    );
    const job = await tx.findOneOrFail(VideoJob, { id: jobId }, { refresh: true });
    if (moved === 1) {
      announceStatus(tx, job, { status: 'queued', previous: '', at: now });
      await tx.flush();
      await completeClaim(tx, jobId);
    }
    return job;
  });
}

/**
 * Not charged: `pending` → `abandoned`; the job's input is deleted and its Idempotency-Key freed.
 * Nothing is announced: for everyone outside, the job never existed. Returns the job as it stands.
 */
export async function markAbandoned(em: EntityManager, jobId: string, now: Date): Promise<VideoJob> {
  return em.transactional(async (tx) => {
    const moved = await tx.nativeUpdate(VideoJob, { id: jobId, status: 'pending' }, { status: 'abandoned', updatedAt: now });
    if (moved === 1) {
      await tx.nativeDelete(VideoJobInput, { jobId });
      await releaseClaims(tx, [jobId]);
    }
    return tx.findOneOrFail(VideoJob, { id: jobId }, { refresh: true });
  });
}
