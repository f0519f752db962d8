import type { videoV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { FallbackRouter } from '@gw/providers';
import type { Logger } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../clock.ts';
import { VideoJobInput } from '../db/video-job-input.entity.ts';
import { VideoJob } from '../db/video-job.entity.ts';
import { authorizeCharge, resolveCharge, settleCharge, type BillingPort, type ChargeFacts } from './billing-port.ts';
import { checkCreateRequest } from './create-request.ts';
import { claimKey } from './idempotency-claims.ts';
import { newJobId } from './job-ids.ts';
import { isPublic, jobView } from './job-view.ts';
import { markAbandoned, markQueued } from './pending-transitions.ts';

/** The points of the creation saga after which a crash leaves a `pending` job behind. */
export type SagaStep = 'claimed' | 'authorized' | 'settled';

/**
 * Test seam: runs after each saga step. A hook that throws stops the saga right there, exactly as
 * a crash of the process would (nothing after it runs, no cleanup), so tests can prove that the
 * recovery sweep finishes or cancels every such job.
 */
export interface SagaHooks {
  afterStep?: (step: SagaStep, jobId: string) => Promise<void> | void;
}

export interface CreatorDeps {
  orm: MikroORM;
  billing: BillingPort;
  clock: Clock;
  logger: Logger;
  /** The routes' health, shared with the job driver. */
  router: Pick<FallbackRouter, 'unavailable'>;
  hooks?: SagaHooks;
}

const NOT_CHARGED = 'The video job could not be created. Nothing was charged.';
const UNCONFIRMED =
  'The video job could not be confirmed with billing. Within minutes it is either started (and charged) or cancelled without a charge; ' +
  'retry with the same Idempotency-Key to learn which.';
/** Without an Idempotency-Key nothing leads back to the job, so the recovery sweep cancels it. */
const UNCONFIRMED_NO_KEY =
  'The video job could not be confirmed with billing. Within minutes it is cancelled and anything charged for it refunded; ' +
  'send the request again (with an Idempotency-Key, a retry tells you what became of it).';

/**
 * Creates a job and its charge as one unit, in four steps: (1) the job row `pending` with its
 * input and Idempotency-Key claim, one transaction; (2) billing authorize (key limits, hold of
 * duration x price) and (3) settle, both keyed by the job id, so any repeat is a replay; (4) the
 * job `queued` with its charge and its first event, one transaction.
 *
 * A refusal at (2) abandons the job and frees its key: nothing was held. Any other failure leaves
 * an uncertain charge, resolved at once when billing answers (release an unsettled hold, read what
 * stands) and otherwise by the recovery sweep, which does the same for jobs a crash left `pending`.
 * So no job stays without its charge and no charge without its job.
 */
export class JobCreator {
  readonly #deps: CreatorDeps;

  constructor(deps: CreatorDeps) {
    this.#deps = deps;
  }

  async create(req: videoV1.CreateJobRequest): Promise<videoV1.VideoJob> {
    checkCreateRequest(req);
    // Every route cooling down after repeated failures: refused before anything is held (spec 7.5).
    const refusal = this.#deps.router.unavailable(req.routes);
    if (refusal) throw refusal;
    const { billing, logger } = this.#deps;
    const facts: ChargeFacts = {
      id: newJobId(),
      accountId: req.accountId,
      keyId: req.keyId,
      model: req.publicModel,
      durationSeconds: req.durationSeconds,
      pricePerSecond: req.pricePerSecond,
    };
    await this.#insertPending(req, facts).catch((err: unknown) => {
      if (err instanceof GatewayError) throw err;
      // Nothing is held before this transaction: had it committed after all, the recovery sweep
      // abandons a pending job that billing never saw.
      logger.error({ jobId: facts.id, err }, 'storing a new video job failed');
      throw new GatewayError('upstream_error', NOT_CHARGED);
    });
    await this.#step('claimed', facts.id);

    try {
      await authorizeCharge(billing, facts);
    } catch (err) {
      if (!(err instanceof GatewayError)) return this.#resolveUncertain(facts, err, req.idempotencyKey !== '');
      // Billing refused (balance, key limit): nothing is held, the request ends here uncharged.
      await markAbandoned(this.#deps.orm.em.fork(), facts.id, this.#deps.clock());
      throw err;
    }
    await this.#step('authorized', facts.id);

    let settled: { creditCharged: bigint; balanceAfter: bigint };
    try {
      settled = await settleCharge(billing, facts);
    } catch (err) {
      return this.#resolveUncertain(facts, err, req.idempotencyKey !== '');
    }
    await this.#step('settled', facts.id);
    if (settled.creditCharged === 0n && facts.pricePerSecond > 0n) {
      // Our hold was released under us: the sweep took this creation for dead. It is cancelled.
      await markAbandoned(this.#deps.orm.em.fork(), facts.id, this.#deps.clock());
      logger.warn({ jobId: facts.id }, 'video job creation was cancelled by the recovery sweep');
      throw new GatewayError('upstream_error', NOT_CHARGED);
    }
    return this.#confirm(facts, settled);
  }

  async #insertPending(req: videoV1.CreateJobRequest, facts: ChargeFacts): Promise<void> {
    const now = this.#deps.clock();
    await this.#deps.orm.em.fork().transactional(async (tx) => {
      tx.create(VideoJob, {
        id: facts.id,
        accountId: facts.accountId,
        keyId: facts.keyId,
        model: facts.model,
        status: 'pending',
        durationSeconds: facts.durationSeconds,
        aspectRatio: req.aspectRatio as VideoJob['aspectRatio'],
        pricePerSecond: facts.pricePerSecond,
        creditCharged: 0n,
        creditRefunded: 0n,
        routes: req.routes.map((r) => ({ provider: r.provider, upstreamModel: r.upstreamModel, priority: r.priority, weight: r.weight })),
        attempts: 0,
        nextAttemptAt: now,
        createdAt: now,
        updatedAt: now,
      });
      // The input references the job: flushed after it, in the same transaction.
      await tx.flush();
      tx.create(VideoJobInput, {
        jobId: facts.id,
        prompt: req.prompt,
        image: req.image ? Buffer.from(req.image.data) : null,
        imageMime: req.image?.mimeType ?? null,
        lastFrame: req.lastFrame ? Buffer.from(req.lastFrame.data) : null,
        lastFrameMime: req.lastFrame?.mimeType ?? null,
      });
      await tx.flush();
      if (req.idempotencyKey !== '') {
        await claimKey(tx, { accountId: facts.accountId, key: req.idempotencyKey, bodyHash: req.bodyHash, jobId: facts.id, now });
      }
    });
  }

  /**
   * Billing did not answer (or not clearly): cancel a hold that is not settled, then go by what
   * stands. If billing cannot tell us either, the job stays `pending` for the recovery sweep.
   */
  async #resolveUncertain(facts: ChargeFacts, cause: unknown, withKey: boolean): Promise<videoV1.VideoJob> {
    this.#deps.logger.warn({ jobId: facts.id, err: cause }, 'billing did not confirm a video job charge; resolving it');
    let charge: Awaited<ReturnType<typeof resolveCharge>>;
    try {
      charge = await resolveCharge(this.#deps.billing, facts);
    } catch (err) {
      this.#deps.logger.warn({ jobId: facts.id, err }, 'video job charge unresolved; the recovery sweep will finish or cancel it');
      throw new GatewayError('upstream_error', withKey ? UNCONFIRMED : UNCONFIRMED_NO_KEY);
    }
    if (charge) return this.#confirm(facts, charge);
    await markAbandoned(this.#deps.orm.em.fork(), facts.id, this.#deps.clock());
    throw new GatewayError('upstream_error', NOT_CHARGED);
  }

  /** Step 4. Should the sweep have cancelled the job before our hold existed, the charge is undone. */
  async #confirm(facts: ChargeFacts, charge: { creditCharged: bigint; balanceAfter: bigint }): Promise<videoV1.VideoJob> {
    const job = await markQueued(this.#deps.orm.em.fork(), facts.id, charge.creditCharged, this.#deps.clock());
    if (isPublic(job.status)) return jobView(job, job.status, charge.balanceAfter);
    this.#deps.logger.error({ jobId: facts.id }, 'charged a video job that was already cancelled; refunding it');
    await this.#deps.billing.refund({ requestId: facts.id, accountId: facts.accountId });
    throw new GatewayError('upstream_error', NOT_CHARGED);
  }

  async #step(step: SagaStep, jobId: string): Promise<void> {
    await this.#deps.hooks?.afterStep?.(step, jobId);
  }
}
