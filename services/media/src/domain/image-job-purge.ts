import { deleteExpiredClaims, startPeriodic, type Logger } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';
import { orphanBounds, type JobPolicy } from './image-jobs.ts';
import { abandonStaleJobs } from './stale-jobs.ts';

/** Rows deleted per statement, so one purge never holds a long lock or a huge transaction. */
const BATCH = 500;

/**
 * Abandons jobs that went stale (their gateway died mid-request), then deletes every job past its
 * `expires_at` with its images, in batches, and the Idempotency-Key claims past theirs. Returns what it did.
 */
export async function purgeImageJobs(em: EntityManager, policy: JobPolicy, now: Date): Promise<{ staled: number; deleted: number }> {
  const staled = await abandonStaleJobs(em, orphanBounds(policy, now), now);
  let deleted = 0;
  for (;;) {
    const res = await em.execute<{ affectedRows: number }>(
      `delete from image_job where id in (select id from image_job where expires_at <= ? limit ${BATCH})`,
      [now],
      'run',
    );
    deleted += res.affectedRows;
    if (res.affectedRows < BATCH) break;
  }
  await deleteExpiredClaims(em, now);
  return { staled, deleted };
}

/** Runs the purge `intervalMs` after start and after each purge; returns the stop function (which waits for a running purge). */
export function startImageJobPurge(
  run: () => Promise<{ staled: number; deleted: number }>,
  intervalMs: number,
  logger: Logger,
): () => Promise<void> {
  return startPeriodic({ name: 'image job purge', intervalMs, logger, runAtStart: false }, async () => {
    const { staled, deleted } = await run();
    if (staled > 0) logger.warn({ staled }, 'abandoned image jobs that outlived any request');
    if (deleted > 0) logger.info({ deleted }, 'purged expired image jobs');
  });
}
