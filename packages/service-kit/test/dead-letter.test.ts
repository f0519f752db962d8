import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectNats, consumeDurable, createLogger, type NatsConnection } from '../src/index.ts';
import { startTelemetry, type Telemetry } from '../src/telemetry.ts';
import { createServer } from 'node:net';
import { DEAD_LETTER_HEADERS, deadLetterSubject, durableName } from '../src/bus/consumer.ts';
import { ensureStreamFor } from '../src/bus/nats.ts';
import { qualify, streamFor } from '../src/bus/subjects.ts';

// Poison events: a handler that throws on every delivery. The consumer gives the event up after a
// bounded number of deliveries and moves it, with where it came from and why, to the dead-letter
// subject operators read; it is acknowledged, so it no longer comes back.
describe('a durable consumer and a poison event', () => {
  const logger = createLogger('dead-letter-test', 'silent');
  let nc: NatsConnection;
  let ns = '';
  let telemetry: Telemetry;
  let metricsPort = 0;

  beforeAll(async () => {
    metricsPort = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    telemetry = startTelemetry({ serviceName: 'dead-letter-test', metricsPort });
    nc = await connectNats(inject('natsUrl'), 'dead-letter-test');
  });
  afterAll(async () => {
    await nc?.close();
    await telemetry?.shutdown();
  });

  /** Publishes one event on `subject` of the test's namespace. */
  async function publish(subject: string, body: string, id: string): Promise<void> {
    await ensureStreamFor(nc, ns, subject);
    await jetstream(nc).publish(qualify(ns, subject), Buffer.from(body), { msgID: id });
  }

  /** The events on a durable's dead-letter subject. */
  async function deadLetters(durable: string): Promise<Array<{ data: string; headers: Record<string, string> }>> {
    const stream = streamFor(ns, deadLetterSubject(durable)).name;
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(stream).catch(() => undefined);
    const out: Array<{ data: string; headers: Record<string, string> }> = [];
    if (!info || info.state.messages === 0) return out;
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(stream, { seq });
      if (!m) continue;
      const headers: Record<string, string> = {};
      for (const [k, v] of m.header ?? []) headers[k] = v[0]!;
      out.push({ data: Buffer.from(m.data).toString(), headers });
    }
    return out;
  }

  it('is given up after maxDeliveries and moved, with its origin and the error, to the dead-letter subject; the others are handled', async () => {
    ns = `${inject('eventsNamespace')}_dl${randomBytes(3).toString('hex')}`;
    const attempts = new Map<string, number>();
    const handled: string[] = [];
    const stop = await consumeDurable({
      nats: nc,
      namespace: ns,
      durable: 'test-poison',
      subject: 'video.job.failed',
      logger,
      maxDeliveries: 3,
      retryDelayMs: 20,
      handle: async (data) => {
        const body = Buffer.from(data).toString();
        attempts.set(body, (attempts.get(body) ?? 0) + 1);
        if (body === 'poison') throw new Error('cannot read this event\nat line 2');
        // Fails once, then succeeds: a transient failure is retried, not dead-lettered.
        if (body === 'flaky' && attempts.get(body) === 1) throw new Error('database busy');
        handled.push(body);
      },
    });
    try {
      await publish('video.job.failed', 'good', 'e-good');
      await publish('video.job.failed', 'poison', 'e-poison');
      await publish('video.job.failed', 'flaky', 'e-flaky');
      const deadline = Date.now() + 15_000;
      while (Date.now() < deadline && (await deadLetters('test-poison')).length === 0) await sleep(100);
      await sleep(500); // a fourth delivery would come within this

      expect(attempts.get('poison')).toBe(3);
      expect(handled.sort()).toEqual(['flaky', 'good']);
      const dead = await deadLetters('test-poison');
      expect(dead).toHaveLength(1);
      expect(dead[0]!.data).toBe('poison');
      expect(dead[0]!.headers).toMatchObject({
        [DEAD_LETTER_HEADERS.subject]: qualify(ns, 'video.job.failed'),
        [DEAD_LETTER_HEADERS.stream]: `${ns}_VIDEO`,
        [DEAD_LETTER_HEADERS.consumer]: 'test-poison',
        [DEAD_LETTER_HEADERS.deliveries]: '3',
        [DEAD_LETTER_HEADERS.error]: 'Error: cannot read this event at line 2',
      });
      // Nothing is left waiting on the consumer: the poison is acknowledged away from it.
      const info = await (await jetstreamManager(nc)).consumers.info(`${ns}_VIDEO`, durableName('test-poison', process.env.DEPLOYMENT_ID ?? ''));
      expect({ pending: info.num_pending, unacknowledged: info.num_ack_pending }).toEqual({ pending: 0, unacknowledged: 0 });
      expect(info.config.max_deliver).toBe(4); // the server's bound, one past the consumer's own
      // Counted for dashboards and alerts.
      const scraped = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(scraped).toMatch(/^events_dead_lettered_total\{[^}]*messaging_consumer_group_name="test-poison"[^}]*\} 1$/m);
    } finally {
      await stop();
    }
  }, 30_000);

  it('a durable made before the bound gets it when its consumer starts', async () => {
    ns = `${inject('eventsNamespace')}_dl${randomBytes(3).toString('hex')}`;
    const stream = await ensureStreamFor(nc, ns, 'video.job.failed');
    const jsm = await jetstreamManager(nc);
    await jsm.consumers.add(stream, { durable_name: 'test-old', ack_policy: 'explicit' as never, filter_subject: qualify(ns, 'video.job.failed') });
    expect((await jsm.consumers.info(stream, 'test-old')).config.max_deliver).toBe(-1);
    const stop = await consumeDurable({ nats: nc, namespace: ns, durable: 'test-old', subject: 'video.job.failed', deployment: '', logger, maxDeliveries: 7, handle: async () => {} });
    await stop();
    expect((await jsm.consumers.info(stream, 'test-old')).config.max_deliver).toBe(8);
  });
});
