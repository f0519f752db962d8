import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Migration } from '@mikro-orm/migrations';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import {
  claimIdempotencyKey,
  completeClaim,
  createOrm,
  deleteExpiredClaims,
  hasClaim,
  IDEMPOTENCY_CLAIM_DROP_SQL,
  IDEMPOTENCY_CLAIM_TABLE_SQL,
  releaseClaims,
  runMigrations,
  type ClaimOwner,
  type KeyClaim,
} from '../src/index.ts';

/** The owner's jobs, as small as the claims need: a status per job. */
class Migration001Jobs extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "job" ("id" text primary key, "status" text not null)`);
    for (const sql of IDEMPOTENCY_CLAIM_TABLE_SQL) this.addSql(sql);
  }

  override async down(): Promise<void> {
    for (const sql of IDEMPOTENCY_CLAIM_DROP_SQL) this.addSql(sql);
    this.addSql('drop table if exists "job"');
  }
}

const T0 = new Date('2026-03-01T00:00:00Z');
const DAY = 24 * 3600_000;
const at = (ms: number) => new Date(T0.getTime() + ms);
const hash = (body: string) => createHash('sha256').update(body).digest();

/** Running jobs are alive unless listed as orphans; an orphan is abandoned when asked about. */
function owner(orphans = new Set<string>()): ClaimOwner {
  return {
    async jobState(tx: EntityManager, jobId: string) {
      if (orphans.has(jobId)) {
        // As media does: the orphan is abandoned and its claim released, in the claim's transaction.
        await tx.execute(`update job set status = 'abandoned' where id = ?`, [jobId]);
        await releaseClaims(tx, [jobId]);
      }
      const [job] = await tx.execute<{ status: string }[]>('select status from job where id = ?', [jobId]);
      if (!job || job.status === 'abandoned') return 'free';
      return job.status === 'running' ? 'in_flight' : 'completed';
    },
  };
}

describe('Idempotency-Key claims (real Postgres)', () => {
  let orm: MikroORM;
  const em = () => orm.em.fork();
  const accountId = randomUUID();

  /** A request: its job row and its claim, one transaction, as a service writes them. */
  async function begin(key: string, body = 'body', opts: { scope?: string; now?: Date; owner?: ClaimOwner } = {}) {
    const jobId = `job_${randomBytes(8).toString('hex')}`;
    const now = opts.now ?? T0;
    const claim: KeyClaim = { accountId, key, scope: opts.scope ?? 'images/generations', bodyHash: hash(body), jobId, now, expiresAt: new Date(now.getTime() + DAY) };
    const outcome = await em().transactional(async (tx) => {
      const result = await claimIdempotencyKey(tx, claim, opts.owner ?? owner());
      if (result.kind === 'claimed') await tx.execute(`insert into job (id, status) values (?, 'running')`, [jobId]);
      return result;
    });
    return { jobId, outcome };
  }
  const finish = async (jobId: string, expiresAt?: Date) => {
    await em().execute(`update job set status = 'succeeded' where id = ?`, [jobId]);
    await completeClaim(em(), jobId, expiresAt);
  };

  beforeAll(async () => {
    orm = await createOrm({
      databaseUrl: inject('databaseUrl'),
      schema: `kit_t${randomBytes(4).toString('hex')}`,
      entities: [],
      migrations: [{ name: 'Migration001Jobs', class: Migration001Jobs }],
    });
    await runMigrations(orm);
  });
  afterAll(() => orm?.close());

  it('in flight, then completed with its job; another body or endpoint under the key is a conflict', async () => {
    const key = randomUUID();
    const first = await begin(key);
    expect(first.outcome).toEqual({ kind: 'claimed' });
    expect((await begin(key)).outcome).toEqual({ kind: 'in_flight' });
    expect((await begin(key, 'other body')).outcome).toEqual({ kind: 'conflict' });
    expect((await begin(key, 'body', { scope: 'images/edits' })).outcome).toEqual({ kind: 'conflict' });
    await finish(first.jobId);
    expect((await begin(key)).outcome).toEqual({ kind: 'completed', jobId: first.jobId });
    expect(await hasClaim(em(), first.jobId)).toBe(true);
  });

  it('of 10 concurrent claims of one key exactly one is taken', async () => {
    const key = randomUUID();
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => begin(key)));
    expect(outcomes.filter((o) => o.outcome.kind === 'claimed')).toHaveLength(1);
    expect(outcomes.filter((o) => o.outcome.kind === 'in_flight')).toHaveLength(9);
  });

  it('a released key is claimed anew; so is one whose job the owner reports abandoned or abandons as an orphan', async () => {
    const key = randomUUID();
    const failed = await begin(key);
    await em().execute(`update job set status = 'abandoned' where id = ?`, [failed.jobId]);
    await releaseClaims(em(), [failed.jobId]);
    expect(await hasClaim(em(), failed.jobId)).toBe(false);
    const second = await begin(key);
    expect(second.outcome).toEqual({ kind: 'claimed' });

    // Its job abandoned by a replica that did not release the claim (an older version): free.
    await em().execute(`update job set status = 'abandoned' where id = ?`, [second.jobId]);
    const third = await begin(key);
    expect(third.outcome).toEqual({ kind: 'claimed' });

    // The owner judges the job an orphan when asked: abandoned in the claim's transaction, the key taken over.
    const fourth = await begin(key, 'another body', { owner: owner(new Set([third.jobId])) });
    expect(fourth.outcome).toEqual({ kind: 'claimed' });
    const [row] = await em().execute<{ status: string }[]>('select status from job where id = ?', [third.jobId]);
    expect(row!.status).toBe('abandoned');
    expect((await begin(key, 'another body')).outcome).toEqual({ kind: 'in_flight' });
  });

  it('a job the owner reports finished completes its claim (a claim written by a replica that does not complete)', async () => {
    const key = randomUUID();
    const first = await begin(key);
    await em().execute(`update job set status = 'succeeded' where id = ?`, [first.jobId]);
    expect((await begin(key)).outcome).toEqual({ kind: 'completed', jobId: first.jobId });
    const [claim] = await em().execute<{ state: string }[]>('select state from idempotency_claim where job_id = ?', [first.jobId]);
    expect(claim!.state).toBe('completed');
  });

  it('a key is free once its claim expires; completing may restart its time; expired claims are deleted', async () => {
    const key = randomUUID();
    const first = await begin(key);
    await finish(first.jobId, at(2 * DAY));
    expect((await begin(key, 'body', { now: at(DAY + 1) })).outcome).toEqual({ kind: 'completed', jobId: first.jobId });
    const second = await begin(key, 'other body', { now: at(2 * DAY) });
    expect(second.outcome).toEqual({ kind: 'claimed' });
    expect(await hasClaim(em(), first.jobId)).toBe(false);

    const other = await begin(randomUUID());
    expect(await deleteExpiredClaims(em(), at(3 * DAY + 1))).toBeGreaterThanOrEqual(2);
    expect(await hasClaim(em(), second.jobId)).toBe(false);
    expect(await hasClaim(em(), other.jobId)).toBe(false);
  });
});
