import { randomUUID } from 'node:crypto';
import { startPeriodic, type Logger } from '@gw/service-kit';
import { LockMode, type MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../clock.ts';
import { VideoJob } from '../db/video-job.entity.ts';
import type { JobDriver } from './job-driver.ts';
import type { LeasedJob } from './job-outcomes.ts';

export interface WorkerDeps {
  orm: MikroORM;
  driver: JobDriver;
  clock: Clock;
  logger: Logger;
  intervalMs: number;
  concurrency: number;
  leaseMs: number;
}

/**
 * Drives `queued` and `running` jobs. All state is in Postgres, so any replica, restarted or not,
 * resumes every job. A job is claimed with `for update skip locked` and leased by pushing its
 * `next_attempt_at` past the lease with a fresh token: other replicas skip it while the lease
 * lasts, and a worker writes its result only while its token is still the job's. A replica that
 * dies mid-call loses its leases when they run out; one that stops hands them back at once.
 */
export class JobWorker {
  readonly #deps: WorkerDeps;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #abort = new AbortController();
  #stopSchedule: (() => Promise<void>) | null = null;

  constructor(deps: WorkerDeps) {
    this.#deps = deps;
  }

  start(): void {
    this.#stopSchedule ??= startPeriodic({ name: 'video worker round', intervalMs: this.#deps.intervalMs, logger: this.#deps.logger }, () => this.#launch());
  }

  /** One round, waiting for every job it drives (tests; `start` does not wait). Returns how many it drove. */
  async runOnce(): Promise<number> {
    const launched = await this.#launch();
    await Promise.all(this.#inFlight);
    return launched;
  }

  /** Stops claiming, aborts provider calls in flight and hands their jobs back. */
  async stop(): Promise<void> {
    await this.#stopSchedule?.();
    this.#abort.abort();
    await Promise.all(this.#inFlight);
  }

  async #launch(): Promise<number> {
    if (this.#abort.signal.aborted) return 0;
    const room = this.#deps.concurrency - this.#inFlight.size;
    if (room <= 0) return 0;
    const claimed = await this.#claim(room);
    for (const leased of claimed) {
      const run = this.#deps.driver
        .drive(leased, this.#abort.signal)
        .catch((err: unknown) => this.#deps.logger.error({ err, jobId: leased.job.id }, 'driving a video job failed; it is retried when its lease ends'))
        .finally(() => this.#inFlight.delete(run));
      this.#inFlight.add(run);
    }
    return claimed.length;
  }

  async #claim(limit: number): Promise<LeasedJob[]> {
    const { orm, clock, leaseMs } = this.#deps;
    return orm.em.fork().transactional(async (tx) => {
      const now = clock();
      const due = await tx.find(
        VideoJob,
        { status: { $in: ['queued', 'running'] }, nextAttemptAt: { $lte: now } },
        { orderBy: { nextAttemptAt: 'asc' }, limit, lockMode: LockMode.PESSIMISTIC_PARTIAL_WRITE },
      );
      const leaseEnd = new Date(now.getTime() + leaseMs);
      const leased = due.map((job) => {
        const token = randomUUID();
        job.leaseToken = token;
        job.nextAttemptAt = leaseEnd;
        return { job, token };
      });
      await tx.flush();
      return leased;
    });
  }
}
