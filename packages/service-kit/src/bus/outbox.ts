import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import { nativePool, type PgClient } from '../db/native-pool.ts';
import { ensureStreamFor } from './nats.ts';
import type { OutboxEvent } from './outbox-entities.ts';
import { DEPLOYMENT_HEADER, qualify } from './subjects.ts';

export interface OutgoingEvent {
  /** `<domain>.<entity>.<event>`, without the namespace. */
  subject: string;
  /** The encoded proto message. */
  payload: Uint8Array;
  /** The event id: JetStream de-duplicates on it and consumers record it. */
  msgId: string;
}

/**
 * Queues an event in the outbox. It is written by the caller's next flush, in the caller's
 * transaction: committed together with the state change it announces, or not at all.
 */
export function enqueueEvent(em: EntityManager, event: OutgoingEvent): void {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  // The entity as the ORM registered it (createOrm loads it with the ORM, not this module).
  em.create(em.getMetadata().getByClassName<OutboxEvent>('OutboxEvent').class, {
    subject: event.subject,
    payload: Buffer.from(event.payload),
    msgId: event.msgId,
    publishedAt: null,
    traceparent: carrier.traceparent ?? null,
  });
}

const tracer = () => trace.getTracer('@gw/service-kit/bus');

/** Publishes one event in a PRODUCER span, child of the transaction that wrote it; consumers continue the trace. */
async function publishTraced(js: JetStreamClient, subject: string, payload: Uint8Array, msgId: string, traceparent: string | null, deployment: string): Promise<void> {
  const parent = traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent }) : ROOT_CONTEXT;
  const span = tracer().startSpan(`publish ${subject}`, { kind: SpanKind.PRODUCER, attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject, 'messaging.message.id': msgId } }, parent);
  const h = headers();
  propagation.inject(trace.setSpan(parent, span), h, { set: (carrier, key, value) => carrier.set(key, value) });
  if (deployment !== '') h.set(DEPLOYMENT_HEADER, deployment);
  try {
    await js.publish(subject, payload, { msgID: msgId, headers: h });
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).name });
    throw err;
  } finally {
    span.end();
  }
}

export interface RelayOptions {
  orm: MikroORM;
  nats: NatsConnection;
  namespace: string;
  logger: Logger;
  /** Stamped on every event (`DEPLOYMENT_ID`), so consumers of another deployment leave it alone; '' for none. */
  deployment?: string;
  /**
   * How often to look for new events when idle. Commits announce their events (LISTEN/NOTIFY) and
   * wake the relay at once; the poll is the safety net should that connection be down.
   */
  pollMs?: number;
  batchSize?: number;
  /** Per-publish wait for the stream's acknowledgement. */
  publishTimeoutMs?: number;
}

/**
 * Publishes outbox rows to JetStream in id order and marks them published. Rows are claimed with
 * `for update skip locked`, so several replicas share the work without publishing a row twice at
 * once; should a crash fall between publish and mark, the msgID makes JetStream drop the repeat.
 * While NATS is unreachable the rows simply wait, and the relay retries with backoff.
 */
export class OutboxRelay {
  readonly #opts: Required<Omit<RelayOptions, 'orm' | 'nats' | 'namespace' | 'logger'>> & RelayOptions;
  readonly #js: JetStreamClient;
  #stopped = false;
  #loop: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  /** A wake-up came while a round was running: the next round starts at once. */
  #kicked = false;
  #listener: PgClient | null = null;
  #relisten: ReturnType<typeof setTimeout> | undefined;

  constructor(opts: RelayOptions) {
    this.#opts = { pollMs: 500, batchSize: 100, publishTimeoutMs: 2_000, deployment: '', ...opts };
    this.#js = jetstream(opts.nats, { timeout: this.#opts.publishTimeoutMs });
  }

  start(): void {
    this.#loop ??= this.#run();
    void this.#listen();
  }

  /** Looks for events now instead of at the next poll (e.g. right after a commit). */
  kick(): void {
    this.#kicked = true;
    this.#wake?.();
  }

  /**
   * Holds one pooled connection listening on `outbox_<schema>` (see Migration000BusNotify) and
   * kicks the relay on every notification. A lost connection is replaced after a second; events
   * meanwhile wait for the poll.
   */
  async #listen(): Promise<void> {
    if (this.#stopped) return;
    const schema = this.#opts.orm.config.get('schema') as string;
    const retry = (err: unknown) => {
      this.#listener?.release(true);
      this.#listener = null;
      if (this.#stopped) return;
      this.#opts.logger.warn({ err: (err as Error | undefined)?.message }, 'outbox notifications lost; polling until they are back');
      clearTimeout(this.#relisten);
      this.#relisten = setTimeout(() => void this.#listen(), 1_000);
      this.#relisten.unref();
    };
    try {
      const client = await (await nativePool(this.#opts.orm)).connect();
      this.#listener = client;
      client.on('notification', () => this.kick());
      client.on('error', retry);
      await client.query(`listen "outbox_${schema}"`);
      if (this.#stopped) this.#closeListener();
      else this.kick(); // rows committed before we listened
    } catch (err) {
      retry(err);
    }
  }

  #closeListener(): void {
    clearTimeout(this.#relisten);
    this.#listener?.release(true);
    this.#listener = null;
  }

  /** Publishes what is pending now; resolves with the number published. Used by tests and `start`. */
  async publishPending(): Promise<number> {
    const { orm, nats, namespace, batchSize } = this.#opts;
    let total = 0;
    for (;;) {
      const published = await orm.em.fork().transactional(async (tx) => {
        const rows = await tx.execute<{ id: string; subject: string; payload: Buffer; msg_id: string; traceparent: string | null }[]>(
          `select id::text, subject, payload, msg_id, traceparent from outbox_event
            where published_at is null order by id limit ? for update skip locked`,
          [batchSize],
        );
        for (const row of rows) {
          await ensureStreamFor(nats, namespace, row.subject);
          await publishTraced(this.#js, qualify(namespace, row.subject), row.payload, row.msg_id, row.traceparent, this.#opts.deployment);
        }
        if (rows.length > 0) {
          await tx.execute(`update outbox_event set published_at = now() where id = any(string_to_array(?, ',')::bigint[])`, [
            rows.map((r) => r.id).join(','),
          ]);
        }
        return rows.length;
      });
      total += published;
      if (published < batchSize) return total;
    }
  }

  async #run(): Promise<void> {
    let backoff = 0;
    while (!this.#stopped) {
      try {
        await this.publishPending();
        backoff = 0;
      } catch (err) {
        backoff = Math.min(backoff === 0 ? 200 : backoff * 2, 5_000);
        this.#opts.logger.warn({ err: (err as Error).message, retryInMs: backoff }, 'outbox publish failed; events wait');
      }
      if (this.#stopped) break;
      if (this.#kicked && backoff === 0) {
        this.#kicked = false;
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, backoff || this.#opts.pollMs);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = null;
      this.#kicked = false;
    }
  }

  /** Stops after the current round; pending rows stay for the next start. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#closeListener();
    this.#wake?.();
    await this.#loop;
    await sleep(0);
  }
}
