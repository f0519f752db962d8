import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type ConsumerMessages } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { ensureStreamFor } from './nats.ts';
import { createHash } from 'node:crypto';
import { DEPLOYMENT_HEADER, qualify } from './subjects.ts';

const tracer = () => trace.getTracer('@gw/service-kit/bus');

export interface DurableConsumerOptions {
  nats: NatsConnection;
  namespace: string;
  /** `<consumer-service>-<purpose>`, e.g. `billing-video-refunds`. */
  durable: string;
  /** Subject (without namespace) the consumer filters on, e.g. `video.job.failed`. */
  subject: string;
  logger: Logger;
  /** Handles one event; throwing makes the message come back later (nak with delay). */
  handle: (data: Uint8Array, info: { redelivered: boolean; deliveryCount: number }) => Promise<void>;
  /** How long an unacknowledged message waits before redelivery. */
  ackWaitMs?: number;
  /** Delay before a failed message is redelivered. */
  retryDelayMs?: number;
  /**
   * This deployment (`DEPLOYMENT_ID`; default: that variable, else none). With one, the durable is
   * this deployment's own (its name carries a hash of it) and events another deployment stamped
   * are passed over: two deployments sharing a NATS server and a namespace never take each
   * other's events, since each reads the stream through its own durable.
   */
  deployment?: string;
}

/** The durable's name: `durable`, plus a hash of the deployment when there is one. */
export function durableName(durable: string, deployment: string): string {
  return deployment === '' ? durable : `${durable}-${createHash('sha256').update(deployment).digest('hex').slice(0, 10)}`;
}

/**
 * A durable JetStream consumer with explicit ack: a message is acknowledged only after its
 * handler succeeded, so a crash or a failure brings it back. Handlers must therefore be
 * idempotent (see `processOnce`). Returns a stop function.
 */
export async function consumeDurable(opts: DurableConsumerOptions): Promise<() => Promise<void>> {
  const deployment = opts.deployment ?? process.env.DEPLOYMENT_ID ?? '';
  const durable = durableName(opts.durable, deployment);
  const stream = await ensureStreamFor(opts.nats, opts.namespace, opts.subject);
  const jsm = await jetstreamManager(opts.nats);
  const config = {
    durable_name: durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: qualify(opts.namespace, opts.subject),
    ack_wait: (opts.ackWaitMs ?? 30_000) * 1e6,
  };
  try {
    await jsm.consumers.info(stream, durable);
  } catch {
    await jsm.consumers.add(stream, config);
  }
  const consumer = await jetstream(opts.nats).consumers.get(stream, durable);
  let messages: ConsumerMessages | null = null;
  const state = { stopped: false };
  const loop = (async () => {
    while (!state.stopped) {
      try {
        messages = await consumer.consume({ max_messages: 64, expires: 5_000 });
        for await (const m of messages) {
          // Another deployment's event, seen through our own durable: its own durable delivers it there.
          const from = m.headers?.get(DEPLOYMENT_HEADER) ?? '';
          if (deployment !== '' && from !== '' && from !== deployment) {
            opts.logger.debug({ subject: m.subject, from }, "another deployment's event; passed over");
            m.ack();
            continue;
          }
          // The handler runs in a CONSUMER span continuing the publisher's trace.
          const parent = propagation.extract(ROOT_CONTEXT, m.headers, { get: (h, key) => h?.get(key) || undefined, keys: (h) => (h ? h.keys() : []) });
          const span = tracer().startSpan(`process ${m.subject}`, { kind: SpanKind.CONSUMER, attributes: { 'messaging.system': 'nats', 'messaging.destination.name': m.subject, 'messaging.consumer.group.name': durable } }, parent);
          try {
            await context.with(trace.setSpan(parent, span), () => opts.handle(m.data, { redelivered: m.redelivered, deliveryCount: m.info.deliveryCount }));
            m.ack();
          } catch (err) {
            span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).name });
            opts.logger.warn({ err, subject: m.subject, deliveryCount: m.info.deliveryCount }, 'event handling failed; will retry');
            m.nak(opts.retryDelayMs ?? 1_000);
          } finally {
            span.end();
          }
        }
      } catch (err) {
        if (state.stopped) break;
        opts.logger.warn({ err: (err as Error).message }, 'consumer interrupted; resuming');
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  })();
  return async () => {
    state.stopped = true;
    await (messages as ConsumerMessages | null)?.close();
    await loop;
  };
}

/**
 * Runs `fn` at most once per event id for this consumer: the id is recorded in the same
 * transaction as the handler's changes, so a redelivered event (or a concurrent duplicate) is
 * skipped. Resolves true when `fn` ran.
 */
export async function processOnce(
  em: EntityManager,
  consumer: string,
  eventId: string,
  fn: (tx: EntityManager) => Promise<void>,
): Promise<boolean> {
  if (eventId === '') throw new Error('an event without an id cannot be de-duplicated');
  return em.transactional(async (tx) => {
    const rows = await tx.execute<unknown[]>(
      'insert into processed_event (event_id, consumer) values (?, ?) on conflict (event_id) do nothing returning event_id',
      [`${consumer}:${eventId}`, consumer],
    );
    if (rows.length === 0) return false;
    await fn(tx);
    return true;
  });
}
