import { GatewayError } from '@gw/errors';
import { isProviderError, type FallbackRouter, type ProviderAdapter, type VideoStatus } from '@gw/providers';
import type { Logger } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../clock.ts';
import { VideoJobInput } from '../db/video-job-input.entity.ts';
import type { FailureReason, RouteRecord } from '../db/video-job.entity.ts';
import { recordCompleted, recordFailed, recordSubmitted, recordWaiting, releaseLease, type LeasedJob } from './job-outcomes.ts';

/** Where the worker finds a configured provider by name (the `ProviderRegistry`). */
export interface ProviderLookup {
  get(name: string): ProviderAdapter | undefined;
}

export interface DriverSettings {
  pollInitialMs: number;
  pollMaxMs: number;
  providerTimeoutMs: number;
  /** A job older than this (since creation) is cancelled upstream and fails `timed_out`. */
  maxJobMs: number;
}

export interface DriverDeps {
  orm: MikroORM;
  providers: ProviderLookup;
  router: FallbackRouter;
  clock: Clock;
  logger: Logger;
  settings: DriverSettings;
}

/** The longest actual duration believed of a provider (a day): past it, the figure is not shown. */
const MAX_ACTUAL_SECONDS = 86_400;

/** A provider's actual duration in whole seconds, or undefined when it is not a plausible one. */
function plausibleSeconds(seconds: number | undefined): number | undefined {
  if (seconds === undefined || !Number.isFinite(seconds)) return undefined;
  const whole = Math.round(seconds);
  return whole >= 1 && whole <= MAX_ACTUAL_SECONDS ? whole : undefined;
}

/** Provider rejections that name a safety system; such a job fails as `safety`. */
const SAFETY = /moderation|safety|content.policy|policy.violation|blocked/i;

/**
 * Moves one leased job one step: submit it, or poll it, then record what was learned (or when to
 * look again) under the lease. A job fails only on a verified terminal failure: the provider says
 * so (including safety filtering and refusing the request), the provider no longer knows the job,
 * or it outlived the maximum time and was given up (cancelled upstream where the provider can).
 * A call that times out, errors or is throttled decides nothing: the job is looked at again later.
 */
export class JobDriver {
  readonly #deps: DriverDeps;

  constructor(deps: DriverDeps) {
    this.#deps = deps;
  }

  async drive(leased: LeasedJob, signal: AbortSignal): Promise<void> {
    try {
      if (leased.job.providerJobId === null || leased.job.providerJobId === undefined) await this.#submit(leased, signal);
      else await this.#poll(leased, leased.job.providerJobId, signal);
    } catch (err) {
      if (signal.aborted) {
        await releaseLease(this.#deps.orm.em, leased, this.#deps.clock());
        return;
      }
      // Whatever keeps failing (an answer that cannot be recorded, say), a job past its maximum
      // time ends: it fails, and so is refunded, instead of being retried forever.
      if (this.#overdue(leased, this.#deps.clock())) {
        this.#deps.logger.error({ err, jobId: leased.job.id }, 'driving an overdue video job failed; failing it');
        await this.#fail(leased, 'timed_out');
        return;
      }
      throw err;
    }
  }

  #overdue(leased: LeasedJob, now: Date): boolean {
    return now.getTime() - new Date(leased.job.createdAt).getTime() > this.#deps.settings.maxJobMs;
  }

  #backoff(attempts: number, now: Date): Date {
    const { pollInitialMs, pollMaxMs } = this.#deps.settings;
    return new Date(now.getTime() + Math.min(pollMaxMs, Math.round(pollInitialMs * 1.5 ** attempts)));
  }

  async #submit(leased: LeasedJob, signal: AbortSignal): Promise<void> {
    const { orm, router, clock, logger, settings } = this.#deps;
    const { job } = leased;
    if (this.#overdue(leased, clock())) {
      await this.#fail(leased, 'timed_out');
      return;
    }
    const input = await orm.em.fork().findOne(VideoJobInput, { jobId: job.id });
    if (!input) {
      // Only submission or an end deletes the input; a queued job without one cannot ever run.
      logger.error({ jobId: job.id }, 'queued video job has no input; failing it');
      await this.#fail(leased, 'provider_failed');
      return;
    }
    try {
      const submitted = await router.withFallback(
        job.routes,
        async (route: RouteRecord) => {
          const created = await this.#adapter(route.provider, 'createVideo').createVideo(
            {
              model: route.upstreamModel,
              prompt: input.prompt,
              durationSeconds: job.durationSeconds,
              aspectRatio: job.aspectRatio,
              ...(input.image && input.imageMime ? { image: { bytes: input.image, mimeType: input.imageMime } } : {}),
              ...(input.lastFrame && input.lastFrameMime ? { lastFrame: { bytes: input.lastFrame, mimeType: input.lastFrameMime } } : {}),
            },
            { signal, timeoutMs: settings.providerTimeoutMs, requestId: job.id },
          );
          return { route, providerJobId: created.providerJobId };
        },
        // Only a job's first try counts toward the routes' health: a job whose own request keeps
        // failing would otherwise keep the model cooling down for every other account's jobs.
        { signal, countFailures: job.attempts === 0, account: job.accountId },
      );
      const now = clock();
      await recordSubmitted(orm.em, leased, now, {
        provider: submitted.route.provider,
        upstreamModel: submitted.route.upstreamModel,
        providerJobId: submitted.providerJobId,
        nextAttemptAt: this.#backoff(0, now),
      });
      logger.info({ jobId: job.id, provider: submitted.route.provider }, 'video job submitted');
    } catch (err) {
      if (signal.aborted) throw err;
      if (isProviderError(err) && !err.retryable) {
        // The provider refused the request itself: a verified answer, not a fault to retry.
        logger.info({ jobId: job.id, provider: err.provider, code: err.code }, 'provider refused the video job');
        await this.#fail(leased, SAFETY.test(err.message) ? 'safety' : 'provider_failed');
        return;
      }
      await this.#retryLater(leased, err, 'submit');
    }
  }

  async #poll(leased: LeasedJob, providerJobId: string, signal: AbortSignal): Promise<void> {
    const { orm, clock, logger, settings } = this.#deps;
    const { job } = leased;
    let status: VideoStatus;
    try {
      status = await this.#adapter(job.provider ?? '', 'getVideo').getVideo(providerJobId, { signal, timeoutMs: settings.providerTimeoutMs, requestId: job.id });
    } catch (err) {
      if (signal.aborted) throw err;
      if (this.#overdue(leased, clock())) {
        await this.#giveUp(leased, providerJobId, signal);
        return;
      }
      await this.#retryLater(leased, err, 'poll');
      return;
    }
    const now = clock();
    if (status.state === 'completed') {
      const actual = plausibleSeconds(status.actualDurationSeconds);
      await recordCompleted(orm.em, leased, now, {
        ...(actual === undefined ? {} : { actualDurationSeconds: actual }),
        ...(status.contentRef === undefined ? {} : { contentRef: status.contentRef }),
      });
      logger.info({ jobId: job.id }, 'video job completed');
    } else if (status.state === 'failed') {
      await this.#fail(leased, status.failure?.reason ?? 'provider_failed');
    } else if (this.#overdue(leased, now)) {
      await this.#giveUp(leased, providerJobId, signal);
    } else {
      const attempts = job.attempts + 1;
      await recordWaiting(orm.em, leased, now, { nextAttemptAt: this.#backoff(attempts, now), attempts, running: status.state === 'running' });
    }
  }

  /** Over the maximum time: cancel upstream where the provider can, then fail (and so refund). */
  async #giveUp(leased: LeasedJob, providerJobId: string, signal: AbortSignal): Promise<void> {
    const { logger, settings } = this.#deps;
    // Cancelling is optional in the adapter contract: a provider without it finishes the job on its own.
    const adapter = this.#deps.providers.get(leased.job.provider ?? '');
    if (adapter?.cancelVideo) {
      await adapter.cancelVideo(providerJobId, { signal, timeoutMs: settings.providerTimeoutMs }).catch((err: unknown) => {
        logger.warn({ jobId: leased.job.id, err }, 'cancelling an overdue video job upstream failed');
      });
    }
    await this.#fail(leased, 'timed_out');
  }

  async #fail(leased: LeasedJob, reason: FailureReason): Promise<void> {
    if (await recordFailed(this.#deps.orm.em, leased, this.#deps.clock(), reason)) {
      this.#deps.logger.info({ jobId: leased.job.id, reason }, 'video job failed');
    }
  }

  async #retryLater(leased: LeasedJob, err: unknown, what: string): Promise<void> {
    const attempts = leased.job.attempts + 1;
    const now = this.#deps.clock();
    const code = err instanceof GatewayError ? err.code : undefined;
    this.#deps.logger.warn({ jobId: leased.job.id, code, err: code ? undefined : err, attempts }, `video job ${what} failed; will retry`);
    await recordWaiting(this.#deps.orm.em, leased, now, { nextAttemptAt: this.#backoff(attempts, now), attempts });
  }

  /** The adapter of a route; a provider missing from config is a fault to retry (config may be fixed). */
  #adapter<C extends 'createVideo' | 'getVideo'>(provider: string, capability: C): ProviderAdapter & Required<Pick<ProviderAdapter, C>> {
    const adapter = this.#deps.providers.get(provider);
    if (!adapter?.[capability]) {
      throw new GatewayError('model_temporarily_unavailable', `Provider ${provider} is not configured for videos`);
    }
    return adapter as ProviderAdapter & Required<Pick<ProviderAdapter, C>>;
  }
}
