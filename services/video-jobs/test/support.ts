import { randomBytes } from 'node:crypto';
import { create, fromBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { billingV1, catalogV1, eventsV1, RpcError, videoV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { ProviderError, type ProviderAdapter, type VideoDownload, type VideoRequest, type VideoStatus } from '@gw/providers';
import { createLogger, createOrm, runMigrations } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { inject } from 'vitest';
import type { Clock } from '../src/clock.ts';
import { videoJobsEntities } from '../src/db/entities.ts';
import { videoJobsMigrations } from '../src/db/migrations/index.ts';
import type { BillingPort } from '../src/domain/billing-port.ts';

export const silent = createLogger('video-jobs-test', 'silent');

/** Video-jobs' real schema, migrated, in a schema of its own inside this run's database. */
export async function videoJobsOrm(): Promise<MikroORM> {
  const orm = await createOrm({
    databaseUrl: inject('databaseUrl'),
    schema: `video_jobs_t${randomBytes(4).toString('hex')}`,
    entities: videoJobsEntities,
    migrations: videoJobsMigrations,
  });
  await runMigrations(orm);
  return orm;
}

/** A clock tests move by hand. */
export function manualClock(start = Date.parse('2030-01-01T00:00:00Z')): Clock & { advance(ms: number): void } {
  let now = start;
  const clock = () => new Date(now);
  return Object.assign(clock, { advance: (ms: number) => void (now += ms) });
}

interface FakeHold {
  accountId: string;
  amount: bigint;
  price: bigint;
  status: 'open' | 'settled' | 'released';
  charged: bigint;
  refunded: bigint;
}

type Op = 'authorize' | 'settle' | 'release' | 'refund';

/**
 * Billing as far as video-jobs sees it, with the same idempotency rules as billing's `apply_ops`
 * (replays answer what stands; settle/release of no hold is `not_found`). `faults` makes the next
 * call of an operation fail: `before` without applying it, `after` once applied (a lost answer).
 */
export class FakeBilling implements BillingPort {
  readonly balances = new Map<string, bigint>();
  readonly holds = new Map<string, FakeHold>();
  readonly calls: Op[] = [];
  readonly faults = new Map<Op, 'before' | 'after'>();

  fund(accountId: string, credits: bigint): void {
    this.balances.set(accountId, credits);
  }

  balance(accountId: string): bigint {
    return this.balances.get(accountId) ?? 0n;
  }

  #fault(op: Op, when: 'before' | 'after'): void {
    if (this.faults.get(op) !== when) return;
    this.faults.delete(op);
    throw new RpcError(14, `billing unavailable (${op} ${when})`);
  }

  /** The lease owner each authorize named, in order. */
  readonly owners: string[] = [];

  async authorize(req: MessageInitShape<typeof billingV1.AuthorizeRequestSchema>): Promise<billingV1.AuthorizeResponse> {
    this.calls.push('authorize');
    this.owners.push(req.leaseOwner ?? '');
    this.#fault('authorize', 'before');
    const id = req.requestId!;
    const existing = this.holds.get(id);
    const balance = this.balance(req.accountId!);
    if (!existing) {
      const amount = req.worstUnits! * req.pricePerUnit!;
      if (balance < amount) throw new GatewayError('insufficient_balance', 'Insufficient balance.');
      this.balances.set(req.accountId!, balance - amount);
      this.holds.set(id, { accountId: req.accountId!, amount, price: req.pricePerUnit!, status: 'open', charged: 0n, refunded: 0n });
    }
    this.#fault('authorize', 'after');
    return create(billingV1.AuthorizeResponseSchema, { held: this.holds.get(id)!.amount, balanceAfter: this.balance(req.accountId!) });
  }

  async settle(req: MessageInitShape<typeof billingV1.SettleRequestSchema>): Promise<billingV1.SettleResponse> {
    this.calls.push('settle');
    this.#fault('settle', 'before');
    const hold = this.#hold(req.requestId!, req.accountId!);
    if (hold.status === 'open') {
      const charge = req.units! * hold.price; // the price stored with the hold, as billing does
      this.balances.set(hold.accountId, this.balance(hold.accountId) + hold.amount - charge);
      Object.assign(hold, { status: 'settled', charged: charge });
    }
    this.#fault('settle', 'after');
    return create(billingV1.SettleResponseSchema, { creditCharged: hold.charged, balanceAfter: this.balance(hold.accountId) });
  }

  async release(req: MessageInitShape<typeof billingV1.ReleaseRequestSchema>): Promise<billingV1.ReleaseResponse> {
    this.calls.push('release');
    this.#fault('release', 'before');
    const hold = this.#hold(req.requestId!, req.accountId!);
    if (hold.status === 'open') {
      this.balances.set(hold.accountId, this.balance(hold.accountId) + hold.amount);
      hold.status = 'released';
    }
    return create(billingV1.ReleaseResponseSchema, { balanceAfter: this.balance(hold.accountId) });
  }

  /** Owners whose lease was renewed, in order. */
  readonly renewals: string[] = [];

  async renewLease(req: MessageInitShape<typeof billingV1.RenewLeaseRequestSchema>): Promise<billingV1.RenewLeaseResponse> {
    this.renewals.push(req.owner!);
    return create(billingV1.RenewLeaseResponseSchema, { leaseUntilUnixMs: BigInt(Date.now() + 60_000) });
  }

  async refund(req: MessageInitShape<typeof billingV1.RefundRequestSchema>): Promise<billingV1.RefundResponse> {
    this.calls.push('refund');
    const hold = this.#hold(req.requestId!, req.accountId!);
    if (hold.status !== 'settled') throw new GatewayError('not_found', 'No settled charge.');
    if (hold.refunded === 0n && hold.charged > 0n) {
      hold.refunded = hold.charged;
      this.balances.set(hold.accountId, this.balance(hold.accountId) + hold.charged);
    }
    return create(billingV1.RefundResponseSchema, { creditRefunded: hold.refunded, balanceAfter: this.balance(hold.accountId) });
  }

  #hold(id: string, accountId: string): FakeHold {
    const hold = this.holds.get(id);
    if (!hold || hold.accountId !== accountId) throw new GatewayError('not_found', 'No such hold.');
    return hold;
  }
}

/** What a scripted provider job does: its states poll by poll (the last one repeats), or errors. */
export type PollStep = VideoStatus | 'error' | 'timeout';

/**
 * A provider whose video jobs follow a script. `createScripts` is consumed one per createVideo;
 * each created job polls through its steps. Counts every call.
 */
export class ScriptedProvider implements ProviderAdapter {
  readonly name: string;
  readonly kind = 'openai' as const;
  readonly textDialects = [] as const;
  readonly created: VideoRequest[] = [];
  readonly polls = new Map<string, number>();
  /** Next createVideo outcomes: a poll script, or an error to throw. */
  readonly createScripts: Array<PollStep[] | Error> = [];
  /** Delays createVideo until this promise settles (to hold a job mid-call). */
  createGate: Promise<void> | null = null;
  readonly #jobs = new Map<string, PollStep[]>();
  readonly mp4 = Buffer.concat([Buffer.from([0, 0, 0, 24]), Buffer.from('ftypmp42'), randomBytes(4000)]);

  constructor(name = 'sim') {
    this.name = name;
  }

  async listModels(): Promise<string[]> {
    return [];
  }

  async text(): Promise<never> {
    throw new Error('not a text provider');
  }

  async createVideo(req: VideoRequest, opts?: { signal?: AbortSignal }): Promise<{ providerJobId: string }> {
    this.created.push(req);
    if (this.createGate) {
      const gate = this.createGate;
      await new Promise<void>((resolve, reject) => {
        opts?.signal?.addEventListener('abort', () => reject(opts.signal!.reason as Error), { once: true });
        void gate.then(resolve);
      });
    }
    const script = this.createScripts.shift() ?? [{ state: 'completed', actualDurationSeconds: req.durationSeconds }];
    if (script instanceof Error) throw script;
    const id = `pj_${this.created.length}_${randomBytes(3).toString('hex')}`;
    this.#jobs.set(id, script);
    return { providerJobId: id };
  }

  async getVideo(id: string): Promise<VideoStatus> {
    const n = (this.polls.get(id) ?? 0) + 1;
    this.polls.set(id, n);
    const script = this.#jobs.get(id);
    if (!script) return { state: 'failed', failure: { reason: 'not_found', message: 'gone' } };
    const step = script[Math.min(n, script.length) - 1]!;
    if (step === 'error') throw new ProviderError('upstream_error', 'The upstream provider failed (status 500)', { provider: this.name, retryable: true, upstreamStatus: 500 });
    if (step === 'timeout') throw new ProviderError('upstream_timeout', 'The upstream provider timed out', { provider: this.name, retryable: true });
    return step;
  }

  async downloadVideo(id: string, _ref: string | undefined, range: string | undefined): Promise<VideoDownload> {
    if (!this.#jobs.has(id)) throw new ProviderError('not_found', 'gone', { provider: this.name, retryable: false, upstreamStatus: 404 });
    const size = this.mp4.length;
    const m = range ? /^bytes=(\d+)-(\d*)$/.exec(range) : null;
    if (m) {
      const start = Number(m[1]);
      const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
      if (start >= size) throw new ProviderError('invalid_request', 'range', { provider: this.name, retryable: false, upstreamStatus: 416 });
      const part = this.mp4.subarray(start, end + 1);
      return {
        status: 206,
        headers: { 'content-type': 'video/mp4', 'content-length': String(part.length), 'content-range': `bytes ${start}-${end}/${size}` },
        body: (async function* () {
          yield part;
        })(),
      };
    }
    const whole = this.mp4;
    return {
      status: 200,
      headers: { 'content-type': 'video/mp4', 'content-length': String(size) },
      body: (async function* () {
        yield whole.subarray(0, 1000);
        yield whole.subarray(1000);
      })(),
    };
  }
}

export function routes(provider = 'sim'): catalogV1.Route[] {
  return [create(catalogV1.RouteSchema, { provider, upstreamModel: 'sim-video', priority: 0, weight: 1 })];
}

/** A valid creation request; `overrides` adjust it. */
export function createRequest(accountId: string, overrides: Partial<Omit<videoV1.CreateJobRequest, '$typeName' | '$unknown'>> = {}): videoV1.CreateJobRequest {
  return create(videoV1.CreateJobRequestSchema, {
    accountId,
    keyId: 'key-1',
    publicModel: 'sim-video',
    routes: routes(),
    pricePerSecond: 100n,
    prompt: 'a lighthouse at dawn',
    durationSeconds: 4,
    aspectRatio: '16:9',
    ...overrides,
  });
}

/** The outbox as decoded events, in commit order. */
export async function outboxEvents(orm: MikroORM): Promise<Array<{ subject: string; msgId: string; status?: eventsV1.VideoJobStatusChanged; failed?: eventsV1.VideoJobFailed }>> {
  const rows = await orm.em.fork().execute<{ subject: string; msg_id: string; payload: Buffer }[]>('select subject, msg_id, payload from outbox_event order by id');
  return rows.map((r) => ({
    subject: r.subject,
    msgId: r.msg_id,
    ...(r.subject === 'video.job.status_changed' ? { status: fromBinary(eventsV1.VideoJobStatusChangedSchema, r.payload) } : {}),
    ...(r.subject === 'video.job.failed' ? { failed: fromBinary(eventsV1.VideoJobFailedSchema, r.payload) } : {}),
  }));
}
