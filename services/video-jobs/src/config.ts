import { loadConfig } from '@gw/service-kit';
import { z } from 'zod';

const ms = (fallback: number) => z.coerce.number().int().positive().default(fallback);

const schema = z
  .object({
    /** Billing's gRPC address: video-jobs charges, cancels and (on a late race) refunds jobs itself. */
    BILLING_ADDR: z.string().min(1),
    /** Deadline of one billing call. */
    BILLING_TIMEOUT_MS: ms(5_000),
    /**
     * Shifts this service's clock (ms, may be negative). Every time it stores or compares comes from
     * that clock: creation, completion, the 24 h download window, Idempotency-Key expiry, the job
     * time limit. Production leaves it at 0; tests move it forward to reach an expiry.
     */
    CLOCK_OFFSET_MS: z.coerce.number().int().default(0),
    /** A job not finished this long after its creation is cancelled upstream and fails (`timed_out`). */
    VIDEO_JOB_MAX_SECONDS: ms(1_800),
    /** How often the worker looks for jobs that are due. */
    VIDEO_WORKER_INTERVAL_MS: ms(1_000),
    /** Jobs one replica drives at once. */
    VIDEO_WORKER_CONCURRENCY: ms(8),
    /** First wait between two polls of a provider job; it grows by half each poll. */
    VIDEO_POLL_INITIAL_MS: ms(2_000),
    /** Longest wait between two polls (and between retries after an error). */
    VIDEO_POLL_MAX_MS: ms(15_000),
    /** Deadline of one provider call (submit or poll) made by the worker. */
    VIDEO_PROVIDER_TIMEOUT_MS: ms(60_000),
    /**
     * How long a claimed job belongs to the replica that claimed it. A replica that dies keeps its
     * jobs this long before another takes them over; a replica that stops gracefully hands them
     * back at once. Must exceed two provider calls.
     */
    VIDEO_LEASE_MS: ms(180_000),
    /** A job still `pending` (creation saga unfinished) after this long is finished or cancelled. */
    VIDEO_PENDING_GRACE_MS: ms(60_000),
    /** How often pending jobs and expired Idempotency-Keys are swept. */
    VIDEO_RECOVERY_INTERVAL_MS: ms(10_000),
  })
  .refine((env) => env.VIDEO_LEASE_MS > 2 * env.VIDEO_PROVIDER_TIMEOUT_MS, {
    message: 'must be more than twice VIDEO_PROVIDER_TIMEOUT_MS',
    path: ['VIDEO_LEASE_MS'],
  })
  .refine((env) => env.VIDEO_PENDING_GRACE_MS > 3 * env.BILLING_TIMEOUT_MS, {
    // A live creation makes at most three billing calls; the sweep must never overtake one.
    message: 'must be more than three times BILLING_TIMEOUT_MS',
    path: ['VIDEO_PENDING_GRACE_MS'],
  });

export type VideoJobsConfig = z.infer<typeof schema>;

/** The service's own settings (the common ones are parsed by the service runner). */
export function videoJobsConfig(env: NodeJS.ProcessEnv = process.env): VideoJobsConfig {
  return loadConfig(schema, env);
}
