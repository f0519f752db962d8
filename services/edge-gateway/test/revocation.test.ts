import { connectNats, type NatsConnection } from '@gw/service-kit';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OwnNats } from '../../../test/support/own-nats.ts';
import { watchInvalidationFeed } from '../src/auth/invalidation-feed.ts';
import { bearer, fakeGateway, type FakeGateway } from './support/fake-gateway.ts';

/** Every route a key can use, the free ones included (issue 20 finding 2 names them). */
const ROUTES = [
  { method: 'GET', url: '/v1/models' },
  { method: 'GET', url: '/v1/videos/generations/vidjob_00000000000000000000000000000000' },
  { method: 'GET', url: '/v1/videos/generations/vidjob_00000000000000000000000000000000/content' },
  { method: 'GET', url: '/v1/images/jobs/imgjob_00000000000000000000000000000000' },
  { method: 'POST', url: '/v1/messages/count_tokens', payload: { model: 'm', messages: [{ role: 'user', content: 'hi' }] } },
  { method: 'POST', url: '/v1/chat/completions', payload: { model: 'm', messages: [{ role: 'user', content: 'hi' }] } },
] as const;

async function codes(gw: FakeGateway, key: string): Promise<string[]> {
  const out: string[] = [];
  for (const r of ROUTES) {
    const res = await gw.app.inject({ method: r.method, url: r.url, headers: bearer(key), ...('payload' in r ? { payload: r.payload } : {}) });
    out.push(res.statusCode === 200 ? 'ok' : res.json().error.code);
  }
  return out;
}

const until = async (what: () => boolean, ms: number) => {
  const end = Date.now() + ms;
  while (!what() && Date.now() < end) await sleep(20);
  return what();
};

describe('revocation fails closed while NATS is away (issue 20 finding 2)', () => {
  let own: OwnNats;
  let nc: NatsConnection;
  let gw: FakeGateway;
  let stopWatch: () => void;
  beforeAll(async () => {
    own = await OwnNats.onFreePort();
    await own.start();
    gw = await fakeGateway();
    nc = await connectNats(own.url, 'edge-gateway-test');
    stopWatch = watchInvalidationFeed(nc, (healthy) => gw.deps.keys.setFeedHealthy(healthy), { probeMs: 100, timeoutMs: 300 });
  });
  afterAll(async () => {
    stopWatch();
    await nc.close();
    await own.stop();
    await gw.app.close();
  });

  it('a key revoked while NATS is down fails on every route within 2 s; with NATS up the cache serves it', async () => {
    expect(await until(() => gw.deps.keys.feedHealthy, 5_000)).toBe(true);
    expect((await codes(gw, gw.keys.a)).filter((c) => c.startsWith('auth_'))).toEqual([]);
    const lookups = gw.lookups();
    await sleep(1_100);
    await codes(gw, gw.keys.a);
    expect(gw.lookups()).toBe(lookups); // healthy feed: cached (a revocation event would drop it)

    await own.stop();
    expect(await until(() => !gw.deps.keys.feedHealthy, 2_000)).toBe(true);
    gw.records.get(gw.keys.a)!.revokedAtMs = Date.now(); // revoked in billing; no event can arrive
    const revokedAt = Date.now();
    let seen: string[] = [];
    // Tried until 2 s after the revocation: by then every route must refuse it.
    while (Date.now() - revokedAt < 2_000) {
      seen = await codes(gw, gw.keys.a);
      if (seen.every((c) => c === 'auth_revoked')) break;
      await sleep(50);
    }
    expect(seen).toEqual(ROUTES.map(() => 'auth_revoked'));
    // Another account's key keeps working through billing, re-checked every second.
    expect((await codes(gw, gw.keys.b)).filter((c) => c.startsWith('auth_'))).toEqual([]);

    await own.start();
    expect(await until(() => gw.deps.keys.feedHealthy, 10_000)).toBe(true);
  });
});
