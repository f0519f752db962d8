import { defineEntity, p } from '@mikro-orm/postgresql';

/** An event waiting for (or done with) publication; written in the transaction of its change. */
const OutboxEventSchema = defineEntity({
  name: 'OutboxEvent',
  tableName: 'outbox_event',
  properties: {
    id: p.bigint().primary().autoincrement(),
    subject: p.text(),
    payload: p.blob(),
    msgId: p.text().unique(),
    createdAt: p.datetime().onCreate(() => new Date()),
    publishedAt: p.datetime().nullable(),
    /** W3C trace context of the transaction that wrote the event. */
    traceparent: p.text().nullable(),
  },
});
export class OutboxEvent extends OutboxEventSchema.class {}
OutboxEventSchema.setClass(OutboxEvent);

export const kitEntities = [OutboxEvent];
