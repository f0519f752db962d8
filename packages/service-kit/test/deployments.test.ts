import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectNats, consumeDurable, createLogger, createOrm, durableName, enqueueEvent, OutboxRelay, runMigrations, type NatsConnection } from '../src/index.ts';

/**
 * Two deployments on one NATS server under the same EVENTS_NAMESPACE (the collision of a shared
 * default): each has its own database and DEPLOYMENT_ID. Each consumer must get exactly its own
 * deployment's events: none acknowledged away by the other.
 */
describe('deployments sharing a NATS server and a namespace', () => {
  const logger = createLogger('deployments-test', 'silent');
  const ns = `${inject('eventsNamespace')}_d${randomBytes(3).toString('hex')}`;
  const names = ['east', 'west'] as const;
  const orms = new Map<string, MikroORM>();
  let nc: NatsConnection;

  beforeAll(async () => {
    nc = await connectNats(inject('natsUrl'), 'deployments-test');
    for (const name of names) {
      const orm = await createOrm({ databaseUrl: inject('databaseUrl'), schema: `kit_${name}_${randomBytes(3).toString('hex')}`, entities: [], migrations: [] });
      await runMigrations(orm);
      orms.set(name, orm);
    }
  }, 30_000);
  afterAll(async () => {
    for (const orm of orms.values()) await orm.close();
    await nc?.close();
  });

  it("gives each deployment's consumer its own events only, through a durable of its own", async () => {
    const got = new Map<string, string[]>(names.map((n) => [n, []]));
    const stops: Array<() => Promise<void>> = [];
    for (const name of names) {
      stops.push(
        await consumeDurable({
          nats: nc,
          namespace: ns,
          // The same durable name in both, as two installs of one service would have.
          durable: 'billing-video-refunds',
          subject: 'video.job.failed',
          deployment: `db-${name}`,
          logger,
          handle: async (data) => void got.get(name)!.push(Buffer.from(data).toString()),
        }),
      );
    }
    try {
      for (const name of names) {
        const orm = orms.get(name)!;
        await orm.em.fork().transactional(async (tx) => {
          for (let i = 0; i < 10; i++) enqueueEvent(tx, { subject: 'video.job.failed', payload: Buffer.from(`${name}-${i}`), msgId: `${name}-${i}` });
        });
        await new OutboxRelay({ orm, nats: nc, namespace: ns, deployment: `db-${name}`, logger }).publishPending();
      }
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && [...got.values()].some((list) => list.length < 10)) await sleep(50);
      await sleep(300); // anything else that would arrive
      for (const name of names) {
        expect(got.get(name)!.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `${name}-${i}`).sort());
      }
      // Each deployment reads through a durable of its own on the shared stream.
      const jsm = await jetstreamManager(nc);
      const durables: string[] = [];
      for await (const c of jsm.consumers.list(`${ns}_VIDEO`)) durables.push(c.name);
      expect(durables.sort()).toEqual([durableName('billing-video-refunds', 'db-east'), durableName('billing-video-refunds', 'db-west')].sort());
      expect(new Set(durables).size).toBe(2);
    } finally {
      for (const stop of stops) await stop();
    }
  }, 30_000);
});
