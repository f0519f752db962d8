import { randomBytes } from 'node:crypto';
import { GatewayError } from '@gw/errors';
import { claimIdempotencyKey, completeClaim, releaseClaims, type ClaimOutcome, type ClaimOwner } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ImageJob, ImageJobImage } from '../db/entities.ts';
import { isUniqueViolation } from '../db/pg-errors.ts';
import type { ImageMimeType } from '@gw/image-types';
import { abandonStaleJobs } from './stale-jobs.ts';

export type ImageOperationName = 'generate' | 'edit';

/** How long jobs and keys live. */
export interface JobPolicy {
  /** How long an Idempotency-Key and a finished result are kept (DECISIONS.md: 24 hours). */
  resultTtlMs: number;
  /**
   * A job still `running` after this long belongs to no live request (its gateway died between
   * BeginImageJob and Finish/Abandon): it is abandoned, which frees its key. Well above the
   * gateway's deadline for a whole request.
   */
  staleAfterMs: number;
  /**
   * A running job's lease (default 60 s), and so its key's claim's: set when the job begins,
   * extended while media runs it. A running job whose lease ended (media died between commit and
   * answer, or under the run; or the gateway died) is abandoned at once, freeing its key: a retry
   * with the key runs anew instead of 409 for 30 minutes.
   */
  claimLeaseMs?: number;
  /**
   * Leases are judged from this instant on (the process's start + a lease): a media that just
   * restarted first lets the runs of its peers renew. Absent: always.
   */
  leasesFrom?: Date;
}

export const CLAIM_LEASE_MS = 60_000;

/** The lease of a claim, or of a run, that begins or is renewed `now`. */
export function leaseEnd(policy: Pick<JobPolicy, 'claimLeaseMs'>, now: Date): Date {
  return later(now, policy.claimLeaseMs ?? CLAIM_LEASE_MS);
}

/** Running jobs are orphans when created before the first instant or leased until before the second. */
export function orphanBounds(policy: JobPolicy, now: Date): { staleBefore: Date; leaseEndedBefore: Date | null } {
  return {
    staleBefore: new Date(now.getTime() - policy.staleAfterMs),
    leaseEndedBefore: policy.leasesFrom && now < policy.leasesFrom ? null : now,
  };
}

/** An image produced by a job, as kept and as returned. */
export interface StoredImage {
  data: Uint8Array;
  mimeType: ImageMimeType;
}

export const IMAGE_JOB_ID = /^imgjob_[0-9a-f]{32}$/;

export function newJobId(): string {
  return `imgjob_${randomBytes(16).toString('hex')}`;
}

const SHA256_BYTES = 32;

/** The endpoint of each operation: a key used on one is a conflict on the other. */
const SCOPES: Record<ImageOperationName, string> = { generate: 'images/generations', edit: 'images/edits' };

function later(now: Date, ms: number): Date {
  return new Date(now.getTime() + ms);
}

function need(value: string, name: string): void {
  if (value === '') throw new GatewayError('invalid_request', `${name} is required.`);
}

export interface BeginInput {
  accountId: string;
  /** Empty when the client sent none. */
  idempotencyKey: string;
  bodyHash: Uint8Array;
  operation: ImageOperationName;
}

const IN_PROGRESS =
  'A request with this Idempotency-Key is in progress. The provider is not called again. If the request that used it failed, the key is free again within a minute: retry then.';

/**
 * Creates a running job. With an Idempotency-Key, the job and its claim (`@gw/service-kit`'s one
 * claim design, table `idempotency_claim`) are written in one transaction: of two concurrent
 * requests on any replicas exactly one gets a job and the other a `duplicate_request`. A key whose
 * claim expired is free; one whose job was abandoned (no charge), or is an orphan abandoned right
 * here (its run's lease ended, or it went stale), is claimed anew.
 */
export async function beginImageJob(em: EntityManager, input: BeginInput, policy: JobPolicy, now: Date): Promise<string> {
  need(input.accountId, 'account_id');
  if (input.idempotencyKey === '') return insertJob(em, input, policy, now);
  if (input.bodyHash.length !== SHA256_BYTES) throw new GatewayError('invalid_request', 'body_hash must be a SHA-256 digest.');
  const jobId = newJobId();
  const claim = {
    accountId: input.accountId,
    key: input.idempotencyKey,
    scope: SCOPES[input.operation],
    bodyHash: input.bodyHash,
    jobId,
    now,
    expiresAt: later(now, policy.resultTtlMs),
  };
  try {
    return await em.transactional(async (tx) => {
      // The previous release's key index on image_job still guards its replicas during a rollout:
      // an expired row holding the key goes first (the purge would delete it anyway).
      await tx.execute(
        `delete from image_job where account_id = ? and idempotency_key = ? and status <> 'abandoned' and expires_at <= ?`,
        [input.accountId, input.idempotencyKey, now],
        'run',
      );
      const outcome = await claimIdempotencyKey(tx, claim, imageJobs(policy, now));
      if (outcome.kind !== 'claimed') throw refusal(outcome);
      return insertJob(tx, input, policy, now, jobId);
    });
  } catch (err) {
    // Only while a replica of the previous release runs: its job holds the key in that index.
    if (isUniqueViolation(err)) throw new GatewayError('duplicate_request', IN_PROGRESS);
    throw err;
  }
}

/**
 * The owner's side of a claim in flight: its job is an orphan (the run's lease ended, or it went
 * stale) and is abandoned now, in the claim's transaction, freeing the key; or it still runs; or
 * it finished (a claim of a job the previous release finished is completed here).
 */
function imageJobs(policy: JobPolicy, now: Date): ClaimOwner {
  return {
    async jobState(tx, jobId) {
      await abandonStaleJobs(tx, orphanBounds(policy, now), now, { jobId });
      const [job] = await tx.execute<Array<{ status: string; expires_at: Date }>>('select status, expires_at from image_job where id = ?', [jobId]);
      if (!job || job.status === 'abandoned') return 'free';
      if (job.status === 'running') return 'in_flight';
      await completeClaim(tx, jobId, new Date(job.expires_at));
      return 'completed';
    },
  };
}

async function insertJob(em: EntityManager, input: BeginInput, policy: JobPolicy, now: Date, id = newJobId()): Promise<string> {
  const keyed = input.idempotencyKey !== '';
  await em.insert(ImageJob, {
    id,
    accountId: input.accountId,
    operation: input.operation,
    // Also kept on the job: whether its result is kept, and the previous release's key index.
    idempotencyKey: keyed ? input.idempotencyKey : null,
    bodyHash: keyed ? Buffer.from(input.bodyHash) : null,
    status: 'running',
    createdAt: now,
    expiresAt: later(now, policy.resultTtlMs),
    leaseUntil: leaseEnd(policy, now),
  });
  return id;
}

/** The answer to a second use of a claimed key. */
function refusal(outcome: Exclude<ClaimOutcome, { kind: 'claimed' }>): GatewayError {
  switch (outcome.kind) {
    case 'conflict':
      return new GatewayError(
        'invalid_request',
        'This Idempotency-Key was already used with a different request (body or endpoint) in the last 24 hours. Use a new key for a new request.',
      );
    case 'completed':
      return new GatewayError(
        'duplicate_request',
        'A request with this Idempotency-Key already succeeded and was charged once. Fetch its result with job_id.',
        { job_id: outcome.jobId },
      );
    case 'in_flight':
      return new GatewayError('duplicate_request', IN_PROGRESS);
  }
}

/**
 * Extends the lease of a running job's claim until `until` (never shortens it). False when the
 * job is no longer running.
 */
export async function renewClaim(em: EntityManager, jobId: string, until: Date): Promise<boolean> {
  const rows = await em.execute<Array<{ id: string }>>(
    `update image_job set lease_until = greatest(lease_until, ?) where id = ? and status = 'running' returning id`,
    [until, jobId],
  );
  return rows.length > 0;
}

/**
 * Marks a running job as started so the provider is called at most once per job; says whether
 * its result is to be kept (only a job with an Idempotency-Key can be fetched again).
 */
export async function claimRun(
  em: EntityManager,
  job: { jobId: string; accountId: string; operation: ImageOperationName },
  now: Date,
  leaseUntil: Date = leaseEnd({}, now),
): Promise<{ keepResult: boolean }> {
  const rows = await em.execute<Array<{ keep_result: boolean }>>(
    `update image_job set run_started_at = ?, lease_until = greatest(lease_until, ?)
     where id = ? and account_id = ? and operation = ? and status = 'running' and run_started_at is null
     returning idempotency_key is not null as keep_result`,
    [now, leaseUntil, job.jobId, job.accountId, job.operation],
  );
  const row = rows[0];
  if (!row) throw new GatewayError('not_found', 'No image job of this account is waiting to run with this id.');
  return { keepResult: row.keep_result };
}

/**
 * Records what the provider produced. False when the job is no longer running (the gateway gave
 * up and abandoned it meanwhile): then nothing is kept.
 */
export async function recordOutput(
  em: EntityManager,
  job: { jobId: string; provider: string; keepResult: boolean; leaseUntil?: Date },
  images: readonly StoredImage[],
): Promise<boolean> {
  return em.transactional(async (tx) => {
    // The gateway settles and finishes next: its claim gets a fresh lease for that.
    const lease = job.leaseUntil ? { leaseUntil: job.leaseUntil } : {};
    const updated = await tx.nativeUpdate(ImageJob, { id: job.jobId, status: 'running' }, { provider: job.provider, ...lease });
    if (updated === 0) return false;
    if (job.keepResult && images.length > 0) {
      await tx.insertMany(
        ImageJobImage,
        images.map((image, position) => ({ jobId: job.jobId, position, mimeType: image.mimeType, data: Buffer.from(image.data) })),
      );
    }
    return true;
  });
}

/** Records the settled charge and completes the key's claim; the result (and the key) are kept for `resultTtlMs` from now. */
export async function finishImageJob(
  em: EntityManager,
  input: { jobId: string; accountId: string; creditCharged: bigint; balanceAfter: bigint },
  policy: JobPolicy,
  now: Date,
): Promise<void> {
  if (input.creditCharged < 0n) throw new GatewayError('invalid_request', 'credit_charged cannot be negative.');
  const expiresAt = later(now, policy.resultTtlMs);
  const updated = await em.transactional(async (tx) => {
    const moved = await tx.nativeUpdate(
      ImageJob,
      { id: input.jobId, accountId: input.accountId, status: 'running' },
      { status: 'succeeded', creditCharged: input.creditCharged, balanceAfter: input.balanceAfter, completedAt: now, expiresAt },
    );
    // A retry with the key now answers this job, for as long as its result is kept.
    if (moved > 0) await completeClaim(tx, input.jobId, expiresAt);
    return moved;
  });
  if (updated > 0) return;
  const job = await em.findOne(ImageJob, { id: input.jobId, accountId: input.accountId }, { disableIdentityMap: true });
  // A replay of a finish that already happened changes nothing.
  if (job?.status === 'succeeded' && BigInt(job.creditCharged ?? -1n) === input.creditCharged) return;
  throw new GatewayError('not_found', 'No running image job of this account with this id.');
}

/**
 * Ends a running job without a charge and frees its key. A finished job is never abandoned; an
 * unknown or already abandoned one is left as it is, so the call is safe to repeat.
 */
export async function abandonImageJob(em: EntityManager, input: { jobId: string; accountId: string }, now: Date): Promise<void> {
  await em.transactional(async (tx) => {
    const updated = await tx.nativeUpdate(
      ImageJob,
      { id: input.jobId, accountId: input.accountId, status: 'running' },
      { status: 'abandoned', expiresAt: now },
    );
    if (updated > 0) {
      await tx.nativeDelete(ImageJobImage, { jobId: input.jobId });
      await releaseClaims(tx, [input.jobId]);
    }
  });
}

export interface FinishedJob {
  jobId: string;
  images: StoredImage[];
  creditCharged: bigint;
  balanceAfter: bigint;
  completedAt: Date;
}

/**
 * A finished job's kept result. Unknown, another account's, unfinished, expired, or a job that
 * kept no result (no Idempotency-Key): one and the same `not_found`.
 */
export async function getImageJob(em: EntityManager, input: { jobId: string; accountId: string }, now: Date): Promise<FinishedJob> {
  const job = IMAGE_JOB_ID.test(input.jobId)
    ? await em.findOne(
        ImageJob,
        { id: input.jobId, accountId: input.accountId, status: 'succeeded', idempotencyKey: { $ne: null }, expiresAt: { $gt: now } },
        { disableIdentityMap: true },
      )
    : null;
  if (!job?.completedAt) throw new GatewayError('not_found', 'No image job with this id.');
  const images = await em.find(ImageJobImage, { jobId: job.id }, { orderBy: { position: 'asc' }, disableIdentityMap: true });
  return {
    jobId: job.id,
    images: images.map((image) => ({ data: image.data, mimeType: image.mimeType as ImageMimeType })),
    creditCharged: BigInt(job.creditCharged ?? 0n),
    balanceAfter: BigInt(job.balanceAfter ?? 0n),
    completedAt: job.completedAt,
  };
}
