import { mediaV1 } from '@gw/contracts';
import { FallbackRouter, ProviderRegistry } from '@gw/providers';
import { loadConfig, runGrpcService, startPeriodic } from '@gw/service-kit';
import { z } from 'zod';
import { mediaEntities } from './db/entities.ts';
import { mediaMigrations } from './db/migrations/index.ts';
import { purgeImageJobs, startImageJobPurge } from './domain/image-job-purge.ts';
import { orphanBounds } from './domain/image-jobs.ts';
import { abandonStaleJobs } from './domain/stale-jobs.ts';
import { mediaHandler } from './grpc/media.handler.ts';

const env = loadConfig(
  z.object({
    /** Consecutive upstream failures after which a route cools down. */
    ROUTE_FAILURE_THRESHOLD: z.coerce.number().int().positive().default(3),
    /** Distinct accounts those failures must come from: one account's failures rest no route for the others. */
    ROUTE_MIN_ACCOUNTS: z.coerce.number().int().positive().default(2),
    ROUTE_COOL_DOWN_MS: z.coerce.number().int().positive().default(30_000),
    /** Largest image downloaded when a provider answers with a URL. */
    IMAGE_DOWNLOAD_MAX_BYTES: z.coerce.number().int().positive().default(32 * 1024 * 1024),
    IMAGE_DOWNLOAD_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
    /** How long Idempotency-Keys and finished results are kept (DECISIONS.md: 24 hours). */
    IMAGE_RESULT_TTL_MS: z.coerce.number().int().positive().default(24 * 60 * 60_000),
    /** A job running this long has lost its gateway; its key is freed. Above the gateway's request deadline. */
    IMAGE_JOB_STALE_MS: z.coerce.number().int().positive().default(30 * 60_000),
    IMAGE_PURGE_INTERVAL_MS: z.coerce.number().int().positive().default(10 * 60_000),
    /**
     * An Idempotency-Key claim's lease: set when a job begins, renewed while media runs it. A
     * running job whose lease ended (its gateway or media process died) is abandoned by the next
     * orphan sweep (every IMAGE_ORPHAN_SWEEP_MS) or by a retry with its key.
     */
    IMAGE_CLAIM_LEASE_MS: z.coerce.number().int().positive().default(60_000),
    IMAGE_ORPHAN_SWEEP_MS: z.coerce.number().int().positive().default(15_000),
  }),
);
const providers = ProviderRegistry.fromEnv();
const router = new FallbackRouter({ failureThreshold: env.ROUTE_FAILURE_THRESHOLD, minAccounts: env.ROUTE_MIN_ACCOUNTS, coolDownMs: env.ROUTE_COOL_DOWN_MS });
const now = () => new Date();
// Leases are judged once this process has been up for a lease: runs of a peer that kept
// renewing meanwhile are not taken for orphans by a media that just (re)started.
const policy = {
  resultTtlMs: env.IMAGE_RESULT_TTL_MS,
  staleAfterMs: env.IMAGE_JOB_STALE_MS,
  claimLeaseMs: env.IMAGE_CLAIM_LEASE_MS,
  leasesFrom: new Date(Date.now() + env.IMAGE_CLAIM_LEASE_MS),
};

await runGrpcService({
  name: 'media',
  defaultPort: 50054,
  database: { schema: 'media', entities: mediaEntities, migrations: mediaMigrations },
  // Abandoned jobs are announced to billing (media.image_job.abandoned).
  outbox: true,
  register: ({ orm, logger, onStop }) => {
    onStop(startImageJobPurge(() => purgeImageJobs(orm.em.fork(), policy, now()), env.IMAGE_PURGE_INTERVAL_MS, logger));
    onStop(
      startPeriodic({ name: 'image job orphan sweep', intervalMs: env.IMAGE_ORPHAN_SWEEP_MS, logger, runAtStart: false }, async () => {
        const abandoned = await abandonStaleJobs(orm.em.fork(), orphanBounds(policy, now()), now());
        if (abandoned > 0) logger.warn({ abandoned }, 'abandoned image jobs whose claim lease ended');
      }),
    );
    onStop(() => providers.close());
    const download = { maxBytes: env.IMAGE_DOWNLOAD_MAX_BYTES, timeoutMs: env.IMAGE_DOWNLOAD_TIMEOUT_MS };
    return [[mediaV1.MediaService, mediaHandler({ orm, providers, router, download, now, logger, policy, claimLeaseMs: env.IMAGE_CLAIM_LEASE_MS })]];
  },
});
