import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { qualify, streamFor } from './subjects.ts';

export type { NatsConnection, Subscription } from '@nats-io/transport-node';

/** Events older than this are dropped from a stream; consumers are far faster than that. */
const STREAM_MAX_AGE_NS = 7 * 24 * 3600 * 1e9;
/** Publishes with the same msgID inside this window are stored once. */
const DUPLICATE_WINDOW_NS = 2 * 60 * 1e9;

export interface NatsOptions {
  /** Called after every reconnect: broadcast subscribers missed what was sent meanwhile. */
  onReconnect?: () => void;
  logger?: Logger;
}

/** Connects with endless reconnects; a service keeps working (and its outbox keeps events) while NATS is away. */
export async function connectNats(url: string, name: string, opts: NatsOptions = {}): Promise<NatsConnection> {
  const nc = await connect({
    servers: url.split(','),
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: true,
  });
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'reconnect') {
        opts.logger?.info('nats reconnected');
        opts.onReconnect?.();
      } else if (s.type === 'disconnect') {
        opts.logger?.warn('nats disconnected');
      }
    }
  })();
  return nc;
}

/**
 * A core-NATS subscription: every replica gets every message (no queue group, no ack). Used for
 * cache invalidation, where a missed message is covered by a reload on reconnect.
 */
export function subscribeBroadcast(
  nc: NatsConnection,
  namespace: string,
  subject: string,
  handle: (data: Uint8Array) => void,
  logger?: Logger,
): Subscription {
  return nc.subscribe(qualify(namespace, subject), {
    callback: (err, msg) => {
      if (err) {
        logger?.warn({ err, subject }, 'subscription error');
        return;
      }
      try {
        handle(msg.data);
      } catch (e) {
        logger?.warn({ err: e, subject }, 'event handler failed');
      }
    },
  });
}

const ensured = new WeakMap<NatsConnection, Set<string>>();

/** Creates (or keeps) the stream of a subject's domain. Idempotent and cached per connection. */
export async function ensureStreamFor(nc: NatsConnection, namespace: string, subject: string, jsm?: JetStreamManager): Promise<string> {
  const stream = streamFor(namespace, subject);
  const done = ensured.get(nc) ?? new Set<string>();
  ensured.set(nc, done);
  if (done.has(stream.name)) return stream.name;
  const manager = jsm ?? (await jetstreamManager(nc));
  try {
    await manager.streams.info(stream.name);
  } catch {
    try {
      await manager.streams.add({ name: stream.name, subjects: stream.subjects, max_age: STREAM_MAX_AGE_NS, duplicate_window: DUPLICATE_WINDOW_NS });
    } catch (err) {
      // Another replica may have created it between our two calls.
      await manager.streams.info(stream.name).catch(() => {
        throw err;
      });
    }
  }
  done.add(stream.name);
  return stream.name;
}
