import { consumeDurable, processOnce, type NatsConnection } from '@gw/service-kit';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';

export interface SubscriberDeps {
  orm: MikroORM;
  nats: NatsConnection;
  namespace: string;
  logger: Logger;
  now: () => Date;
}

/**
 * A durable consumer of `subject` that handles each event exactly once: the event id is recorded
 * in the same transaction as the handler's work, so a redelivered event changes nothing. Returns
 * the stop function.
 */
export function handleEachEventOnce<E extends { eventId: string }>(
  deps: SubscriberDeps,
  opts: { durable: string; subject: string; decode: (data: Uint8Array) => E; handle: (tx: EntityManager, event: E) => Promise<void> },
): Promise<() => Promise<void>> {
  return consumeDurable({
    nats: deps.nats,
    namespace: deps.namespace,
    durable: opts.durable,
    subject: opts.subject,
    logger: deps.logger,
    handle: async (data) => {
      const event = opts.decode(data);
      await processOnce(deps.orm.em.fork(), opts.durable, event.eventId, (tx) => opts.handle(tx, event));
    },
  });
}
