import { alertsV1, billingV1 } from '@gw/contracts';
import { audited, envBool, loadConfig, observeQueries, runGrpcService } from '@gw/service-kit';
import { z } from 'zod';
import { billingEntities } from './db/entities.ts';
import { billingFunctions } from './db/functions/index.ts';
import { billingMigrations } from './db/migrations/index.ts';
import { releaseOrphanHolds, startHoldSweeper } from './domain/hold-sweeper.ts';
import { RequestMoney } from './domain/requests.ts';
import { settleAbandonedImageJobs } from './events/image-job-abandoned.subscriber.ts';
import { refundFailedVideoJobs } from './events/video-job-failed.subscriber.ts';
import { accountHandler } from './grpc/account.handler.ts';
import { billingAdminHandler } from './grpc/billing-admin.handler.ts';
import { billingHandler } from './grpc/billing.handler.ts';
import { startAlertSender } from './alert-sender.ts';
import { DEFAULT_RETRY_DELAYS_MS } from './domain/alerts.ts';
import { alertsHandler } from './grpc/alerts.handler.ts';
import { recordAudit } from './domain/audit-trail.ts';
import { ACCOUNT_AUDITED, ALERTS_AUDITED, BILLING_ADMIN_AUDITED } from './grpc/audited.ts';

const env = loadConfig(
  z.object({
    /** Account rate limits when an account sets none (spec 8: per second and per minute). */
    RATE_LIMIT_PER_SECOND: z.coerce.number().int().positive().default(50),
    RATE_LIMIT_PER_MINUTE: z.coerce.number().int().positive().default(1_500),
    /** An open hold older than this belongs to no live request and is released, leased or not. */
    HOLD_MAX_AGE_MS: z.coerce.number().int().positive().default(30 * 60_000),
    /**
     * A hold owner's lease lasts this long after its last renewal (owners renew every 20 s); the
     * holds of an owner whose lease lapsed are released by the next sweep: within lease + interval.
     */
    HOLD_LEASE_MS: z.coerce.number().int().positive().default(60_000),
    HOLD_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(15_000),
    /** Alert webhooks may go to loopback addresses (local runs and tests); else public https only. */
    ALERT_WEBHOOK_ALLOW_LOOPBACK: envBool(false),
    /** A webhook's whole exchange (connect, send, answer) ends after this. */
    ALERT_WEBHOOK_TIMEOUT_MS: z.coerce.number().int().positive().max(60_000).default(10_000),
    /** How often the sender looks for crossings to publish and deliveries due. */
    ALERT_SENDER_INTERVAL_MS: z.coerce.number().int().positive().default(1_000),
    /** Waits before each retry, comma-separated ms (default 10 s, 1 min, 5 min, 30 min, 2 h, 8 h, 24 h). */
    ALERT_WEBHOOK_RETRY_DELAYS_MS: z
      .string()
      .regex(/^\d+(,\d+)*$/, 'comma-separated milliseconds, e.g. 10000,60000')
      .transform((v) => v.split(',').map(Number))
      .optional(),
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
    const lifetimes = { leaseMs: env.HOLD_LEASE_MS, maxAgeMs: env.HOLD_MAX_AGE_MS };
    onStop(
      startHoldSweeper(
        (leases) => releaseOrphanHolds(orm.em.fork(), money, lifetimes, now(), logger, leases),
        { intervalMs: env.HOLD_SWEEP_INTERVAL_MS, leaseMs: env.HOLD_LEASE_MS, now },
        logger,
      ),
    );
    const policy = { allowLoopback: env.ALERT_WEBHOOK_ALLOW_LOOPBACK };
    onStop(
      startAlertSender(
        orm,
        {
          policy,
          intervalMs: env.ALERT_SENDER_INTERVAL_MS,
          timeoutMs: env.ALERT_WEBHOOK_TIMEOUT_MS,
          maxResponseBytes: 4_096,
          retryDelaysMs: env.ALERT_WEBHOOK_RETRY_DELAYS_MS ?? DEFAULT_RETRY_DELAYS_MS,
        },
        logger,
      ),
    );
    const deps = { orm, money, rateDefaults, now, holdLeaseMs: env.HOLD_LEASE_MS };
    // Three services by audience (proto/gateway/billing/v1): a billed request's calls, the operators', an account's own.
    return [
      [billingV1.BillingService, billingHandler(deps)],
      [billingV1.BillingAdminService, audited('billing', billingAdminHandler(deps), BILLING_ADMIN_AUDITED, recordAudit, orm, logger)],
      [billingV1.AccountService, audited('billing', accountHandler(deps), ACCOUNT_AUDITED, recordAudit, orm, logger)],
      [alertsV1.AlertsService, audited('alerts', alertsHandler({ orm, policy, now }), ALERTS_AUDITED, recordAudit, orm, logger)],
    ];
  },
});
