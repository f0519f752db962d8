import { context, metrics, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, JetStreamApiCodes, JetStreamApiError, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import { headers, type NatsConnection } from '@nats-io/transport-node';
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
  /** Delay before a failed message is first redelivered; it doubles with each failure, up to a minute. */
  retryDelayMs?: number;
  /**
   * Deliveries before an event whose handling keeps failing is given up (default 30: about 25
   * minutes of retries with the growing delay): it is moved to the dead-letter subject
   * `deadletter.<durable>` (stream `DEADLETTER` of the namespace) with why, and acknowledged, so
   * one poison event no longer comes back for ever. Operators read and replay them from there.
   */
  maxDeliveries?: number;
  /**
   * This deployment (`DEPLOYMENT_ID`; default: that variable, else none). With one, the durable is
   * this deployment's own (its name carries a hash of it) and events another deployment stamped
   * are passed over: two deployments sharing a NATS server and a namespace never take each
   * other's events, since each reads the stream through its own durable.
   */
  deployment?: string;
}

/** Headers a dead-lettered event carries besides its own: where it came from and why it was given up. */
export const DEAD_LETTER_HEADERS = {
  subject: 'Gw-Dead-Subject',
  stream: 'Gw-Dead-Stream',
  sequence: 'Gw-Dead-Sequence',
  consumer: 'Gw-Dead-Consumer',
  deliveries: 'Gw-Dead-Deliveries',
  error: 'Gw-Dead-Error',
} as const;

/** The subject (without namespace) a durable's given-up events are moved to. */
export function deadLetterSubject(durable: string): string {
  return `deadletter.${durable}`;
}

const DEFAULT_MAX_DELIVERIES = 30;
const MAX_RETRY_DELAY_MS = 60_000;

/** The durable's name: `durable`, plus a hash of the deployment when there is one. */
export function durableName(durable: string, deployment: string): string {
  return deployment === '' ? durable : `${durable}-${createHash('sha256').update(deployment).digest('hex').slice(0, 10)}`;
}

/** The consumer does not exist yet (anything else, a NATS outage say, is not a reason to create it). */
function isNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound;
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
  const maxDeliveries = opts.maxDeliveries ?? DEFAULT_MAX_DELIVERIES;
  const config = {
    durable_name: durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: qualify(opts.namespace, opts.subject),
    ack_wait: (opts.ackWaitMs ?? 30_000) * 1e6,
    // The server's bound too, one past ours (so our last failure still sees the event and moves
    // it): an event whose handling kills the process is not delivered for ever either (JetStream
    // then publishes a MAX_DELIVERIES advisory, see docs/reliability.md).
    max_deliver: maxDeliveries + 1,
  };
  try {
    const existing = await jsm.consumers.info(stream, durable);
    // A durable made before the bound (or with another one) gets it.
    if (existing.config.max_deliver !== config.max_deliver) await jsm.consumers.update(stream, durable, { max_deliver: config.max_deliver });
  } catch (err) {
    if (!isNotFound(err)) throw err;
    await jsm.consumers.add(stream, config);
  }
  const js = jetstream(opts.nats);
  const consumer = await js.consumers.get(stream, durable);
  const deadSubject = qualify(opts.namespace, deadLetterSubject(opts.durable));
  // Operators see dead letters on a dashboard too (Prometheus: events_dead_lettered_total).
  const deadLettered = metrics.getMeter('@gw/service-kit/bus').createCounter('events.dead_lettered', {
    description: 'Events given up after every delivery failed, moved to the dead-letter subject',
  });
  await ensureStreamFor(opts.nats, opts.namespace, deadLetterSubject(opts.durable));
  /** Moves a given-up event to the dead-letter subject; resolves false if that failed (the event is then retried). */
  const deadLetter = async (m: JsMsg, err: unknown): Promise<boolean> => {
    const h = headers();
    for (const [key, values] of m.headers ?? []) for (const v of values) h.append(key, v);
    h.set(DEAD_LETTER_HEADERS.subject, m.subject);
    h.set(DEAD_LETTER_HEADERS.stream, m.info.stream);
    h.set(DEAD_LETTER_HEADERS.sequence, String(m.seq));
    h.set(DEAD_LETTER_HEADERS.consumer, durable);
    h.set(DEAD_LETTER_HEADERS.deliveries, String(m.info.deliveryCount));
    h.set(DEAD_LETTER_HEADERS.error, `${(err as Error)?.name ?? 'Error'}: ${String((err as Error)?.message ?? err)}`.replaceAll(/[\r\n]+/g, ' ').slice(0, 300));
    try {
      // One dead letter per event, however often this is tried.
      await js.publish(deadSubject, m.data, { headers: h, msgID: `${m.info.stream}:${m.seq}:${durable}` });
      return true;
    } catch (publishErr) {
      opts.logger.error({ err: publishErr, subject: m.subject }, 'could not dead-letter an event; it will be retried');
      return false;
    }
  };
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
            const deliveries = m.info.deliveryCount;
            if (deliveries >= maxDeliveries && (await deadLetter(m, err))) {
              opts.logger.error({ err, subject: m.subject, deliveryCount: deliveries, deadLetter: deadSubject }, 'event handling failed on every delivery; moved to the dead-letter subject');
              m.term(); // no reason: servers before 2.10.4 ignore a TERM that carries one
              deadLettered.add(1, { 'messaging.consumer.group.name': opts.durable, 'messaging.destination.name': opts.subject });
            } else {
              opts.logger.warn({ err, subject: m.subject, deliveryCount: deliveries }, 'event handling failed; will retry');
              m.nak(Math.min(MAX_RETRY_DELAY_MS, (opts.retryDelayMs ?? 1_000) * 2 ** Math.min(deliveries - 1, 16)));
            }
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
