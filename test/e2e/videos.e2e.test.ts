import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { billingV1, catalogV1, createClient, eventsV1, videoV1 } from '@gw/contracts';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { DEMO_MODELS } from '../../scripts/demo-models.ts';
import { balanceOf, billingClient, catalogClient, postDeclaredLength, waitForListing } from '../support/clients.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';
import { stable } from '../support/wire.ts';

/** Demo prices in credits per second of video. */
const PRICE: Record<string, number> = Object.fromEntries(DEMO_MODELS.map((m) => [m.id, Number(m.priceCreditPerUnit)]));
/** A real 1x1 PNG. */
const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
/** The head of a 1x1 baseline JPEG (SOI, JFIF APP0, SOF0, EOI): enough for every type check on the way. */
const JPEG_B64 = Buffer.from('ffd8ffe000104a46494600010100000100010000ffc0000b080001000101011100ffd9', 'hex').toString('base64');
const FIRST_FRAME = { b64_json: PNG_B64, mime_type: 'image/png' };
const LAST_FRAME = { data_url: `data:image/jpeg;base64,${JPEG_B64}` };

interface JobBody {
  id: string;
  status: string;
  model: string;
  requested_duration_seconds: number;
  content_url?: string;
  completed_at?: number;
  expires_at?: number;
  actual_duration_seconds?: number;
  service: { credit_charged: number; credit_refunded?: number; balance_after?: number };
}
interface ErrorBody {
  error: { code: string; message: string; job_id?: string };
}

const errorOf = (res: { json: <T>() => T }) => res.json<ErrorBody>().error;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

describe('video jobs through the whole system (provider simulator: sora-sim, veo-sim)', () => {
  let system: RunningSystem;
  let account: { accountId: string; keyId: string; apiKey: string };
  let nc: NatsConnection;
  let basePath: string;
  /**
   * Events namespace of this suite's system alone. Every system of a run would otherwise share the
   * run's namespace, and with it the durable consumers (`billing-video-refunds`,
   * `video-jobs-refunds`): another suite's billing would take this suite's failure events. The
   * run's teardown deletes it with the rest (its streams start with the run's prefix).
   */
  const ns = `${inject('eventsNamespace')}_videos`;
  /**
   * video-jobs' settings. `restartService` relaunches a service with the options the system was
   * started with, read at launch, so the expiry test moves video-jobs' clock by changing this
   * object before restarting it. Fixed ports keep billing and video-jobs at their addresses across
   * restarts (the gateway's clients reconnect on their own).
   */
  const videoEnv: Record<string, string> = {
    VIDEO_WORKER_INTERVAL_MS: '200',
    VIDEO_POLL_INITIAL_MS: '300',
    VIDEO_POLL_MAX_MS: '800',
    VIDEO_PROVIDER_TIMEOUT_MS: '5000',
    VIDEO_LEASE_MS: '12000',
    BILLING_TIMEOUT_MS: '1000',
    VIDEO_PENDING_GRACE_MS: '4000',
    VIDEO_RECOVERY_INTERVAL_MS: '500',
    CLOCK_OFFSET_MS: '0',
  };

  const api = async (method: string, path: string, opts: { key?: string; body?: unknown; headers?: Record<string, string> } = {}) => {
    const res = await fetch(`${system.baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${opts.key ?? account.apiKey}`,
        ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...opts.headers,
      },
      ...(opts.body === undefined ? {} : { body: typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body) }),
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, bytes, json: <T>() => JSON.parse(bytes.toString('utf8')) as T };
  };
  const createJob = async (body: Record<string, unknown>, opts: { key?: string; headers?: Record<string, string> } = {}) => {
    const res = await api('POST', '/videos/generations', { ...opts, body });
    if (res.status !== 200) throw new Error(`creation answered ${res.status}: ${res.bytes.toString()}`);
    return res.json<JobBody>();
  };
  /** video-jobs dies at once (no cleanup), then starts again: its recovery sweep finds the job. */
  const killAndRestartVideoJobs = async () => {
    const child = system.services.get('video-jobs')!.child;
    await new Promise((done) => {
      child.once('exit', done);
      child.kill('SIGKILL');
    });
    await system.restartService('video-jobs');
  };
  const getJob = async (id: string, key?: string) => {
    const res = await api('GET', `/videos/generations/${id}`, key === undefined ? {} : { key });
    if (res.status !== 200) throw new Error(`status answered ${res.status}: ${res.bytes.toString()}`);
    return res.json<JobBody>();
  };
  /**
   * Polls as a client would (free) until the job is final, or `until` says so. Like a client, it
   * retries a 502 (an internal service restarting) and gives up only at the deadline.
   */
  const waitFor = async (id: string, until: (job: JobBody) => boolean = (j) => j.status === 'completed' || j.status === 'failed', timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const res = await api('GET', `/videos/generations/${id}`);
      if (res.status !== 200 && res.status !== 502) throw new Error(`status answered ${res.status}: ${res.bytes.toString()}`);
      const job = res.status === 200 ? res.json<JobBody>() : undefined;
      if (job && until(job)) return job;
      if (Date.now() > deadline) throw new Error(`job ${id} still ${job?.status ?? 'unreadable'}`);
      await sleep(150);
    }
  };
  /** After billing restarts, the gateway's channel to it reconnects with backoff; wait for that. */
  const untilGatewayServes = async () => {
    const deadline = Date.now() + 30_000;
    while ((await api('GET', '/models')).status !== 200) {
      if (Date.now() > deadline) throw new Error('the gateway does not serve again');
      await sleep(200);
    }
  };
  const sim = async (method: 'PUT' | 'DELETE', path: string, body?: unknown) => {
    const res = await fetch(`${system.simulatorUrl}${path}`, {
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    if (!res.ok) throw new Error(`simulator ${method} ${path}: ${res.status} ${await res.text()}`);
  };

  /** Billing calls of a creation saga, made by the test to stage a crash at a known step. */
  const hold = (id: string, duration: number) => ({
    requestId: id,
    accountId: account.accountId,
    keyId: account.keyId,
    endpoint: 'videos/generations',
    model: 'sora-sim',
    unit: billingV1.BillingUnit.SECOND,
    pricePerUnit: BigInt(PRICE['sora-sim']!),
    worstUnits: BigInt(duration),
  });
  const settle = (id: string, duration: number) => ({
    requestId: id,
    accountId: account.accountId,
    units: BigInt(duration),
  });

  beforeAll(async () => {
    const [billingPort, videoJobsPort] = await Promise.all([freePort(), freePort()]);
    videoEnv.GRPC_PORT = String(videoJobsPort);
    system = await startTestSystem({
      eventsNamespace: ns,
      serviceEnv: { billing: { GRPC_PORT: String(billingPort) }, 'video-jobs': videoEnv },
    });
    basePath = new URL(system.baseUrl).pathname;
    const catalog = catalogClient(system);
    for (const model of DEMO_MODELS) await catalog.upsertModel({ model });
    // A video model without frame inputs, to show the gateway refusing frames it cannot take.
    await catalog.upsertModel({
      model: create(catalogV1.ModelSchema, {
        id: 'veo-sim-text-only',
        kind: catalogV1.ModelKind.VIDEO,
        capabilities: ['videos/generations'],
        priceCreditPerUnit: 3_000n,
        enabled: true,
        provider: 'google',
        upstreamModel: 'veo-sim',
      }),
    });
    catalog.close();
    account = await fundedAccount(system, 10_000_000);
    await waitForListing(system, account.apiKey, ['sora-sim', 'veo-sim', 'veo-sim-text-only']);
    nc = await connect({ servers: inject('natsUrl') });
  }, 120_000);
  afterAll(async () => {
    await nc?.close();
    await system?.stop();
  });

  it('charges duration x price at creation, for 4, 6 and 8 seconds; polling is free', async () => {
    const jobs: JobBody[] = [];
    for (const duration of [4, 6, 8]) {
      const before = await balanceOf(system, account.accountId);
      const job = await createJob({ model: 'sora-sim', prompt: `a calm sea, ${duration}s`, duration_seconds: duration });
      expect(job).toMatchObject({ status: expect.stringMatching(/^(queued|running)$/), requested_duration_seconds: duration, model: 'sora-sim' });
      expect(job.id).toMatch(/^vidjob_[0-9a-f]{32}$/);
      expect(job.service.credit_charged).toBe(duration * PRICE['sora-sim']!);
      expect(job.service.balance_after).toBe(before - duration * PRICE['sora-sim']!);
      expect(await balanceOf(system, account.accountId)).toBe(job.service.balance_after);
      jobs.push(job);
    }
    const afterCharges = await balanceOf(system, account.accountId);
    let polls = 0;
    for (const job of jobs) {
      const done = await waitFor(job.id, (j) => {
        polls++;
        return j.status === 'completed';
      });
      expect(done).toMatchObject({
        status: 'completed',
        requested_duration_seconds: job.requested_duration_seconds,
        actual_duration_seconds: job.requested_duration_seconds,
        content_url: `${basePath}/videos/generations/${job.id}/content`,
        service: { credit_charged: job.service.credit_charged, credit_refunded: 0 },
      });
      expect(done.expires_at! - done.completed_at!).toBe(24 * 3600);
    }
    expect(polls).toBeGreaterThan(3);
    expect(await balanceOf(system, account.accountId)).toBe(afterCharges);
  }, 60_000);

  it("one account's job whose submission keeps failing does not hold up other accounts' jobs on the model", async () => {
    const other = await fundedAccount(system, 1_000_000);
    const failing = await createJob({ model: 'sora-sim', prompt: 'a storm [[sim:fault=500]]', duration_seconds: 4 });
    await sleep(3_000); // its submission fails and is tried again several times (backoff 300–800 ms)
    const job = await createJob({ model: 'sora-sim', prompt: 'a calm lake', duration_seconds: 4 }, { key: other.apiKey });
    const deadline = Date.now() + 15_000;
    let seen = await getJob(job.id, other.apiKey);
    while (seen.status !== 'completed' && Date.now() < deadline) {
      await sleep(200);
      seen = await getJob(job.id, other.apiKey);
    }
    expect(seen.status).toBe('completed');
    // The failing job is still being tried (it fails only on a verified failure or at its maximum age).
    expect((await getJob(failing.id)).status).toMatch(/^(queued|running)$/);
  }, 40_000);

  it('image-to-video with a first and a last frame (veo-sim)', async () => {
    const job = await createJob({ model: 'veo-sim', prompt: 'the frames, joined', duration_seconds: 6, aspect_ratio: '9:16', image: FIRST_FRAME, last_frame: LAST_FRAME });
    expect(job.service.credit_charged).toBe(6 * PRICE['veo-sim']!);
    expect((await waitFor(job.id)).status).toBe('completed');
    const download = await api('GET', `/videos/generations/${job.id}/content`);
    expect(download.status).toBe(200);
    expect(download.bytes.subarray(4, 8).toString('latin1')).toBe('ftyp');
  }, 30_000);

  it.each([
    ['last_frame without image', { model: 'veo-sim', last_frame: LAST_FRAME }, /last_frame must be sent together with image/],
    ['a last frame on a model without last frames (sora-sim)', { model: 'sora-sim', image: FIRST_FRAME, last_frame: LAST_FRAME }, /sora-sim does not accept a last frame/],
    ['a first frame on a model without frames', { model: 'veo-sim-text-only', image: FIRST_FRAME }, /veo-sim-text-only does not accept a first frame/],
    ['a duration other than 4, 6 or 8', { model: 'sora-sim', duration_seconds: 5 }, /duration_seconds is required and must be 4, 6 or 8/],
    ['an unknown aspect ratio', { model: 'sora-sim', aspect_ratio: '4:3' }, /aspect_ratio must be "16:9" or "9:16"/],
    ['a prompt over 4000 characters', { model: 'sora-sim', prompt: 'x'.repeat(4001) }, /prompt must be at most 4000 characters/],
    ['a prompt of 4000 emoji and one more', { model: 'sora-sim', prompt: '🐱'.repeat(4001) }, /prompt must be at most 4000 characters/],
    ['a prompt with a NUL character', { model: 'sora-sim', prompt: 'a\u0000b' }, /prompt must not contain the NUL character/],
    ['a frame that is not the declared image type', { model: 'veo-sim', image: { b64_json: JPEG_B64, mime_type: 'image/png' } }, /declared as image\/png/],
  ])('refuses %s with invalid_request, before any charge or provider call', async (_what, fields, message) => {
    const before = await balanceOf(system, account.accountId);
    const res = await api('POST', '/videos/generations', { body: { prompt: 'refused', duration_seconds: 4, ...fields } });
    expect(res.status).toBe(400);
    expect(errorOf(res)).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(message) });
    expect(await balanceOf(system, account.accountId)).toBe(before);
  });

  it('refuses a body larger than any valid request from its declared length, before reading it', async () => {
    // 64 MB declared, a few bytes sent: the answer comes without the body ever being buffered.
    const { status, body } = await postDeclaredLength(
      `${system.baseUrl}/videos/generations`,
      account.apiKey,
      64 * 1024 * 1024,
      '{"model":"veo-sim","prompt":"x","duration_seconds":4,"image":{"b64_json":"AAAA',
    );
    expect(status).toBe(400);
    // The refusal cites the rule a client can act on: 8 MB per frame.
    expect((JSON.parse(body) as ErrorBody).error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/larger than any valid video request: each frame .* at most 8 MB/) });
  });

  it('downloads the MP4 through the service, whole and by Range (206, 416)', async () => {
    const job = await createJob({ model: 'sora-sim', prompt: 'a downloadable video', duration_seconds: 4 });
    await waitFor(job.id);
    const whole = await api('GET', `/videos/generations/${job.id}/content`);
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-type')).toBe('video/mp4');
    expect(whole.bytes.subarray(4, 8).toString('latin1')).toBe('ftyp');
    expect(Number(whole.headers.get('content-length'))).toBe(whole.bytes.length);
    const size = whole.bytes.length;

    const part = await api('GET', `/videos/generations/${job.id}/content`, { headers: { range: 'bytes=0-99' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 0-99/${size}`);
    expect(part.bytes.equals(whole.bytes.subarray(0, 100))).toBe(true);
    const tail = await api('GET', `/videos/generations/${job.id}/content`, { headers: { range: `bytes=${size - 10}-` } });
    expect([tail.status, tail.bytes.equals(whole.bytes.subarray(size - 10))]).toEqual([206, true]);
    const beyond = await api('GET', `/videos/generations/${job.id}/content`, { headers: { range: `bytes=${size + 10}-` } });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get('content-range')).toBe(`bytes */${size}`);
  }, 30_000);

  it('another owner’s job is 404, identical to an unknown job, for status and download', async () => {
    const job = await createJob({ model: 'sora-sim', prompt: 'mine only', duration_seconds: 4 });
    await waitFor(job.id);
    const other = await fundedAccount(system, 1_000);
    const unknown = `vidjob_${randomUUID().replaceAll('-', '')}`;
    for (const suffix of ['', '/content']) {
      const theirs = await api('GET', `/videos/generations/${job.id}${suffix}`, { key: other.apiKey });
      const none = await api('GET', `/videos/generations/${unknown}${suffix}`, { key: other.apiKey });
      const malformed = await api('GET', `/videos/generations/not-a-job${suffix}`, { key: other.apiKey });
      for (const res of [theirs, none, malformed]) {
        expect(res.status).toBe(404);
        expect(res.bytes.toString()).toBe(theirs.bytes.toString());
      }
      expect(errorOf(theirs)).toEqual({ code: 'not_found', message: 'The video job does not exist.' });
    }
  }, 30_000);

  it('Idempotency-Key: a replay answers 409 duplicate_request with job_id, and charges once', async () => {
    const key = `video-${randomUUID()}`;
    const body = { model: 'sora-sim', prompt: 'only once', duration_seconds: 4 };
    const before = await balanceOf(system, account.accountId);
    const first = await createJob(body, { headers: { 'idempotency-key': key } });
    // The same request, its JSON laid out differently.
    const replay = await api('POST', '/videos/generations', { body: JSON.stringify({ duration_seconds: 4, prompt: 'only once', model: 'sora-sim' }, null, 2), headers: { 'idempotency-key': key } });
    expect(errorOf(replay).job_id).toBe(first.id);
    expect({ status: replay.status, body: stable(replay.json()) }).toMatchInlineSnapshot(`
      {
        "body": {
          "error": {
            "code": "duplicate_request",
            "job_id": "<job id>",
            "message": "A request with this Idempotency-Key already created a job; poll job_id. Nothing new was charged.",
          },
        },
        "status": 409,
      }
    `);
    const changed = await api('POST', '/videos/generations', { body: { ...body, duration_seconds: 8 }, headers: { 'idempotency-key': key } });
    expect([changed.status, errorOf(changed).code]).toEqual([400, 'invalid_request']);
    expect(await balanceOf(system, account.accountId)).toBe(before - 4 * PRICE['sora-sim']!);
    await waitFor(first.id);
  }, 30_000);

  it('announces every status change on NATS (video.job.status_changed, proto payloads)', async () => {
    const job = await createJob({ model: 'sora-sim', prompt: 'announced', duration_seconds: 4 });
    await waitFor(job.id);
    const events = await readStatusEvents(job.id, 3);
    expect(events.map((e) => [e.eventId, e.previousStatus, e.status])).toEqual([
      [`${job.id}:status:queued`, '', 'queued'],
      [`${job.id}:status:running`, 'queued', 'running'],
      [`${job.id}:status:completed`, 'running', 'completed'],
    ]);
    expect(events[0]).toMatchObject({ accountId: account.accountId, model: 'sora-sim', requestedDurationSeconds: 4, creditCharged: BigInt(4 * PRICE['sora-sim']!) });
  }, 30_000);

  /** The job's status events in the VIDEO stream, read from its start with an ephemeral ordered consumer. */
  async function readStatusEvents(jobId: string, count: number): Promise<eventsV1.VideoJobStatusChanged[]> {
    const subject = `${ns}.video.job.status_changed`;
    const deadline = Date.now() + 10_000;
    let found: eventsV1.VideoJobStatusChanged[] = [];
    while (found.length < count && Date.now() < deadline) {
      const consumer = await jetstream(nc).consumers.get(`${ns}_VIDEO`);
      const pending = (await consumer.info(true)).num_pending;
      found = [];
      if (pending > 0) {
        const batch = await consumer.fetch({ max_messages: pending, expires: 2_000 });
        let seen = 0;
        for await (const m of batch) {
          if (m.subject === subject) {
            const event = fromBinary(eventsV1.VideoJobStatusChangedSchema, m.data);
            if (event.jobId === jobId) found.push(event);
          }
          if (++seen >= pending) break;
        }
      }
      await consumer.delete();
    }
    return found;
  }

  describe('a failed job is refunded automatically, exactly once', () => {
    it.each([
      ['video_failed', 'provider failure'],
      ['video_safety', 'safety filter'],
      ['video_lost', 'job lost by the provider (404)'],
    ])('%s (%s): failed, then refunded once, shown as service.credit_refunded', async (fault) => {
      const before = await balanceOf(system, account.accountId);
      const job = await createJob({ model: 'sora-sim', prompt: `[[sim:fault=${fault}]] doomed`, duration_seconds: 6 });
      const charge = 6 * PRICE['sora-sim']!;
      expect(await balanceOf(system, account.accountId)).toBe(before - charge);
      const refunded = await waitFor(job.id, (j) => j.status === 'failed' && j.service.credit_refunded === charge);
      expect(refunded).not.toHaveProperty('content_url');
      // The failed job as a client reads it (the same for every fault: its reason is not shown).
      expect(stable(refunded, { completed_at: '<unix seconds>', expires_at: '<unix seconds>' })).toMatchInlineSnapshot(`
        {
          "created_at": "<unix seconds>",
          "id": "<id>",
          "model": "sora-sim",
          "requested_duration_seconds": 6,
          "service": {
            "credit_charged": 30000,
            "credit_refunded": 30000,
          },
          "status": "failed",
        }
      `);
      await vi.waitFor(async () => expect(await balanceOf(system, account.accountId)).toBe(before), { timeout: 10_000, interval: 50 });
      const download = await api('GET', `/videos/generations/${job.id}/content`);
      expect([download.status, errorOf(download).code]).toEqual([404, 'not_found']);
    }, 30_000);

    it('a duplicate video.job.failed (same event id, or a new id for the same job) refunds nothing more', async () => {
      const settled = await balanceOf(system, account.accountId);
      const job = await createJob({ model: 'sora-sim', prompt: '[[sim:fault=video_failed]] duplicated', duration_seconds: 4 });
      await waitFor(job.id, (j) => j.status === 'failed');
      await vi.waitFor(async () => expect(await balanceOf(system, account.accountId)).toBe(settled), { timeout: 10_000, interval: 50 });
      const js = jetstream(nc);
      const again = (eventId: string) =>
        js.publish(
          `${ns}.video.job.failed`,
          toBinary(eventsV1.VideoJobFailedSchema, create(eventsV1.VideoJobFailedSchema, { eventId, jobId: job.id, accountId: account.accountId, failureReason: 'provider_failed' })),
        );
      await again(`${job.id}:failed`); // a redelivery as the publisher would send it (no msgID: JetStream keeps it)
      const last = await again(`${job.id}:failed:another-publisher`);
      // Wait until billing's durable consumer has acknowledged both.
      const jsm = await jetstreamManager(nc);
      const deadline = Date.now() + 10_000;
      while ((await jsm.consumers.info(`${ns}_VIDEO`, 'billing-video-refunds')).ack_floor.stream_seq < last.seq) {
        if (Date.now() > deadline) throw new Error('billing did not consume the duplicates');
        await sleep(100);
      }
      await sleep(300);
      expect(await balanceOf(system, account.accountId)).toBe(settled);
      expect((await getJob(job.id)).service.credit_refunded).toBe(4 * PRICE['sora-sim']!);
    }, 30_000);

    it('billing down while the job fails: the job shows its refund at once, the wallet gets it once billing is back', async () => {
      // The job must outlive billing's shutdown, so that it fails while billing is away.
      await sim('PUT', '/_sim/settings/openai/sora-sim', { videoDelayMs: 2_500 });
      const videoJobs = createClient(videoV1.VideoJobsService, system.videoJobsAddr);
      try {
        const before = await balanceOf(system, account.accountId);
        const job = await createJob({ model: 'sora-sim', prompt: '[[sim:fault=video_failed]] while billing sleeps', duration_seconds: 8 });
        await system.stopService('billing');
        // The gateway needs billing for every request; ask video-jobs directly meanwhile.
        const read = async () => (await videoJobs.getJob({ jobId: job.id, accountId: account.accountId })).job!;
        const deadline = Date.now() + 15_000;
        while ((await read()).status !== videoV1.VideoJobStatus.FAILED) {
          if (Date.now() > deadline) throw new Error('the job did not fail');
          await sleep(100);
        }
        // Failed is refunded from the moment it is failed (spec 2.2): the refund is decided with the
        // failure and billing will apply it once; the wallet shows it when billing is back.
        expect((await read()).creditRefunded).toBe(BigInt(8 * PRICE['sora-sim']!));

        await system.restartService('billing');
        await untilGatewayServes();
        expect((await getJob(job.id)).service.credit_refunded).toBe(8 * PRICE['sora-sim']!);
        await vi.waitFor(async () => expect(await balanceOf(system, account.accountId)).toBe(before), { timeout: 15_000, interval: 100 });
      } finally {
        videoJobs.close();
        await sim('DELETE', '/_sim/settings/openai/sora-sim');
      }
    }, 60_000);
  });

  it('video-jobs restarted mid-job: the job resumes from Postgres and completes, charged once', async () => {
    await sim('PUT', '/_sim/settings/openai/sora-sim', { videoDelayMs: 3_000 });
    try {
      const before = await balanceOf(system, account.accountId);
      const job = await createJob({ model: 'sora-sim', prompt: 'through a restart', duration_seconds: 4 });
      await waitFor(job.id, (j) => j.status === 'running');
      await system.stopService('video-jobs');
      await system.restartService('video-jobs');
      const done = await waitFor(job.id);
      expect(done.status).toBe('completed');
      expect(await balanceOf(system, account.accountId)).toBe(before - 4 * PRICE['sora-sim']!);
      expect((await api('GET', `/videos/generations/${job.id}/content`)).status).toBe(200);
    } finally {
      await sim('DELETE', '/_sim/settings/openai/sora-sim');
    }
  }, 60_000);

  describe('creation interrupted by a crash (state written as a killed video-jobs leaves it)', () => {
    let db: Client;
    beforeAll(async () => {
      db = new Client({ connectionString: system.databaseUrl });
      await db.connect();
    });
    afterAll(() => db?.end());

    /** A `pending` job with its input, as step 1 of the saga commits it. */
    /** A job as a killed creation leaves it; `key`: the Idempotency-Key its request carried. */
    const pendingJob = async (duration: number, key?: string) => {
      const id = `vidjob_${randomUUID().replaceAll('-', '')}`;
      const routes = JSON.stringify([{ provider: 'openai', upstreamModel: 'sora-sim', priority: 0, weight: 1 }]);
      await db.query(
        `insert into video_jobs.video_job (id, account_id, key_id, model, status, duration_seconds, aspect_ratio, price_per_second, routes, next_attempt_at, created_at, updated_at)
         values ($1, $2, $3, 'sora-sim', 'pending', $4, '16:9', $5, $6, now(), now(), now())`,
        [id, account.accountId, account.keyId, duration, PRICE['sora-sim'], routes],
      );
      await db.query(`insert into video_jobs.video_job_input (job_id, prompt) values ($1, 'after a crash')`, [id]);
      if (key !== undefined) {
        await db.query(
          `insert into video_jobs.idempotency_claim (account_id, key, body_hash, job_id, created_at, expires_at)
           values ($1, $2, '\\x00', $3, now(), now() + interval '1 day')`,
          [account.accountId, key, id],
        );
      }
      return id;
    };
    const statusOf = async (id: string) => (await db.query<{ status: string }>('select status from video_jobs.video_job where id = $1', [id])).rows[0]!.status;
    const untilStatus = async (id: string, status: string) => {
      const deadline = Date.now() + 20_000;
      while ((await statusOf(id)) !== status) {
        if (Date.now() > deadline) throw new Error(`job ${id} is ${await statusOf(id)}, not ${status}`);
        await sleep(200);
      }
    };

    it('killed after the hold, before the charge: the restarted service cancels it, nothing charged', async () => {
      const billing = billingClient(system);
      try {
        const before = await balanceOf(system, account.accountId);
        const id = await pendingJob(6);
        await billing.authorize(hold(id, 6));
        expect(await balanceOf(system, account.accountId)).toBe(before - 6 * PRICE['sora-sim']!);
        await killAndRestartVideoJobs();
        await untilStatus(id, 'abandoned');
        expect(await balanceOf(system, account.accountId)).toBe(before);
        expect((await api('GET', `/videos/generations/${id}`)).status).toBe(404);
      } finally {
        billing.close();
      }
    }, 40_000);

    it('killed after the charge, before the job was queued, with an Idempotency-Key: the job is finished, runs, charged once', async () => {
      const billing = billingClient(system);
      try {
        const before = await balanceOf(system, account.accountId);
        const id = await pendingJob(4, `killed-${randomUUID()}`);
        await billing.authorize(hold(id, 4));
        await billing.settle(settle(id, 4));
        await killAndRestartVideoJobs();
        await untilStatus(id, 'queued');
        const done = await waitFor(id);
        expect(done).toMatchObject({ status: 'completed', service: { credit_charged: 4 * PRICE['sora-sim']! } });
        expect(await balanceOf(system, account.accountId)).toBe(before - 4 * PRICE['sora-sim']!);
      } finally {
        billing.close();
      }
    }, 40_000);

    it('killed after the charge, before the job was queued, without a key: nothing leads back to it, so it is refunded and cancelled', async () => {
      const billing = billingClient(system);
      try {
        const before = await balanceOf(system, account.accountId);
        const id = await pendingJob(4);
        await billing.authorize(hold(id, 4));
        await billing.settle(settle(id, 4));
        expect(await balanceOf(system, account.accountId)).toBe(before - 4 * PRICE['sora-sim']!);
        await killAndRestartVideoJobs();
        await untilStatus(id, 'abandoned');
        await vi.waitFor(async () => expect(await balanceOf(system, account.accountId)).toBe(before), { timeout: 10_000, interval: 100 });
        expect((await api('GET', `/videos/generations/${id}`)).status).toBe(404);
      } finally {
        billing.close();
      }
    }, 40_000);
  });

  it('after expires_at (video-jobs clock moved 25 h on) the download is 404, like an unknown job', async () => {
    const job = await createJob({ model: 'sora-sim', prompt: 'short-lived access', duration_seconds: 4 });
    await waitFor(job.id);
    expect((await api('GET', `/videos/generations/${job.id}/content`)).status).toBe(200);

    videoEnv.CLOCK_OFFSET_MS = String(25 * 3600 * 1000);
    await system.stopService('video-jobs');
    await system.restartService('video-jobs');
    const expired = await api('GET', `/videos/generations/${job.id}/content`);
    const unknown = await api('GET', `/videos/generations/vidjob_${randomUUID().replaceAll('-', '')}/content`);
    expect(expired.status).toBe(404);
    expect(expired.bytes.toString()).toBe(unknown.bytes.toString());
    // The job itself is still there, completed, with the deadline it passed.
    const status = await getJob(job.id);
    expect(status.status).toBe('completed');
    expect(status.expires_at! * 1000).toBeLessThan(Date.now() + 25 * 3600 * 1000);
  }, 40_000);

  it('the ledger audit holds after all of it', async () => {
    expect(await admin(system, 'ledger', 'audit')).toMatchObject({ ok: true, problems: [] });
  });
});
