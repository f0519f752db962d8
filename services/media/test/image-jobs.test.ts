import { createHash, randomUUID } from 'node:crypto';
import { GatewayError } from '@gw/errors';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeImageJobs } from '../src/domain/image-job-purge.ts';
import {
  abandonImageJob,
  beginImageJob,
  claimRun,
  finishImageJob,
  getImageJob,
  IMAGE_JOB_ID,
  leaseEnd,
  recordOutput,
  renewClaim,
  type BeginInput,
  type JobPolicy,
} from '../src/domain/image-jobs.ts';
import { mediaOrm, png } from './support.ts';

const HOUR = 60 * 60_000;
const POLICY: JobPolicy = { resultTtlMs: 24 * HOUR, staleAfterMs: HOUR / 2 };
const T0 = new Date('2026-03-01T00:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const hash = (body: string) => createHash('sha256').update(body).digest();

const keyed = (key: string, body = 'body', accountId = 'acct-1'): BeginInput => ({
  accountId,
  idempotencyKey: key,
  bodyHash: hash(body),
  operation: 'generate',
});

async function refusal(p: Promise<unknown>): Promise<GatewayError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof GatewayError)) throw new Error(`expected a GatewayError, got ${String(err)}`);
  return err;
}

describe('image jobs and Idempotency-Keys on real Postgres', () => {
  let orm: MikroORM;
  const em = () => orm.em.fork();
  /** How many times a job's abandonment was announced (its outbox events). */
  const announced = async (jobId: string) =>
    Number((await em().execute<Array<{ n: string }>>('select count(*) as n from outbox_event where msg_id = ?', [`${jobId}:abandoned`]))[0]!.n);
  /** Begin, run and finish a job with one stored image. */
  async function succeed(input: BeginInput, now: Date): Promise<string> {
    const jobId = await beginImageJob(em(), input, POLICY, now);
    const { keepResult } = await claimRun(em(), { jobId, accountId: input.accountId, operation: input.operation }, now);
    await recordOutput(em(), { jobId, provider: 'openai', keepResult }, [{ data: png(2, 3), mimeType: 'image/png' }]);
    await finishImageJob(em(), { jobId, accountId: input.accountId, creditCharged: 1_000n, balanceAfter: 9_000n }, POLICY, now);
    return jobId;
  }

  beforeAll(async () => {
    orm = await mediaOrm();
  });
  afterAll(() => orm?.close());

  it('a job without a key is a fresh job every time', async () => {
    const input: BeginInput = { accountId: 'acct-1', idempotencyKey: '', bodyHash: new Uint8Array(), operation: 'generate' };
    const [a, b] = [await beginImageJob(em(), input, POLICY, T0), await beginImageJob(em(), input, POLICY, T0)];
    expect(a).toMatch(IMAGE_JOB_ID);
    expect(b).not.toBe(a);
  });

  it('a key in flight answers duplicate_request without job_id; once finished, with job_id', async () => {
    const key = randomUUID();
    const jobId = await beginImageJob(em(), keyed(key), POLICY, T0);
    const inFlight = await refusal(beginImageJob(em(), keyed(key), POLICY, T0));
    expect(inFlight.code).toBe('duplicate_request');
    expect(inFlight.details.job_id).toBeUndefined();

    await claimRun(em(), { jobId, accountId: 'acct-1', operation: 'generate' }, T0);
    await recordOutput(em(), { jobId, provider: 'openai', keepResult: true }, [{ data: png(1, 1), mimeType: 'image/png' }]);
    await finishImageJob(em(), { jobId, accountId: 'acct-1', creditCharged: 1_000n, balanceAfter: 9_000n }, POLICY, at(1_000));
    const done = await refusal(beginImageJob(em(), keyed(key), POLICY, at(2_000)));
    expect(done.code).toBe('duplicate_request');
    expect(done.details.job_id).toBe(jobId);
    // The finish completed the key's claim, kept as long as the result.
    const claims = await em().execute<Array<{ state: string; expires_at: Date }>>('select state, expires_at from idempotency_claim where job_id = ?', [jobId]);
    expect(claims.map((c) => [c.state, new Date(c.expires_at).getTime()])).toEqual([['completed', at(1_000).getTime() + POLICY.resultTtlMs]]);
  });

  it('the same key with another body or endpoint is invalid_request; keys are per account', async () => {
    const key = randomUUID();
    await succeed(keyed(key), T0);
    expect((await refusal(beginImageJob(em(), keyed(key, 'other body'), POLICY, T0))).code).toBe('invalid_request');
    expect((await refusal(beginImageJob(em(), { ...keyed(key), operation: 'edit' }, POLICY, T0))).code).toBe('invalid_request');
    await expect(beginImageJob(em(), keyed(key, 'body', 'acct-2'), POLICY, T0)).resolves.toMatch(IMAGE_JOB_ID);
  });

  it('of 10 concurrent claims of one key exactly one gets the job', async () => {
    const key = randomUUID();
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, () => beginImageJob(em(), keyed(key), POLICY, T0)));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [(o.reason as GatewayError).code] : []));
    expect(refused).toEqual(Array.from({ length: 9 }, () => 'duplicate_request'));
  });

  it('an abandoned job frees its key and keeps nothing; abandoning twice or a finished job changes nothing', async () => {
    const key = randomUUID();
    const first = await beginImageJob(em(), keyed(key), POLICY, T0);
    await claimRun(em(), { jobId: first, accountId: 'acct-1', operation: 'generate' }, T0);
    await recordOutput(em(), { jobId: first, provider: 'openai', keepResult: true }, [{ data: png(1, 1), mimeType: 'image/png' }]);
    await abandonImageJob(em(), { jobId: first, accountId: 'acct-1' }, T0);
    await abandonImageJob(em(), { jobId: first, accountId: 'acct-1' }, T0);
    expect(await em().execute('select 1 from idempotency_claim where job_id = ?', [first])).toHaveLength(0);
    const again = await succeed(keyed(key), T0);
    expect(again).not.toBe(first);
    await abandonImageJob(em(), { jobId: again, accountId: 'acct-1' }, T0);
    expect((await getImageJob(em(), { jobId: again, accountId: 'acct-1' }, T0)).images).toHaveLength(1);
    // A late output for the abandoned job is not kept.
    expect(await recordOutput(em(), { jobId: first, provider: 'openai', keepResult: true }, [])).toBe(false);
  });

  it('the provider is claimed once per job, only by its own account and operation', async () => {
    const jobId = await beginImageJob(em(), keyed(randomUUID()), POLICY, T0);
    expect((await refusal(claimRun(em(), { jobId, accountId: 'acct-2', operation: 'generate' }, T0))).code).toBe('not_found');
    expect((await refusal(claimRun(em(), { jobId, accountId: 'acct-1', operation: 'edit' }, T0))).code).toBe('not_found');
    await claimRun(em(), { jobId, accountId: 'acct-1', operation: 'generate' }, T0);
    expect((await refusal(claimRun(em(), { jobId, accountId: 'acct-1', operation: 'generate' }, T0))).code).toBe('not_found');
  });

  it('a finished result is the owner’s for 24 hours, then the key is free again', async () => {
    const key = randomUUID();
    const jobId = await succeed(keyed(key), T0);
    const job = await getImageJob(em(), { jobId, accountId: 'acct-1' }, at(23 * HOUR));
    expect(job).toMatchObject({ jobId, creditCharged: 1_000n, balanceAfter: 9_000n, completedAt: T0 });
    expect(Buffer.from(job.images[0]!.data).equals(png(2, 3))).toBe(true);
    expect(job.images[0]!.mimeType).toBe('image/png');
    for (const probe of [
      { jobId, accountId: 'acct-2', now: T0 },
      { jobId, accountId: 'acct-1', now: at(24 * HOUR) },
      { jobId: 'imgjob_00000000000000000000000000000000', accountId: 'acct-1', now: T0 },
      { jobId: 'not-a-job', accountId: 'acct-1', now: T0 },
    ]) {
      expect((await refusal(getImageJob(em(), probe, probe.now))).code).toBe('not_found');
    }
    await expect(beginImageJob(em(), keyed(key), POLICY, at(24 * HOUR + 1))).resolves.toMatch(IMAGE_JOB_ID);
  });

  it('a job without a key keeps no result to fetch', async () => {
    const jobId = await succeed({ accountId: 'acct-1', idempotencyKey: '', bodyHash: new Uint8Array(), operation: 'generate' }, T0);
    expect((await refusal(getImageJob(em(), { jobId, accountId: 'acct-1' }, T0))).code).toBe('not_found');
  });

  it('finishing is idempotent for the same charge and refused for an abandoned job', async () => {
    const jobId = await succeed(keyed(randomUUID()), T0);
    await finishImageJob(em(), { jobId, accountId: 'acct-1', creditCharged: 1_000n, balanceAfter: 9_000n }, POLICY, T0);
    const abandoned = await beginImageJob(em(), keyed(randomUUID()), POLICY, T0);
    await abandonImageJob(em(), { jobId: abandoned, accountId: 'acct-1' }, T0);
    const err = await refusal(finishImageJob(em(), { jobId: abandoned, accountId: 'acct-1', creditCharged: 1n, balanceAfter: 1n }, POLICY, T0));
    expect(err.code).toBe('not_found');
  });

  it('a job left running past the stale bound frees its key, at begin and by the purge, even with its lease renewed', async () => {
    const leased: JobPolicy = { ...POLICY, claimLeaseMs: 2 * HOUR };
    const key = randomUUID();
    const stuck = await beginImageJob(em(), keyed(key), leased, T0);
    expect((await refusal(beginImageJob(em(), keyed(key), leased, at(leased.staleAfterMs - 1)))).code).toBe('duplicate_request');
    await expect(beginImageJob(em(), keyed(key), leased, at(leased.staleAfterMs + 1))).resolves.not.toBe(stuck);

    const other = await beginImageJob(em(), keyed(randomUUID()), leased, T0);
    const { staled } = await purgeImageJobs(em(), leased, at(leased.staleAfterMs + 1));
    expect(staled).toBeGreaterThanOrEqual(1);
    expect((await refusal(claimRun(em(), { jobId: other, accountId: 'acct-1', operation: 'generate' }, T0))).code).toBe('not_found');
  });

  describe('claims carry leases', () => {
    const LEASE = 60_000;
    const leased: JobPolicy = { ...POLICY, claimLeaseMs: LEASE };

    it('media died between commit and answer: a retry with the key is 409 while the lease lasts, then runs once', async () => {
      const key = randomUUID();
      const lost = await beginImageJob(em(), keyed(key), leased, T0); // committed; its answer never reached the gateway
      const early = await refusal(beginImageJob(em(), keyed(key), leased, at(LEASE - 1)));
      expect(early.code).toBe('duplicate_request');
      expect(early.message).toMatch(/free again within a minute/);
      const retry = await beginImageJob(em(), keyed(key), leased, at(LEASE + 1));
      expect(retry).not.toBe(lost);
      // The orphan is abandoned and announced once (billing gives back whatever it held), and the
      // retry's job runs: the provider is called once for it.
      expect(await announced(lost)).toBe(1);
      await expect(claimRun(em(), { jobId: retry, accountId: 'acct-1', operation: 'generate' }, at(LEASE + 2))).resolves.toEqual({ keepResult: true });
      expect((await refusal(claimRun(em(), { jobId: lost, accountId: 'acct-1', operation: 'generate' }, at(LEASE + 2)))).code).toBe('not_found');
    });

    it('the sweep frees an orphan without a retry; a claim whose run renews it stays, and a finished one answers its job', async () => {
      const [orphanKey, runningKey] = [randomUUID(), randomUUID()];
      const orphan = await beginImageJob(em(), keyed(orphanKey), leased, T0);
      const running = await beginImageJob(em(), keyed(runningKey), leased, T0);
      await claimRun(em(), { jobId: running, accountId: 'acct-1', operation: 'generate' }, at(30_000), leaseEnd(leased, at(30_000)));
      expect(await renewClaim(em(), running, leaseEnd(leased, at(80_000)))).toBe(true); // the run renews every third of a lease
      expect(await renewClaim(em(), running, at(0))).toBe(true); // a late, shorter renewal shortens nothing

      const { staled } = await purgeImageJobs(em(), leased, at(LEASE + 1));
      expect(staled).toBeGreaterThanOrEqual(1);
      expect(await announced(orphan)).toBe(1);
      expect(await announced(running)).toBe(0);
      expect((await refusal(beginImageJob(em(), keyed(runningKey), leased, at(LEASE + 1)))).code).toBe('duplicate_request');

      await recordOutput(em(), { jobId: running, provider: 'openai', keepResult: true, leaseUntil: leaseEnd(leased, at(120_000)) }, [
        { data: png(2, 3), mimeType: 'image/png' },
      ]);
      await finishImageJob(em(), { jobId: running, accountId: 'acct-1', creditCharged: 1_000n, balanceAfter: 9_000n }, leased, at(121_000));
      const again = await refusal(beginImageJob(em(), keyed(runningKey), leased, at(10 * LEASE)));
      expect(again.details).toEqual({ job_id: running }); // the retry gets the job, charged once
      expect(await renewClaim(em(), running, at(20 * LEASE))).toBe(false); // no longer running
    });

    it('leases are not judged before leasesFrom (a media that just restarted lets runs renew first)', async () => {
      const key = randomUUID();
      const lost = await beginImageJob(em(), keyed(key), leased, T0);
      const restarted: JobPolicy = { ...leased, leasesFrom: at(LEASE + 30_000) };
      expect((await refusal(beginImageJob(em(), keyed(key), restarted, at(LEASE + 1)))).code).toBe('duplicate_request');
      expect(await beginImageJob(em(), keyed(key), restarted, at(LEASE + 30_000))).not.toBe(lost);
    });
  });

  it('the purge deletes expired jobs with their images and keeps live ones', async () => {
    const old = await succeed(keyed(randomUUID()), at(-25 * HOUR));
    const fresh = await succeed(keyed(randomUUID()), T0);
    const { deleted } = await purgeImageJobs(em(), POLICY, T0);
    expect(deleted).toBeGreaterThanOrEqual(1);
    const rows = await em().execute<Array<{ id: string }>>('select id from image_job where id in (?, ?)', [old, fresh]);
    expect(rows.map((r) => r.id)).toEqual([fresh]);
    const images = await em().execute<Array<{ n: string }>>('select count(*) as n from image_job_image where job_id = ?', [old]);
    expect(Number(images[0]!.n)).toBe(0);
  });
});
