import { billingV1 } from '@gw/contracts';
import { loadConfig, runGrpcService } from '@gw/service-kit';
import { z } from 'zod';
import { billingEntities } from './db/entities.ts';
import { billingMigrations } from './db/migrations/index.ts';
import { RequestMoney } from './domain/requests.ts';
import { refundFailedVideoJobs } from './events/video-job-failed.subscriber.ts';
import { billingHandler } from './grpc/billing.handler.ts';

const env = loadConfig(
  z.object({
    /** Account rate limits when an account sets none (spec 8: per second and per minute). */
    RATE_LIMIT_PER_SECOND: z.coerce.number().int().positive().default(50),
    RATE_LIMIT_PER_MINUTE: z.coerce.number().int().positive().default(1_500),
  }),
);

const now = () => new Date();

await runGrpcService({
  name: 'billing',
  defaultPort: 50051,
  database: { schema: 'billing', entities: billingEntities, migrations: billingMigrations },
  outbox: true,
  register: async ({ orm, nats, env: serviceEnv, logger, onStop }) => {
    onStop(await refundFailedVideoJobs({ orm, nats, namespace: serviceEnv.EVENTS_NAMESPACE, logger, now }));
    return [
      [
        billingV1.BillingService,
        billingHandler({
          orm,
          money: new RequestMoney(orm, now),
          rateDefaults: { perSecond: env.RATE_LIMIT_PER_SECOND, perMinute: env.RATE_LIMIT_PER_MINUTE },
          now,
        }),
      ],
    ];
  },
});
