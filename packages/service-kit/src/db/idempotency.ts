import { timingSafeEqual } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Idempotency-Key claims: the one design behind every media create endpoint (DECISIONS.md: scoped
 * to the account, kept 24 hours, compared with a hash of the request body). Each service that
 * honours the header keeps an `idempotency_claim` table in its own schema (created by its own
 * migration from the SQL below) and uses these functions on it; no service reads another's claims.
 *
 * A claim binds (account, key) to the first request's endpoint (`scope`), body hash and job.
 * `in_flight` until its owner completes it (a retry then answers the job) or releases it (the job
 * ended without a charge: the key is free again). How long an in-flight claim lives is the
 * owner's rule, since only it knows whether the job's process is alive: the owner answers
 * `jobState` (media judges its run's lease, video-jobs its pending saga), and may abandon an
 * orphan right there, in the claim's transaction, to free the key for the retry.
 */

/** The table and its indexes, for a service's migration (`create ... if not exists`). */
export const IDEMPOTENCY_CLAIM_TABLE_SQL = [
  `create table if not exists "idempotency_claim" (
    "account_id" text not null,
    "key" text not null,
    "scope" text not null,
    "body_hash" bytea not null,
    "job_id" text not null,
    "state" text not null default 'in_flight' check ("state" in ('in_flight', 'completed')),
    "created_at" timestamptz not null,
    "expires_at" timestamptz not null,
    primary key ("account_id", "key")
  )`,
  `create index if not exists "idempotency_claim_job_idx" on "idempotency_claim" ("job_id")`,
  `create index if not exists "idempotency_claim_expiry_idx" on "idempotency_claim" ("expires_at")`,
];

export const IDEMPOTENCY_CLAIM_DROP_SQL = ['drop table if exists "idempotency_claim"'];

/** A claim's state in the table. */
type ClaimState = 'in_flight' | 'completed';

export interface KeyClaim {
  accountId: string;
  key: string;
  /** The endpoint the key was used on (e.g. `images/generations`): the same key on another one is a conflict. */
  scope: string;
  /** SHA-256 of the request body. */
  bodyHash: Uint8Array;
  /** The job this request creates, written in the same transaction as the claim. */
  jobId: string;
  now: Date;
  /** When the key is free again however its job ended (DECISIONS.md: 24 hours); `completeClaim` may move it. */
  expiresAt: Date;
}

/** The service that owns the claims' jobs. */
export interface ClaimOwner {
  /**
   * What became of the job an `in_flight` claim names, asked in the claim's transaction with the
   * claim row locked: still `in_flight` (alive: a retry is refused), `completed` (the claim is
   * completed now and the retry answers the job), or `free` (the job ended without a charge, or
   * was just abandoned as an orphan in `tx`: the key is taken over).
   */
  jobState(tx: EntityManager, jobId: string): Promise<'in_flight' | 'completed' | 'free'>;
}

/** The answer to a claim: taken, or why not. */
export type ClaimOutcome =
  | { kind: 'claimed' }
  /** The key was used with another body or endpoint. */
  | { kind: 'conflict' }
  /** The first request is still running. */
  | { kind: 'in_flight' }
  /** The first request finished: `jobId` is its job. */
  | { kind: 'completed'; jobId: string };

interface HeldClaim {
  scope: string;
  body_hash: Buffer;
  job_id: string;
  state: ClaimState;
  expires_at: Date;
}

const sameHash = (a: Uint8Array, b: Uint8Array) => a.length === b.length && timingSafeEqual(a, b);

/**
 * Claims a key inside the caller's transaction (its job row is written in the same one). The
 * (account, key) primary key makes the claim race-free across replicas: of concurrent claims one
 * inserts, the others wait for it to commit and then judge the row it left. A claim past
 * `expires_at`, or whose job the owner reports `free`, is taken over by this request.
 */
export async function claimIdempotencyKey(tx: EntityManager, claim: KeyClaim, owner: ClaimOwner): Promise<ClaimOutcome> {
  const row = [claim.scope, Buffer.from(claim.bodyHash), claim.jobId, claim.now, claim.expiresAt];
  // Two rounds at most: a claim released between our insert and our read is simply inserted again.
  for (let round = 0; round < 2; round++) {
    const inserted = await tx.execute<unknown[]>(
      `insert into idempotency_claim (account_id, key, scope, body_hash, job_id, state, created_at, expires_at)
       values (?, ?, ?, ?, ?, 'in_flight', ?, ?) on conflict (account_id, key) do nothing returning job_id`,
      [claim.accountId, claim.key, ...row],
    );
    if (inserted.length === 1) return { kind: 'claimed' };
    const [held] = await tx.execute<HeldClaim[]>(
      `select scope, body_hash, job_id, state, expires_at from idempotency_claim where account_id = ? and key = ? for update`,
      [claim.accountId, claim.key],
    );
    if (!held) continue;
    let state: ClaimState | 'free' = new Date(held.expires_at) <= claim.now ? 'free' : held.state;
    if (state === 'in_flight') {
      state = await owner.jobState(tx, held.job_id);
      if (state === 'completed') await completeClaim(tx, held.job_id);
    }
    if (state === 'free') {
      // An upsert: the owner may have released the claim while abandoning its job (we hold its lock).
      await tx.execute(
        `insert into idempotency_claim (account_id, key, scope, body_hash, job_id, state, created_at, expires_at)
         values (?, ?, ?, ?, ?, 'in_flight', ?, ?)
         on conflict (account_id, key) do update set scope = excluded.scope, body_hash = excluded.body_hash, job_id = excluded.job_id,
           state = excluded.state, created_at = excluded.created_at, expires_at = excluded.expires_at`,
        [claim.accountId, claim.key, ...row],
      );
      return { kind: 'claimed' };
    }
    if (held.scope !== claim.scope || !sameHash(held.body_hash, claim.bodyHash)) return { kind: 'conflict' };
    return state === 'in_flight' ? { kind: 'in_flight' } : { kind: 'completed', jobId: held.job_id };
  }
  return { kind: 'in_flight' };
}

/**
 * The job finished: a retry with its key now answers the job. `expiresAt`, when given, restarts
 * the key's time (media keeps a finished result, and its key, 24 hours from the finish).
 */
export async function completeClaim(em: EntityManager, jobId: string, expiresAt?: Date): Promise<void> {
  await em.execute(
    `update idempotency_claim set state = 'completed'${expiresAt ? ', expires_at = ?' : ''} where job_id = ?`,
    expiresAt ? [expiresAt, jobId] : [jobId],
    'run',
  );
}

/** The job ended without a charge: its key is free again, so the same request runs anew. */
export async function releaseClaims(em: EntityManager, jobIds: readonly string[]): Promise<void> {
  if (jobIds.length === 0) return;
  await em.execute(`delete from idempotency_claim where job_id in (${jobIds.map(() => '?').join(', ')})`, [...jobIds], 'run');
}

/** Whether a key names this job (its client can find it again: a retry answers its id). */
export async function hasClaim(em: EntityManager, jobId: string): Promise<boolean> {
  const rows = await em.execute<unknown[]>('select 1 from idempotency_claim where job_id = ? limit 1', [jobId]);
  return rows.length > 0;
}

/** Deletes claims past their time (rows are only ever read by key, so this is tidying). Returns how many. */
export async function deleteExpiredClaims(em: EntityManager, now: Date): Promise<number> {
  const rows = await em.execute<unknown[]>('delete from idempotency_claim where expires_at <= ? returning job_id', [now]);
  return rows.length;
}
