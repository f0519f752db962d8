import type { EntityManager } from '@mikro-orm/postgresql';
import { VideoJobInput } from '../db/video-job-input.entity.ts';
import { VideoJob, type FailureReason, type PublicStatus } from '../db/video-job.entity.ts';
import { announceStatus } from './job-events.ts';

/** How long a completed job's MP4 can be downloaded (spec 2.2: `expires_at` = completed + 24 h). */
export const ACCESS_WINDOW_MS = 24 * 3600 * 1000;

/** A job as a worker holds it: the entity read at claim time plus the lease token it owns. */
export interface LeasedJob {
  job: VideoJob;
  token: string;
}

type Changes = Partial<Pick<VideoJob,
  | 'status' | 'provider' | 'upstreamModel' | 'providerJobId' | 'contentRef' | 'actualDurationSeconds'
  | 'failureReason' | 'attempts' | 'nextAttemptAt' | 'submittedAt' | 'completedAt' | 'expiresAt' | 'failedAt'
>>;

/**
 * Writes a worker's result, only while its lease is current (a replica whose lease ran out and was
 * taken over writes nothing), releasing the lease in the same update. A status change is announced
 * in the same transaction. Resolves false when the lease was lost.
 */
async function write(em: EntityManager, leased: LeasedJob, now: Date, changes: Changes, announce?: { status: PublicStatus; failureReason?: FailureReason }): Promise<boolean> {
  const { job, token } = leased;
  return em.fork().transactional(async (tx) => {
    const moved = await tx.nativeUpdate(VideoJob, { id: job.id, leaseToken: token }, { ...changes, leaseToken: null, updatedAt: now });
    if (moved === 0) return false;
    if (changes.status === 'completed' || changes.status === 'failed' || changes.providerJobId !== undefined) {
      // Submitted or finished: the prompt and frames are never needed again.
      await tx.nativeDelete(VideoJobInput, { jobId: job.id });
    }
    if (announce && announce.status !== job.status) {
      const previous = job.status === 'pending' || job.status === 'abandoned' ? '' : job.status;
      announceStatus(tx, job, { status: announce.status, previous, at: now, ...(announce.failureReason ? { failureReason: announce.failureReason } : {}) });
      await tx.flush();
    }
    return true;
  });
}

export function recordSubmitted(em: EntityManager, leased: LeasedJob, now: Date, sub: { provider: string; upstreamModel: string; providerJobId: string; nextAttemptAt: Date }): Promise<boolean> {
  return write(em, leased, now, { ...sub, submittedAt: now, attempts: 0 });
}

/** Nothing decided: look again at `nextAttemptAt` (also the state reported may have moved to `running`). */
export function recordWaiting(em: EntityManager, leased: LeasedJob, now: Date, next: { nextAttemptAt: Date; attempts: number; running?: boolean }): Promise<boolean> {
  const running = next.running === true && leased.job.status === 'queued';
  return write(
    em,
    leased,
    now,
    { nextAttemptAt: next.nextAttemptAt, attempts: next.attempts, ...(running ? { status: 'running' as const } : {}) },
    running ? { status: 'running' } : undefined,
  );
}

export function recordCompleted(em: EntityManager, leased: LeasedJob, now: Date, result: { actualDurationSeconds?: number; contentRef?: string }): Promise<boolean> {
  return write(
    em,
    leased,
    now,
    {
      status: 'completed',
      completedAt: now,
      expiresAt: new Date(now.getTime() + ACCESS_WINDOW_MS),
      actualDurationSeconds: result.actualDurationSeconds ?? null,
      contentRef: result.contentRef ?? null,
    },
    { status: 'completed' },
  );
}

/** A verified terminal failure. Its `video.job.failed` event makes billing refund the charge. */
export function recordFailed(em: EntityManager, leased: LeasedJob, now: Date, failureReason: FailureReason): Promise<boolean> {
  return write(em, leased, now, { status: 'failed', failureReason, failedAt: now }, { status: 'failed', failureReason });
}

/** Hands the job back untouched (the worker is stopping): due at once, for whichever replica is up. */
export function releaseLease(em: EntityManager, leased: LeasedJob, now: Date): Promise<boolean> {
  return write(em, leased, now, { nextAttemptAt: now });
}
