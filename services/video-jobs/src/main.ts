import { billingV1, createClient, videoV1 } from '@gw/contracts';
import { FallbackRouter, ProviderRegistry } from '@gw/providers';
import { observeQueries, runGrpcService, startPeriodic } from '@gw/service-kit';
import { offsetClock } from './clock.ts';
import { videoJobsConfig } from './config.ts';
import { videoJobsEntities } from './db/entities.ts';
import { videoJobsMigrations } from './db/migrations/index.ts';
import { JobCreator } from './domain/create-job.ts';
import { JobDriver } from './domain/job-driver.ts';
import { JobWorker } from './domain/job-worker.ts';
import { recoverPendingJobs } from './domain/pending-recovery.ts';
import { recordRefunds } from './events/refund-completed.subscriber.ts';
import { videoJobsHandler } from './grpc/video-jobs.handler.ts';

const config = videoJobsConfig();
const providers = ProviderRegistry.fromEnv();
const clock = offsetClock(config.CLOCK_OFFSET_MS);

await runGrpcService({
  name: 'video-jobs',
  defaultPort: 50055,
  database: { schema: 'video_jobs', entities: videoJobsEntities, migrations: videoJobsMigrations },
  outbox: true,
  register: async ({ orm, whenNats, env, logger, meter, onStop }) => {
    observeQueries(meter, orm, [{ name: 'video.jobs', description: 'Video jobs by status', sql: 'select count(*) as value, status from video_job group by status' }]);
    if (config.CLOCK_OFFSET_MS !== 0) logger.warn({ offsetMs: config.CLOCK_OFFSET_MS }, 'the service clock is shifted (CLOCK_OFFSET_MS)');
    const billing = createClient(billingV1.BillingService, config.BILLING_ADDR, { defaultTimeoutMs: config.BILLING_TIMEOUT_MS });
    // One view of route health: jobs are not created (nor charged) while every route of their model cools down.
    // One account's failing jobs rest no route for the others: failures of two accounts at least.
    const router = new FallbackRouter({ minAccounts: 2 });
    const creator = new JobCreator({ orm, billing, clock, logger, router });
    const driver = new JobDriver({
      orm,
      providers,
      router,
      clock,
      logger,
      settings: {
        pollInitialMs: config.VIDEO_POLL_INITIAL_MS,
        pollMaxMs: config.VIDEO_POLL_MAX_MS,
        providerTimeoutMs: config.VIDEO_PROVIDER_TIMEOUT_MS,
        maxJobMs: config.VIDEO_JOB_MAX_SECONDS * 1000,
      },
    });
    const worker = new JobWorker({
      orm,
      driver,
      clock,
      logger,
      intervalMs: config.VIDEO_WORKER_INTERVAL_MS,
      concurrency: config.VIDEO_WORKER_CONCURRENCY,
      leaseMs: config.VIDEO_LEASE_MS,
    });
    worker.start();
    const stopRecovery = startPeriodic({ name: 'pending video job recovery', intervalMs: config.VIDEO_RECOVERY_INTERVAL_MS, logger }, () =>
      recoverPendingJobs({ orm, billing, clock, logger, graceMs: config.VIDEO_PENDING_GRACE_MS }),
    );
    whenNats((nats) => recordRefunds({ orm, nats, namespace: env.EVENTS_NAMESPACE, logger }));
    // Stopped after the gRPC server drained; the database closes after these.
    onStop(() => worker.stop());
    onStop(stopRecovery);
    onStop(() => providers.close());
    onStop(() => billing.close());
    return [
      [
        videoV1.VideoJobsService,
        videoJobsHandler({ orm, creator, download: { orm, providers, clock, providerTimeoutMs: config.VIDEO_PROVIDER_TIMEOUT_MS } }),
      ],
    ];
  },
});
