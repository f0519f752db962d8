import { GatewayError } from '@gw/errors';
import { claimIdempotencyKey, type ClaimOwner } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { JobStatus } from '../db/video-job.entity.ts';

/** How long a used Idempotency-Key stays bound to its job (DECISIONS.md). */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

/** The endpoint video-jobs' claims are for (the claim table compares it with a later use of the key). */
const SCOPE = 'videos/generations';

export interface KeyClaim {
  accountId: string;
  key: string;
  bodyHash: Uint8Array;
  jobId: string;
  now: Date;
}

/**
 * A claim is in flight while its job's creation saga is (`pending`): the recovery sweep, not a
 * retry, decides what becomes of it. A job past the saga completes the claim; an abandoned one
 * (claims of the previous release were not released with it) frees the key.
 */
const videoJobs: ClaimOwner = {
  async jobState(tx, jobId) {
    const [job] = await tx.execute<{ status: JobStatus }[]>('select status from video_job where id = ?', [jobId]);
    if (!job || job.status === 'abandoned') return 'free';
    return job.status === 'pending' ? 'in_flight' : 'completed';
  },
};

/**
 * Binds an Idempotency-Key to a new job inside the caller's transaction (the job row is written in
 * the same one), by the claim design of every media endpoint (`@gw/service-kit`'s
 * `claimIdempotencyKey`). Another body under the same key is `invalid_request`; the same body while
 * the first creation is still in flight is `duplicate_request`; after it, `duplicate_request`
 * with `job_id`.
 */
export async function claimKey(tx: EntityManager, claim: KeyClaim): Promise<void> {
  const expiresAt = new Date(claim.now.getTime() + IDEMPOTENCY_TTL_MS);
  const outcome = await claimIdempotencyKey(tx, { ...claim, scope: SCOPE, expiresAt }, videoJobs);
  switch (outcome.kind) {
    case 'claimed':
      return;
    case 'conflict':
      throw new GatewayError('invalid_request', 'This Idempotency-Key was already used with a different request body.');
    case 'in_flight':
      throw new GatewayError('duplicate_request', 'A request with this Idempotency-Key is in progress. Nothing new was charged.');
    case 'completed':
      throw new GatewayError('duplicate_request', 'A request with this Idempotency-Key already created a job; poll job_id. Nothing new was charged.', {
        job_id: outcome.jobId,
      });
  }
}
