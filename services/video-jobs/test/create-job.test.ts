import { createHash, randomUUID } from 'node:crypto';
import { GatewayError } from '@gw/errors';
import { FallbackRouter } from '@gw/providers';
import { hasClaim } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VideoJobInput } from '../src/db/video-job-input.entity.ts';
import { VideoJob } from '../src/db/video-job.entity.ts';
import { JobCreator, type SagaHooks, type SagaStep } from '../src/domain/create-job.ts';
import { recoverPendingJobs } from '../src/domain/pending-recovery.ts';
import { createRequest, FakeBilling, manualClock, outboxEvents, silent, videoJobsOrm } from './support.ts';

const hash = (text: string) => createHash('sha256').update(text).digest();

/** Stands for the process dying right after a saga step. */
class Crash extends Error {}

describe('creation saga: a job and its charge are one unit (real Postgres)', () => {
  let orm: MikroORM;
  const clock = manualClock();
  const billing = new FakeBilling();
  const creator = (hooks?: SagaHooks) => new JobCreator({ orm, billing, clock, logger: silent, router: new FallbackRouter(), ...(hooks ? { hooks } : {}) });
  const sweep = () => recoverPendingJobs({ orm, billing, clock, logger: silent, graceMs: 60_000 });
  const account = (credits = 100_000n) => {
    const id = randomUUID();
    billing.fund(id, credits);
    return id;
  };
  const job = (id: string) => orm.em.fork().findOneOrFail(VideoJob, { id });
  const onlyJob = async (accountId: string) => {
    const jobs = await orm.em.fork().find(VideoJob, { accountId });
    expect(jobs).toHaveLength(1);
    return jobs[0]!;
  };

  beforeAll(async () => {
    orm = await videoJobsOrm();
  });
  afterAll(() => orm?.close());

  it('charges duration x price once, queues the job and announces it', async () => {
    const acct = account();
    const view = await creator().create(createRequest(acct, { durationSeconds: 6, pricePerSecond: 250n }));
    expect(view.jobId).toMatch(/^vidjob_[0-9a-f]{32}$/);
    expect(view.creditCharged).toBe(1_500n);
    expect(view.balanceAfter).toBe(100_000n - 1_500n);
    expect(view.requestedDurationSeconds).toBe(6);
    expect(billing.balance(acct)).toBe(98_500n);
    const stored = await job(view.jobId);
    expect(stored.status).toBe('queued');
    const events = (await outboxEvents(orm)).filter((e) => e.status?.jobId === view.jobId);
    expect(events.map((e) => [e.msgId, e.status?.status, e.status?.previousStatus, e.status?.creditCharged])).toEqual([
      [`${view.jobId}:status:queued`, 'queued', '', 1_500n],
    ]);
  });

  it('leases its holds to this process and renews that lease, so billing releases them within minutes should it die', async () => {
    await creator().create(createRequest(account()));
    const owner = billing.owners.at(-1);
    expect(owner).toMatch(/.+\/\d+\/[0-9a-f-]{36}$/); // host/pid/uuid
    expect(billing.renewals).toContain(owner);
    expect(new Set(billing.owners)).toEqual(new Set([owner])); // one lease for every hold of the process
  });

  it('refuses while every route of the model cools down: nothing stored, held or charged (spec 7.5)', async () => {
    const acct = account();
    const req = createRequest(acct);
    const router = new FallbackRouter({ failureThreshold: 1 });
    for (const route of req.routes) router.recordFailure(route);
    const cooling = new JobCreator({ orm, billing, clock, logger: silent, router });
    await expect(cooling.create(req)).rejects.toMatchObject({ code: 'model_temporarily_unavailable', details: { retry_after_seconds: 30 } });
    expect(await orm.em.fork().find(VideoJob, { accountId: acct })).toHaveLength(0);
    expect(billing.balance(acct)).toBe(100_000n);
  });

  it('a billing refusal abandons the job, frees its key and charges nothing', async () => {
    const acct = account(300n);
    const req = createRequest(acct, { idempotencyKey: 'refused-1', bodyHash: hash('a') });
    await expect(creator().create(req)).rejects.toMatchObject({ code: 'insufficient_balance' });
    expect((await onlyJob(acct)).status).toBe('abandoned');
    expect(await orm.em.fork().count(VideoJobInput, { jobId: (await onlyJob(acct)).id })).toBe(0);
    expect(billing.balance(acct)).toBe(300n);
    // No-charge failure: the same key and body are processed anew once the wallet allows it.
    billing.fund(acct, 10_000n);
    const view = await creator().create(req);
    expect(view.creditCharged).toBe(400n);
  });

  /** Runs a creation that "crashes" right after `step` and returns its job, left `pending`. */
  const crashAfter = async (step: SagaStep, acct: string, withKey = true): Promise<VideoJob> => {
    const crashing = creator({
      afterStep: (at) => {
        if (at === step) throw new Crash(at);
      },
    });
    const req = createRequest(acct, withKey ? { idempotencyKey: `crash-${step}`, bodyHash: hash(step) } : {});
    await expect(crashing.create(req)).rejects.toBeInstanceOf(Crash);
    const pending = await onlyJob(acct);
    expect(pending.status).toBe('pending');
    // Within the grace period the sweep leaves it alone: it could be a live creation.
    expect(await sweep()).toBe(0);
    clock.advance(61_000);
    return pending;
  };

  it.each<SagaStep>(['claimed', 'authorized'])('a crash right after "%s" is cancelled by the sweep: no charge, key freed', async (step) => {
    const acct = account(10_000n);
    const pending = await crashAfter(step, acct);
    expect(await sweep()).toBeGreaterThanOrEqual(1);
    expect((await job(pending.id)).status).toBe('abandoned');
    expect(billing.holds.get(pending.id)?.status ?? 'never held').toMatch(/^(never held|released)$/);
    expect(billing.balance(acct)).toBe(10_000n);
    expect(await hasClaim(orm.em.fork(), pending.id)).toBe(false);
    expect((await outboxEvents(orm)).filter((e) => e.status?.jobId === pending.id)).toEqual([]);
    expect(await sweep()).toBe(0);
    expect(billing.balance(acct)).toBe(10_000n);
  });

  it('a crash right after "settled" is finished by the sweep: the job runs, charged once', async () => {
    const acct = account(10_000n);
    const pending = await crashAfter('settled', acct);
    expect(await sweep()).toBeGreaterThanOrEqual(1);
    const after = await job(pending.id);
    expect([after.status, after.creditCharged]).toEqual(['queued', 400n]);
    expect(billing.balance(acct)).toBe(9_600n);
    expect((await outboxEvents(orm)).some((e) => e.msgId === `${pending.id}:status:queued`)).toBe(true);
    // The key still names the job: a retry learns its id.
    await expect(creator().create(createRequest(acct, { idempotencyKey: 'crash-settled', bodyHash: hash('settled') }))).rejects.toMatchObject({
      code: 'duplicate_request',
      details: { job_id: pending.id },
    });
    expect(await sweep()).toBe(0);
    expect(billing.balance(acct)).toBe(9_600n);
  });

  it('a crash right after "settled" without an Idempotency-Key: nothing leads back to the job, so the sweep refunds and cancels it', async () => {
    const acct = account(10_000n);
    const pending = await crashAfter('settled', acct, false);
    expect(billing.balance(acct)).toBe(9_600n);
    expect(await sweep()).toBeGreaterThanOrEqual(1);
    expect((await job(pending.id)).status).toBe('abandoned');
    expect(billing.balance(acct)).toBe(10_000n);
    expect((await outboxEvents(orm)).filter((e) => e.status?.jobId === pending.id)).toEqual([]);
    expect(await sweep()).toBe(0);
    expect(billing.balance(acct)).toBe(10_000n);
  });

  it('a charge billing cannot confirm in time: the client hears what becomes of the job, and without a key it is refunded', async () => {
    const acct = account(10_000n);
    billing.faults.set('settle', 'after');
    billing.faults.set('release', 'before');
    const outcome = await creator().create(createRequest(acct)).catch((e: unknown) => e);
    expect(outcome).toMatchObject({ code: 'upstream_error', message: expect.stringContaining('cancelled and anything charged for it refunded') });
    billing.faults.clear();
    clock.advance(61_000);
    expect(await sweep()).toBeGreaterThanOrEqual(1);
    expect((await onlyJob(acct)).status).toBe('abandoned');
    expect(billing.balance(acct)).toBe(10_000n);
  });

  it('billing unreachable while sweeping leaves the job pending; a later sweep resolves it', async () => {
    const acct = account(10_000n);
    const crashing = creator({
      afterStep: (at) => {
        if (at === 'authorized') throw new Crash(at);
      },
    });
    await expect(crashing.create(createRequest(acct))).rejects.toBeInstanceOf(Crash);
    const pending = await onlyJob(acct);
    clock.advance(61_000);
    billing.faults.set('release', 'before');
    await expect(sweep()).rejects.toThrow(/billing unavailable/);
    expect((await job(pending.id)).status).toBe('pending');
    expect(await sweep()).toBeGreaterThanOrEqual(1);
    expect((await job(pending.id)).status).toBe('abandoned');
    expect(billing.balance(acct)).toBe(10_000n);
  });

  it('a settle whose answer is lost is resolved at once: the job exists and is charged once', async () => {
    const acct = account(10_000n);
    billing.faults.set('settle', 'after');
    const view = await creator().create(createRequest(acct));
    expect(view.creditCharged).toBe(400n);
    expect((await job(view.jobId)).status).toBe('queued');
    expect(billing.balance(acct)).toBe(9_600n);
  });

  it('an authorize whose answer is lost is cancelled at once: no job, no charge', async () => {
    const acct = account(10_000n);
    billing.faults.set('authorize', 'after');
    await expect(creator().create(createRequest(acct))).rejects.toMatchObject({ code: 'upstream_error' });
    expect((await onlyJob(acct)).status).toBe('abandoned');
    expect(billing.balance(acct)).toBe(10_000n);
  });

  it('a creation the sweep took for dead is undone if its charge lands afterwards', async () => {
    const acct = account(10_000n);
    const slow = creator({
      afterStep: async (at) => {
        if (at !== 'claimed') return;
        clock.advance(61_000); // the process froze past the grace period...
        await sweep(); // ...and another replica's sweep cancelled the job
      },
    });
    await expect(slow.create(createRequest(acct))).rejects.toMatchObject({ code: 'upstream_error' });
    expect((await onlyJob(acct)).status).toBe('abandoned');
    expect(billing.balance(acct)).toBe(10_000n);
    expect(billing.calls.at(-1)).toBe('refund');
  });

  describe('Idempotency-Key', () => {
    it('in flight: 409 without job_id; finished: 409 with job_id; one charge', async () => {
      const acct = account(10_000n);
      const req = createRequest(acct, { idempotencyKey: 'k-flight', bodyHash: hash('body') });
      let duplicate: unknown;
      const view = await creator({
        afterStep: async (at) => {
          if (at === 'authorized') duplicate = await creator().create(req).catch((err: unknown) => err);
        },
      }).create(req);
      expect(duplicate).toBeInstanceOf(GatewayError);
      expect(duplicate).toMatchObject({ code: 'duplicate_request', details: {} });
      // Queueing the job completed its claim: the row itself says so.
      const [claim] = await orm.em.fork().execute<{ state: string }[]>('select state from idempotency_claim where job_id = ?', [view.jobId]);
      expect(claim?.state).toBe('completed');
      await expect(creator().create(req)).rejects.toMatchObject({ code: 'duplicate_request', details: { job_id: view.jobId } });
      expect(billing.balance(acct)).toBe(9_600n);
      expect(await orm.em.fork().count(VideoJob, { accountId: acct, status: { $ne: 'abandoned' } })).toBe(1);
    });

    it('another body under a used key is invalid_request; another account has its own keys', async () => {
      const acct = account(10_000n);
      await creator().create(createRequest(acct, { idempotencyKey: 'k-shared', bodyHash: hash('one') }));
      await expect(creator().create(createRequest(acct, { idempotencyKey: 'k-shared', bodyHash: hash('two') }))).rejects.toMatchObject({
        code: 'invalid_request',
      });
      const other = account(10_000n);
      await expect(creator().create(createRequest(other, { idempotencyKey: 'k-shared', bodyHash: hash('one') }))).resolves.toBeDefined();
    });

    it('is kept 24 hours, then processed anew', async () => {
      const acct = account(10_000n);
      const req = createRequest(acct, { idempotencyKey: 'k-day', bodyHash: hash('day') });
      const first = await creator().create(req);
      clock.advance(23 * 3600_000);
      await expect(creator().create(req)).rejects.toMatchObject({ code: 'duplicate_request', details: { job_id: first.jobId } });
      clock.advance(3600_000 + 1);
      const second = await creator().create(req);
      expect(second.jobId).not.toBe(first.jobId);
      expect(billing.balance(acct)).toBe(9_200n);
    });

    it('concurrent creations with one key make exactly one job and one charge', async () => {
      const acct = account(10_000n);
      const req = createRequest(acct, { idempotencyKey: 'k-race', bodyHash: hash('race') });
      const results = await Promise.allSettled(Array.from({ length: 6 }, () => creator().create(req)));
      const created = results.filter((r) => r.status === 'fulfilled');
      expect(created).toHaveLength(1);
      const refusals = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as GatewayError).code] : []));
      expect(refusals).toEqual(Array.from({ length: 5 }, () => 'duplicate_request'));
      expect(billing.balance(acct)).toBe(9_600n);
    });
  });

  it('refuses what the worker could not run', async () => {
    const acct = account();
    for (const bad of [{ durationSeconds: 5 }, { aspectRatio: '4:3' }, { prompt: 'x'.repeat(4001) }, { prompt: '  ' }, { prompt: 'a\u0000b' }]) {
      await expect(creator().create(createRequest(acct, bad))).rejects.toMatchObject({ code: 'invalid_request' });
    }
    await expect(creator().create(createRequest(acct, { routes: [] }))).rejects.toMatchObject({ code: 'model_temporarily_unavailable' });
    expect(await orm.em.fork().count(VideoJob, { accountId: acct })).toBe(0);
  });
});
