import { randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { eventsV1, videoV1 } from '@gw/contracts';
import { FallbackRouter } from '@gw/providers';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VideoJobInput } from '../src/db/video-job-input.entity.ts';
import { VideoJob } from '../src/db/video-job.entity.ts';
import { downloadContent } from '../src/domain/content-download.ts';
import { JobCreator } from '../src/domain/create-job.ts';
import { JobDriver } from '../src/domain/job-driver.ts';
import { JobWorker } from '../src/domain/job-worker.ts';
import { recordRefund } from '../src/events/refund-completed.subscriber.ts';
import { createRequest, FakeBilling, manualClock, outboxEvents, ScriptedProvider, silent, videoJobsOrm, type PollStep } from './support.ts';

const RUNNING: PollStep = { state: 'running' };
const COMPLETED: PollStep = { state: 'completed', actualDurationSeconds: 4 };

describe('job worker: drives jobs with the provider (real Postgres)', () => {
  let orm: MikroORM;
  const clock = manualClock();
  const billing = new FakeBilling();
  let provider: ScriptedProvider;
  const settings = { pollInitialMs: 1_000, pollMaxMs: 4_000, providerTimeoutMs: 5_000, maxJobMs: 600_000 };
  const worker = (overrides: Partial<{ concurrency: number }> = {}) =>
    new JobWorker({
      orm,
      driver: new JobDriver({ orm, providers: { get: (name) => (name === 'sim' ? provider : undefined) }, router: new FallbackRouter(), clock, logger: silent, settings }),
      clock,
      logger: silent,
      intervalMs: 60_000,
      concurrency: overrides.concurrency ?? 8,
      leaseMs: 30_000,
    });
  const job = (id: string) => orm.em.fork().findOneOrFail(VideoJob, { id });
  const newJob = async (overrides: Parameters<typeof createRequest>[1] = {}) => {
    const acct = randomUUID();
    billing.fund(acct, 100_000n);
    return new JobCreator({ orm, billing, clock, logger: silent, router: new FallbackRouter() }).create(createRequest(acct, overrides));
  };
  /** Runs rounds, moving the clock past each wait, until the job is final (or `rounds` ran). */
  const runUntilFinal = async (id: string, rounds = 20) => {
    const w = worker();
    for (let i = 0; i < rounds; i++) {
      await w.runOnce();
      const j = await job(id);
      if (j.status === 'completed' || j.status === 'failed') return j;
      clock.advance(settings.pollMaxMs);
    }
    return job(id);
  };
  const statusEvents = async (id: string) =>
    (await outboxEvents(orm)).filter((e) => e.status?.jobId === id).map((e) => `${e.status!.previousStatus || '-'}>${e.status!.status}`);

  const drain = async (jobId: string, accountId: string, range = '') => {
    const items: videoV1.DownloadContentResponse['item'][] = [];
    const deps = { orm, providers: { get: () => provider }, clock, providerTimeoutMs: 5_000 };
    for await (const m of downloadContent(deps, create(videoV1.DownloadContentRequestSchema, { jobId, accountId, range }), new AbortController().signal)) {
      items.push(create(videoV1.DownloadContentResponseSchema, m).item);
    }
    return items;
  };

  beforeAll(async () => {
    orm = await videoJobsOrm();
  });
  afterAll(() => orm?.close());

  it('submits, polls and completes: download window of 24 h, events in order, input deleted', async () => {
    provider = new ScriptedProvider();
    provider.createScripts.push([{ state: 'queued' }, RUNNING, RUNNING, COMPLETED]);
    const view = await newJob({ prompt: 'a red fox' });
    const done = await runUntilFinal(view.jobId);
    expect(done.status).toBe('completed');
    expect(provider.created).toHaveLength(1);
    expect(provider.created[0]).toMatchObject({ model: 'sim-video', prompt: 'a red fox', durationSeconds: 4, aspectRatio: '16:9' });
    expect(done.actualDurationSeconds).toBe(4);
    expect(new Date(done.expiresAt!).getTime() - new Date(done.completedAt!).getTime()).toBe(24 * 3600_000);
    expect(await orm.em.fork().count(VideoJobInput, { jobId: view.jobId })).toBe(0);
    expect(await statusEvents(view.jobId)).toEqual(['->queued', 'queued>running', 'running>completed']);
  });

  it.each<[string, PollStep, string]>([
    ['the provider says it failed', { state: 'failed', failure: { reason: 'provider_failed', message: 'x' } }, 'provider_failed'],
    ['a safety filter blocked it', { state: 'failed', failure: { reason: 'safety', message: 'x' } }, 'safety'],
    ['the provider no longer knows it', { state: 'failed', failure: { reason: 'not_found', message: 'x' } }, 'not_found'],
  ])('fails a job when %s, announcing video.job.failed once', async (_why, step, reason) => {
    provider = new ScriptedProvider();
    provider.createScripts.push([RUNNING, step]);
    const view = await newJob();
    const failed = await runUntilFinal(view.jobId);
    expect(failed.status).toBe('failed');
    expect(failed.failureReason).toBe(reason);
    const events = (await outboxEvents(orm)).filter((e) => e.failed?.jobId === view.jobId || e.status?.jobId === view.jobId);
    expect(events.map((e) => e.msgId)).toEqual([`${view.jobId}:status:queued`, `${view.jobId}:status:running`, `${view.jobId}:status:failed`, `${view.jobId}:failed`]);
    expect(events.at(-1)!.failed).toMatchObject({ eventId: `${view.jobId}:failed`, failureReason: reason });
    expect(events.at(-2)!.status).toMatchObject({ status: 'failed', previousStatus: 'running', failureReason: reason });
  });

  it('a refused submission is a verified failure; a provider fault is retried', async () => {
    provider = new ScriptedProvider();
    const { ProviderError } = await import('@gw/providers');
    provider.createScripts.push(
      new ProviderError('upstream_error', 'The upstream provider failed (status 503)', { provider: 'sim', retryable: true, upstreamStatus: 503 }),
      [COMPLETED],
    );
    const retried = await newJob();
    expect((await runUntilFinal(retried.jobId)).status).toBe('completed');
    expect(provider.created).toHaveLength(2);

    provider.createScripts.push(new ProviderError('invalid_request', 'The upstream provider rejected the request: moderation_blocked', { provider: 'sim', retryable: false, upstreamStatus: 400 }));
    const refused = await newJob();
    const failed = await runUntilFinal(refused.jobId);
    expect([failed.status, failed.failureReason]).toEqual(['failed', 'safety']);
  });

  it('poll errors and timeouts are not failures: the job keeps its state and is polled again', async () => {
    provider = new ScriptedProvider();
    provider.createScripts.push([RUNNING, 'error', 'timeout', 'error', COMPLETED]);
    const view = await newJob();
    const done = await runUntilFinal(view.jobId);
    expect(done.status).toBe('completed');
    expect([...provider.polls.values()][0]).toBe(5);
  });

  it('a job over the maximum time fails as timed_out', async () => {
    provider = new ScriptedProvider();
    provider.createScripts.push([RUNNING]);
    const view = await newJob();
    const w = worker();
    await w.runOnce(); // submit
    clock.advance(settings.maxJobMs + 1);
    await w.runOnce();
    const j = await job(view.jobId);
    expect([j.status, j.failureReason]).toEqual(['failed', 'timed_out']);
  });

  it('an actual duration no provider could mean is left out; the job completes', async () => {
    provider = new ScriptedProvider();
    provider.createScripts.push([RUNNING, { state: 'completed', actualDurationSeconds: 3_000_000_000 }]);
    const view = await newJob();
    const done = await runUntilFinal(view.jobId);
    expect([done.status, done.actualDurationSeconds ?? null]).toEqual(['completed', null]);
  });

  it('a job whose answer cannot be recorded is failed (and so refunded) once it is over the maximum time', async () => {
    provider = new ScriptedProvider();
    // Postgres refuses a NUL in text: recording this completion fails every time.
    provider.createScripts.push([RUNNING, { state: 'completed', contentRef: 'video\u0000ref' }]);
    const view = await newJob();
    const w = worker();
    for (let i = 0; i < 4; i++) {
      await w.runOnce();
      clock.advance(31_000); // past the lease the failed round keeps
    }
    expect((await job(view.jobId)).status).toBe('running'); // not yet over the maximum time: retried
    clock.advance(settings.maxJobMs);
    await w.runOnce();
    const j = await job(view.jobId);
    expect([j.status, j.failureReason]).toEqual(['failed', 'timed_out']);
    expect((await outboxEvents(orm)).filter((e) => e.failed?.jobId === view.jobId)).toHaveLength(1);
  });

  it('two workers never drive the same job at once (for update skip locked + lease)', async () => {
    provider = new ScriptedProvider();
    let open!: () => void;
    provider.createGate = new Promise((r) => (open = r));
    const view = await newJob();
    const a = worker();
    const b = worker();
    const first = a.runOnce();
    await new Promise((r) => setTimeout(r, 100));
    expect(await b.runOnce()).toBe(0);
    open();
    await first;
    expect(provider.created).toHaveLength(1);
    expect((await job(view.jobId)).providerJobId).not.toBeNull();
  });

  it('a stopping worker aborts its provider call and hands the job back for the next one', async () => {
    provider = new ScriptedProvider();
    provider.createGate = new Promise(() => undefined); // never answers
    const view = await newJob();
    const stopping = worker();
    void stopping.runOnce();
    await new Promise((r) => setTimeout(r, 100));
    await stopping.stop();
    const handedBack = await job(view.jobId);
    expect(handedBack.leaseToken).toBeNull();
    expect(new Date(handedBack.nextAttemptAt).getTime()).toBeLessThanOrEqual(clock().getTime());
    provider.createGate = null;
    expect((await runUntilFinal(view.jobId)).status).toBe('completed');
  });

  it('a refund is recorded on its job once, however often it is delivered', async () => {
    provider = new ScriptedProvider();
    provider.createScripts.push([{ state: 'failed', failure: { reason: 'provider_failed', message: 'x' } }]);
    const view = await newJob();
    await runUntilFinal(view.jobId);
    const stored = await job(view.jobId);
    const event = create(eventsV1.RefundCompletedSchema, { eventId: `refund:${view.jobId}`, requestId: view.jobId, accountId: stored.accountId, creditRefunded: 400n });
    expect(await recordRefund(orm.em.fork(), event)).toBe(true);
    expect(await recordRefund(orm.em.fork(), event)).toBe(false);
    expect(await recordRefund(orm.em.fork(), create(eventsV1.RefundCompletedSchema, { ...event, eventId: 'refund:other', requestId: 'req-text-1' }))).toBe(false);
    expect((await job(view.jobId)).creditRefunded).toBe(400n);
  });

  describe('download', () => {
    it('streams head then chunks, passes a range through, and answers 404 alike for every forbidden case', async () => {
      provider = new ScriptedProvider();
      provider.createScripts.push([RUNNING, COMPLETED]);
      const view = await newJob();
      const owner = (await job(view.jobId)).accountId;
      await expect(drain(view.jobId, owner)).rejects.toMatchObject({ code: 'not_found' }); // not completed yet
      await runUntilFinal(view.jobId);

      const whole = await drain(view.jobId, owner);
      expect(whole[0]).toMatchObject({ case: 'head', value: { status: 200, headers: { 'content-type': 'video/mp4' } } });
      const body = Buffer.concat(whole.slice(1).map((i) => (i.case === 'chunk' ? i.value : new Uint8Array())));
      expect(body.equals(provider.mp4)).toBe(true);

      const part = await drain(view.jobId, owner, 'bytes=0-99');
      expect(part[0]).toMatchObject({ case: 'head', value: { status: 206, headers: { 'content-range': `bytes 0-99/${provider.mp4.length}` } } });
      const beyond = await drain(view.jobId, owner, 'bytes=999999-');
      expect(beyond).toEqual([{ case: 'head', value: expect.objectContaining({ status: 416, headers: { 'content-range': `bytes */${provider.mp4.length}` } }) }]);

      const errors = await Promise.all([
        drain(view.jobId, randomUUID()).catch((e: unknown) => e),
        drain('vidjob_00000000000000000000000000000000', owner).catch((e: unknown) => e),
        drain('../etc', owner).catch((e: unknown) => e),
      ]);
      clock.advance(24 * 3600_000 + 1);
      errors.push(await drain(view.jobId, owner).catch((e: unknown) => e));
      for (const e of errors) expect(e).toMatchObject({ code: 'not_found', message: 'The video job does not exist.' });
    });
  });
});
