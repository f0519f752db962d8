import { timingSafeEqual } from 'node:crypto';
import { GatewayError } from '@gw/errors';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { JobStatus } from '../db/video-job.entity.ts';

/** How long a used Idempotency-Key stays bound to its job (DECISIONS.md). */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

export interface KeyClaim {
  accountId: string;
  key: string;
  bodyHash: Uint8Array;
  jobId: string;
  now: Date;
}

const sameHash = (a: Uint8Array, b: Uint8Array) => a.length === b.length && timingSafeEqual(a, b);

/**
 * Binds an Idempotency-Key to a new job inside the caller's transaction (the job row is written in
 * the same one). The (account, key) primary key makes the claim race-free across replicas. A key
 * whose claim expired, or whose job was abandoned without a charge, is taken over. Otherwise:
 * another body under the same key is `invalid_request`; the same body while the first creation is
 * still in flight is `duplicate_request`; after it finished, `duplicate_request` with `job_id`.
 */
export async function claimKey(tx: EntityManager, claim: KeyClaim): Promise<void> {
  const expiresAt = new Date(claim.now.getTime() + IDEMPOTENCY_TTL_MS);
  const values = [Buffer.from(claim.bodyHash), claim.jobId, claim.now, expiresAt];
  // Two rounds at most: a claim freed between our insert and our read is simply inserted again.
  for (let round = 0; round < 2; round++) {
    const inserted = await tx.execute<unknown[]>(
      `insert into idempotency_claim (account_id, key, body_hash, job_id, created_at, expires_at)
       values (?, ?, ?, ?, ?, ?) on conflict (account_id, key) do nothing returning job_id`,
      [claim.accountId, claim.key, ...values],
    );
    if (inserted.length === 1) return;
    const [held] = await tx.execute<{ job_id: string; body_hash: Buffer; expires_at: Date; status: JobStatus }[]>(
      `select c.job_id, c.body_hash, c.expires_at, j.status
         from idempotency_claim c join video_job j on j.id = c.job_id
        where c.account_id = ? and c.key = ? for update of c`,
      [claim.accountId, claim.key],
    );
    if (!held) continue;
    if (new Date(held.expires_at) <= claim.now || held.status === 'abandoned') {
      await tx.execute(
        `update idempotency_claim set body_hash = ?, job_id = ?, created_at = ?, expires_at = ? where account_id = ? and key = ?`,
        [...values, claim.accountId, claim.key],
      );
      return;
    }
    if (!sameHash(held.body_hash, claim.bodyHash)) {
      throw new GatewayError('invalid_request', 'This Idempotency-Key was already used with a different request body.');
    }
    if (held.status === 'pending') {
      throw new GatewayError('duplicate_request', 'A request with this Idempotency-Key is in progress. Nothing new was charged.');
    }
    throw new GatewayError('duplicate_request', 'A request with this Idempotency-Key already created a job; poll job_id. Nothing new was charged.', {
      job_id: held.job_id,
    });
  }
  throw new GatewayError('duplicate_request', 'A request with this Idempotency-Key is in progress. Nothing new was charged.');
}

/** Frees the key of a job that was abandoned without a charge, so the same request can run anew. */
export async function freeKeyOf(tx: EntityManager, jobId: string): Promise<void> {
  await tx.execute('delete from idempotency_claim where job_id = ?', [jobId]);
}

/** Whether a job's client can find it again: an Idempotency-Key names it (a retry answers its id). */
export async function hasKeyClaim(em: EntityManager, jobId: string): Promise<boolean> {
  const rows = await em.execute<unknown[]>('select 1 from idempotency_claim where job_id = ? limit 1', [jobId]);
  return rows.length > 0;
}

/** Deletes claims past their 24 hours (their rows are only ever read by key, so this is tidying). */
export async function deleteExpiredClaims(em: EntityManager, now: Date): Promise<number> {
  const rows = await em.execute<unknown[]>('delete from idempotency_claim where expires_at <= ? returning job_id', [now]);
  return rows.length;
}
