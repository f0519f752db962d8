import { billingV1 } from '@gw/contracts';
import { loadConfig, observeQueries, runGrpcService } from '@gw/service-kit';
import { z } from 'zod';
import { billingEntities } from './db/entities.ts';
import { billingFunctions } from './db/functions/index.ts';
import { billingMigrations } from './db/migrations/index.ts';
import { releaseStaleHolds, startHoldSweeper } from './domain/hold-sweeper.ts';
import { RequestMoney } from './domain/requests.ts';
import { settleAbandonedImageJobs } from './events/image-job-abandoned.subscriber.ts';
import { refundFailedVideoJobs } from './events/video-job-failed.subscriber.ts';
import { billingHandler } from './grpc/billing.handler.ts';

const env = loadConfig(
  z.object({
    /** Account rate limits when an account sets none (spec 8: per second and per minute). */
    RATE_LIMIT_PER_SECOND: z.coerce.number().int().positive().default(50),
    RATE_LIMIT_PER_MINUTE: z.coerce.number().int().positive().default(1_500),
    /** An open hold older than this belongs to no live request and is released. */
    HOLD_MAX_AGE_MS: z.coerce.number().int().positive().default(30 * 60_000),
    HOLD_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  }),
);

const now = () => new Date();

await runGrpcService({
  name: 'billing',
  defaultPort: 50051,
  database: { schema: 'billing', entities: billingEntities, migrations: billingMigrations, repeatable: billingFunctions },
  outbox: true,
  register: async ({ orm, whenNats, env: serviceEnv, logger, meter, onStop }) => {
    const rateDefaults = { perSecond: env.RATE_LIMIT_PER_SECOND, perMinute: env.RATE_LIMIT_PER_MINUTE };
    const money = new RequestMoney(orm, { now, meter, rateDefaults, logger });
    observeQueries(meter, orm, [
      {
        name: 'billing.holds.open',
        description: 'Holds not yet settled or released, and the credits they hold',
        sql: `select count(*) as value, 'count' as measure from hold where status = 'open'
              union all select coalesce(sum(amount), 0), 'credits' from hold where status = 'open'`,
      },
    ]);
    whenNats((nats) => refundFailedVideoJobs({ orm, nats, namespace: serviceEnv.EVENTS_NAMESPACE, logger, now }));
    whenNats((nats) => settleAbandonedImageJobs({ orm, nats, namespace: serviceEnv.EVENTS_NAMESPACE, logger, now }));
    onStop(startHoldSweeper(() => releaseStaleHolds(orm.em.fork(), money, env.HOLD_MAX_AGE_MS, now(), logger), env.HOLD_SWEEP_INTERVAL_MS, logger));
    return [
      [
        billingV1.BillingService,
        billingHandler({
          orm,
          money,
          rateDefaults,
          now,
        }),
      ],
    ];
  },
});
