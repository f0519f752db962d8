import * as grpc from '@grpc/grpc-js';
import { addHealthService, addService, bindServer, HealthState, shutdownServer, type AnyService } from '@gw/contracts';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Meter } from '@opentelemetry/api';
import type { Logger } from 'pino';
import pRetry from 'p-retry';
import { z } from 'zod';
import { commonEnv, envBool, loadConfig } from './config.ts';
import { createOrm, runMigrations, type OrmOptions } from './db/orm.ts';
import { observeQueries, OUTBOX_GAUGES } from './db/gauges.ts';
import { createLogger } from './logger.ts';
import { connectNats, type NatsConnection } from './bus/nats.ts';
import { OutboxRelay } from './bus/outbox.ts';
import { writeReadyFile } from './ready-file.ts';
import { onShutdown, type ShutdownStep } from './shutdown.ts';
import { collectGarbageWhenIdle, collectStartupGarbage } from './give-back-memory.ts';
import { startTelemetry } from './telemetry.ts';

const serviceEnv = z.object({
  ...commonEnv,
  GRPC_HOST: z.string().default('127.0.0.1'),
  GRPC_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  DATABASE_URL: z.string().min(1).optional(),
  DB_POOL_MAX: z.coerce.number().int().positive().default(10),
  /** Apply pending migrations at start (a deployment may run them as a separate job instead). */
  MIGRATE_ON_START: envBool(true),
  /**
   * Callers' connections are asked to close (GOAWAY) after this long, so they look the replicas up
   * again (DNS) and spread over pods added since; calls in flight finish (up to CONNECTION_GRACE_MS).
   * 0: never.
   */
  GRPC_MAX_CONNECTION_AGE_MS: z.coerce.number().int().min(0).default(0),
});
export type ServiceEnv = z.infer<typeof serviceEnv>;

/**
 * Largest message a service accepts: the largest public request body (text, 32 MiB) re-encoded
 * in its call, with room for the call's other fields.
 */
const MAX_MESSAGE_BYTES = 40 * 1024 * 1024;

/** How long calls in flight on a connection past its age may finish: longer than the longest call (a Generate's 11 minutes). */
const CONNECTION_GRACE_MS = 15 * 60_000;

/** What a service's `register` gets to build its handlers and background work. */
export interface ServiceContext {
  env: ServiceEnv;
  logger: Logger;
  meter: Meter;
  /** Present when the service declared a database. */
  orm: MikroORM;
  /**
   * Runs `start` once NATS is connected (its durable consumers, say), and its returned step on
   * shutdown. The service does not wait for NATS: it serves its rpcs while NATS is away, even
   * when it starts then, and its events wait in its outbox.
   */
  whenNats(start: (nats: NatsConnection) => Promise<ShutdownStep> | ShutdownStep): void;
  /** Registers work to stop on shutdown, after the gRPC server has drained. */
  onStop(step: ShutdownStep): void;
}

export type Registration = [AnyService, object];

export interface GrpcServiceOptions {
  name: string;
  /** Port when GRPC_PORT is not set. */
  defaultPort: number;
  database?: Omit<OrmOptions, 'databaseUrl' | 'poolMax'>;
  /** Run the outbox relay (the service publishes events). */
  outbox?: boolean;
  register: (ctx: ServiceContext) => Registration[] | Promise<Registration[]>;
}

/**
 * The common life of a gRPC service: validated config, telemetry, JSON logs, its own schema
 * migrated, the gRPC server with the standard health service, a ready file, NATS with the outbox
 * relay once connected (not waited for), and graceful shutdown (health NOT_SERVING first, drain
 * calls, stop background work, close NATS and the database, flush telemetry).
 */
export async function runGrpcService(opts: GrpcServiceOptions): Promise<void> {
  const env = loadConfig(serviceEnv);
  const telemetry = startTelemetry({ serviceName: opts.name, otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT, metricsPort: env.METRICS_PORT });
  const logger = createLogger(opts.name, env.LOG_LEVEL);
  process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'));

  let orm: MikroORM | undefined;
  if (opts.database) {
    if (!env.DATABASE_URL) throw new Error(`${opts.name}: DATABASE_URL is required`);
    orm = await createOrm({ ...opts.database, databaseUrl: env.DATABASE_URL, poolMax: env.DB_POOL_MAX });
    if (env.MIGRATE_ON_START) {
      const applied = await runMigrations(orm);
      if (applied.length > 0) logger.info({ applied }, 'migrations applied');
    }
  }
  const stops: ShutdownStep[] = [];
  // NATS is not waited for (a service that needed it to start could not restart during a NATS
  // outage): what needs it starts once connected, and stops before the connection drains.
  const natsConnected = connectNats(env.NATS_URL, opts.name, { logger });
  const natsStops: ShutdownStep[] = [];
  let stopping = false;
  // Work that fails to start (a stream that cannot be created yet, say) is tried again until it
  // starts: a consumer that silently never ran would leave its events (refunds) unhandled.
  const whenNats = (start: (nats: NatsConnection) => Promise<ShutdownStep> | ShutdownStep) => {
    void natsConnected.then((nats) =>
      pRetry(
        async () => {
          if (stopping) return;
          const stop = await start(nats);
          if (stopping) await stop();
          else natsStops.push(stop);
        },
        {
          retries: Infinity,
          minTimeout: 500,
          maxTimeout: 30_000,
          randomize: true,
          unref: true,
          shouldRetry: () => !stopping,
          onFailedAttempt: ({ error, attemptNumber }) => logger.error({ err: error, attempt: attemptNumber }, 'starting work on NATS failed; trying again'),
        },
      ).catch((err: unknown) => logger.error({ err }, 'starting work on NATS failed')),
    );
  };
  let connected: NatsConnection | undefined;
  void natsConnected.then((nats) => {
    connected = nats;
    logger.info('nats connected');
  });
  if (opts.outbox && orm) {
    const db = orm;
    observeQueries(telemetry.meter, db, OUTBOX_GAUGES);
    whenNats((nats) => {
      const relay = new OutboxRelay({ orm: db, nats, namespace: env.EVENTS_NAMESPACE, deployment: env.DEPLOYMENT_ID, logger });
      relay.start();
      return () => relay.stop();
    });
  }

  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    ...(env.GRPC_MAX_CONNECTION_AGE_MS > 0
      ? { 'grpc.max_connection_age_ms': env.GRPC_MAX_CONNECTION_AGE_MS, 'grpc.max_connection_age_grace_ms': CONNECTION_GRACE_MS }
      : {}),
  });
  const health = new HealthState();
  addHealthService(server, health);
  const ctx: ServiceContext = {
    env,
    logger,
    meter: telemetry.meter,
    get orm(): MikroORM {
      if (!orm) throw new Error(`${opts.name} declared no database`);
      return orm;
    },
    whenNats,
    onStop: (step) => stops.push(step),
  };
  const onUnexpectedError = (err: unknown, path: string) => logger.error({ err, path }, 'rpc failed unexpectedly');
  for (const [service, impl] of await opts.register(ctx)) addService(server, service, impl as never, { onUnexpectedError, token: env.SERVICE_TOKEN });

  collectStartupGarbage();
  const port = await bindServer(server, env.GRPC_HOST, env.GRPC_PORT ?? opts.defaultPort);
  health.set(true);
  const address = `${env.GRPC_HOST}:${port}`;
  logger.info({ address, serviceToken: env.SERVICE_TOKEN === '' ? 'off' : 'required' }, `${opts.name} serving`);
  writeReadyFile(env.READY_FILE, address);
  collectGarbageWhenIdle(logger);

  onShutdown(logger, env.SHUTDOWN_TIMEOUT_MS, [
    () => health.set(false),
    () => shutdownServer(server, Math.max(1_000, env.SHUTDOWN_TIMEOUT_MS - 5_000)),
    async () => {
      for (const step of stops) await step();
    },
    async () => {
      stopping = true;
      for (const step of natsStops) await step();
    },
    // Drained if connected; a connection still being attempted ends with the process.
    () => connected?.drain(),
    () => orm?.close(),
    () => telemetry.shutdown(),
  ]);
}

/** `node services/<svc>/src/migrate.ts`: applies the service's pending migrations and exits. */
export async function runMigrationsCommand(database: Omit<OrmOptions, 'databaseUrl' | 'poolMax'>): Promise<void> {
  const env = loadConfig(z.object({ DATABASE_URL: z.string().min(1), LOG_LEVEL: commonEnv.LOG_LEVEL }));
  const logger = createLogger(`${database.schema}-migrate`, env.LOG_LEVEL);
  const orm = await createOrm({ ...database, databaseUrl: env.DATABASE_URL, poolMax: 2 });
  try {
    const applied = await runMigrations(orm);
    logger.info({ schema: database.schema, applied }, applied.length > 0 ? 'migrations applied' : 'schema up to date');
  } finally {
    await orm.close();
  }
}
