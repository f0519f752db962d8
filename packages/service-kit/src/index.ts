export { ConfigError, commonEnv, envBool, loadConfig, trustProxyEnv } from './config.ts';
export { createLogger, type Logger } from './logger.ts';
export { startTelemetry, type Telemetry, type TelemetryOptions } from './telemetry.ts';
export { onShutdown, type ShutdownStep } from './shutdown.ts';
export { writeReadyFile } from './ready-file.ts';
export { collectGarbageWhenIdle, collectStartupGarbage } from './give-back-memory.ts';
export { BytesBudget } from './bytes-budget.ts';
export { startPeriodic, type PeriodicOptions } from './periodic.ts';
export { HoldLease } from './hold-lease.ts';
export { isTimeZone } from './time-zone.ts';
export { accessLog, type AccessLogReply, type AccessLogRequest } from './access-log.ts';
export { createOrm, runMigrations, type NamedMigration, type OrmOptions, type RepeatableMigration } from './db/orm.ts';
export { observeQueries, type QueryGauge } from './db/gauges.ts';
export { runPrepared, type PreparedStatement } from './db/prepared.ts';
export {
  claimIdempotencyKey,
  completeClaim,
  deleteExpiredClaims,
  hasClaim,
  IDEMPOTENCY_CLAIM_DROP_SQL,
  IDEMPOTENCY_CLAIM_TABLE_SQL,
  releaseClaims,
  type ClaimOutcome,
  type ClaimOwner,
  type KeyClaim,
} from './db/idempotency.ts';
export { connectNats, ensureStreamFor, subscribeBroadcast, type NatsConnection, type NatsOptions, type Subscription } from './bus/nats.ts';
export { qualify, streamFor } from './bus/subjects.ts';
export { enqueueEvent, OutboxRelay, type OutgoingEvent, type RelayOptions } from './bus/outbox.ts';
export { consumeDurable, durableName, processOnce, type DurableConsumerOptions } from './bus/consumer.ts';
export { runGrpcService, runMigrationsCommand, type GrpcServiceOptions, type Registration, type ServiceContext, type ServiceEnv } from './runner.ts';
export {
  ACTOR_HEADER,
  actorOf,
  appendAudit,
  audited,
  AUDIT_TABLE_DROP_SQL,
  AUDIT_TABLE_SQL,
  listAuditEvents,
  ORIGIN_HEADER,
  type Actor,
  type AuditDescribe,
  type AuditRow,
} from './audit.ts';
