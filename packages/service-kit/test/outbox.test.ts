import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { Migration } from '@mikro-orm/migrations';
import { defineEntity, p, type MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { OwnNats } from '../../../test/support/own-nats.ts';
import { connectNats, consumeDurable, createLogger, createOrm, enqueueEvent, OutboxRelay, processOnce, runMigrations, startTelemetry, type NatsConnection } from '../src/index.ts';

/** A state change to announce: a row in the test's own schema. */
const ThingSchema = defineEntity({ name: 'Thing', tableName: 'thing', properties: { id: p.text().primary(), state: p.text() } });
class Thing extends ThingSchema.class {}
ThingSchema.setClass(Thing);
class Migration001Thing extends Migration {
  override async up(): Promise<void> {
    this.addSql('create table "thing" ("id" text primary key, "state" text not null)');
  }
}

async function untilTrue(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(50);
  }
  return false;
}

describe('transactional outbox and idempotent consumer (real Postgres, real JetStream)', () => {
  const logger = createLogger('outbox-test', 'silent');
  let orm: MikroORM;
  let nats: OwnNats;
  let nc: NatsConnection;
  const ns = `t${randomBytes(4).toString('hex')}`;

  const pending = async () =>
    Number((await orm.em.fork().execute<{ n: string }[]>('select count(*)::text as n from outbox_event where published_at is null'))[0]!.n);

  beforeAll(async () => {
    orm = await createOrm({
      databaseUrl: inject('databaseUrl'),
      schema: `kit_t${randomBytes(4).toString('hex')}`,
      entities: [Thing],
      migrations: [{ name: 'Migration001Thing', class: Migration001Thing }],
    });
    await runMigrations(orm);
    nats = await OwnNats.onFreePort();
    await nats.start();
    nc = await connectNats(nats.url, 'outbox-test');
  }, 30_000);
  afterAll(async () => {
    await nc?.close();
    await nats?.stop();
    rmSync(nats.store, { recursive: true, force: true });
    await orm?.close();
  });

  it('commits a state change and its event together, or neither', async () => {
    await expect(
      orm.em.fork().transactional(async (tx) => {
        tx.create(Thing, { id: 'rolled-back', state: 'x' });
        enqueueEvent(tx, { subject: 'thing.item.changed', payload: Buffer.from('rolled-back'), msgId: 'ev-rolled-back' });
        await tx.flush();
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await orm.em.fork().transactional(async (tx) => {
      tx.create(Thing, { id: 'kept', state: 'x' });
      enqueueEvent(tx, { subject: 'thing.item.changed', payload: Buffer.from('kept'), msgId: 'ev-kept' });
      await tx.flush();
    });
    const em = orm.em.fork();
    expect(await em.count(Thing, { id: 'rolled-back' })).toBe(0);
    const events = await em.execute<{ msg_id: string }[]>('select msg_id from outbox_event order by id');
    expect(events.map((e) => e.msg_id)).toEqual(['ev-kept']);
  });

  it('keeps events while NATS is down and delivers them, once, when it is back', async () => {
    const relay = new OutboxRelay({ orm, nats: nc, namespace: ns, logger, pollMs: 50, publishTimeoutMs: 500 });
    await relay.publishPending();
    expect(await pending()).toBe(0);

    await nats.stop();
    await orm.em.fork().transactional(async (tx) => {
      tx.create(Thing, { id: 'while-down', state: 'x' });
      enqueueEvent(tx, { subject: 'thing.item.changed', payload: Buffer.from('while-down'), msgId: 'ev-while-down' });
      await tx.flush();
    });
    await expect(relay.publishPending()).rejects.toBeDefined();
    relay.start();
    await sleep(500);
    expect(await pending()).toBe(1);

    await nats.start();
    expect(await untilTrue(async () => (await pending()) === 0, 15_000)).toBe(true);
    await relay.stop();

    // The stream holds each event once, in commit order.
    const jsm = await jetstreamManager(nc);
    const stream = `${ns}_THING`;
    expect((await jsm.streams.info(stream)).state.messages).toBe(2);
    const first = await jsm.streams.getMessage(stream, { seq: 1 });
    const second = await jsm.streams.getMessage(stream, { seq: 2 });
    expect([first?.string(), second?.string()]).toEqual(['kept', 'while-down']);

    // A publisher that crashed after publishing but before marking republishes: JetStream drops it.
    await jetstream(nc).publish(`${ns}.thing.item.changed`, Buffer.from('while-down'), { msgID: 'ev-while-down' });
    expect((await jsm.streams.info(stream)).state.messages).toBe(2);
  }, 40_000);

  it('publishes a committed event at once, woken by the commit (no waiting for the poll)', async () => {
    const relay = new OutboxRelay({ orm, nats: nc, namespace: ns, logger, pollMs: 60_000 });
    await relay.publishPending();
    relay.start();
    try {
      await sleep(300); // the relay has done its first round and listens
      await orm.em.fork().transactional(async (tx) => {
        tx.create(Thing, { id: 'notified', state: 'x' });
        enqueueEvent(tx, { subject: 'thing.item.notified', payload: Buffer.from('notified'), msgId: 'ev-notified' });
        await tx.flush();
      });
      const started = Date.now();
      expect(await untilTrue(async () => (await pending()) === 0, 5_000)).toBe(true);
      expect(Date.now() - started).toBeLessThan(2_000); // the poll would have taken a minute
      const jsm = await jetstreamManager(nc);
      const msg = await jsm.streams.getMessage(`${ns}_THING`, { last_by_subj: `${ns}.thing.item.notified` });
      expect(Buffer.from(msg!.data).toString()).toBe('notified');
    } finally {
      await relay.stop();
    }
  });

  it('processes a redelivered event once', async () => {
    const seen: string[] = [];
    let failFirst = true;
    const stop = await consumeDurable({
      nats: nc,
      namespace: ns,
      durable: 'test-thing-changes',
      subject: 'thing.item.changed',
      logger,
      retryDelayMs: 100,
      handle: async (data, info) => {
        const id = Buffer.from(data).toString();
        await processOnce(orm.em.fork(), 'test-thing-changes', id, async (tx) => {
          await tx.nativeUpdate(Thing, { id }, { state: `handled:${info.deliveryCount}` });
          seen.push(id);
        });
        // Fail after the state change committed: the message comes back, and must change nothing.
        if (failFirst && id === 'kept') {
          failFirst = false;
          throw new Error('crash after commit');
        }
      },
    });
    try {
      expect(await untilTrue(async () => seen.length >= 2 && !failFirst, 10_000)).toBe(true);
      await sleep(500); // time for the nak'd redelivery to arrive and be skipped
      expect(seen.sort()).toEqual(['kept', 'while-down']);
      const kept = await orm.em.fork().findOneOrFail(Thing, { id: 'kept' });
      expect(kept.state).toBe('handled:1');
      const processed = await orm.em.fork().execute<{ n: string }[]>(`select count(*)::text as n from processed_event`);
      expect(processed[0]!.n).toBe('2');
    } finally {
      await stop();
    }
    // And directly: the same id twice runs the handler once.
    let runs = 0;
    const em = orm.em.fork();
    expect(await processOnce(em, 'direct', 'e1', async () => void runs++)).toBe(true);
    expect(await processOnce(em, 'direct', 'e1', async () => void runs++)).toBe(false);
    expect(runs).toBe(1);
  }, 30_000);

  it('carries the trace of the writing transaction through NATS to the consumer, with database spans', async () => {
    const exporter = new InMemorySpanExporter();
    const telemetry = startTelemetry({ serviceName: 'outbox-test', spanProcessors: [new SimpleSpanProcessor(exporter)] });
    try {
      const root = trace.getTracer('test').startSpan('request');
      await context.with(trace.setSpan(context.active(), root), () =>
        orm.em.fork().transactional(async (tx) => {
          tx.create(Thing, { id: 'traced', state: 'x' });
          enqueueEvent(tx, { subject: 'thing.item.traced', payload: Buffer.from('traced'), msgId: 'ev-traced' });
          await tx.flush();
        }),
      );
      root.end();
      await new OutboxRelay({ orm, nats: nc, namespace: ns, logger }).publishPending();
      const { promise: done, resolve: handled } = Promise.withResolvers<void>();
      const stop = await consumeDurable({ nats: nc, namespace: ns, durable: 'test-traced', subject: 'thing.item.traced', logger, handle: async () => handled() });
      await done;
      await stop();

      const traceId = root.spanContext().traceId;
      const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
      const publish = spans.find((s) => s.name === `publish ${ns}.thing.item.traced`);
      const processed = spans.find((s) => s.name === `process ${ns}.thing.item.traced`);
      expect(publish?.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
      expect(processed?.parentSpanContext?.spanId).toBe(publish?.spanContext().spanId);
      // The transaction's statements are spans of the same trace, without their text.
      const insert = spans.find((s) => s.name.startsWith('INSERT '));
      expect(insert?.attributes).toMatchObject({ 'db.system.name': 'postgresql', 'db.operation.name': 'INSERT' });
      expect(JSON.stringify(insert?.attributes)).not.toContain('traced');
    } finally {
      await telemetry.shutdown();
    }
  });
});
