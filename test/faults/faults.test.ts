import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSystem, type RunningSystem, type ServiceName } from '../../scripts/system.ts';
import { balanceOf, seedDemoModels, waitForListing } from '../support/clients.ts';
import { freePort, OwnNats } from '../support/own-nats.ts';
import { admin, fundedAccount } from '../support/system-fixture.ts';
import { embeddedPostgresReachable, keyedImageTraffic, kill9, openHolds, ownPostgres, paidTraffic, query } from './support.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The fault suite: one whole system on a NATS server and a PostgreSQL server of the test's own,
// under concurrent paid traffic, while each service is killed with -9 (and started again by the
// test), NATS is restarted and PostgreSQL is restarted. Then: every answered request is charged
// exactly what it said, once; nothing is charged that was not answered, beyond the requests
// whose answer died with the gateway; every orphan (open hold) is resolved within 2 minutes of
// the last fault; the wallet equals funding less charges and the ledger audit is clean.
// Short hold leases make orphans resolve in about a minute (the owner renews every 20 s).

const HOLD_LEASE_MS = 45_000;
const SERVICES: ServiceName[] = ['billing', 'catalog', 'text', 'media', 'video-jobs', 'edge-gateway'];

let system: RunningSystem;
let nats: OwnNats;
let pg: Awaited<ReturnType<typeof ownPostgres>>;

// The suite restarts a PostgreSQL of its own; where one cannot start here, it says why and skips.
const cannotStartPostgres = embeddedPostgresReachable();
if (cannotStartPostgres) process.stderr.write(`fault suite skipped: ${cannotStartPostgres}\n`);

beforeAll(async () => {
  if (cannotStartPostgres) return;
  pg = await ownPostgres(await freePort());
  nats = await OwnNats.onFreePort();
  await nats.start();
  system = await startSystem({
    databaseUrl: pg.url,
    natsUrl: nats.url,
    eventsNamespace: 'faults',
    gatewayPort: 0,
    internalPorts: 'random',
    logs: mkdtempSync(join(tmpdir(), 'gw-faults-logs-')),
    serviceEnv: {
      billing: { HOLD_LEASE_MS: String(HOLD_LEASE_MS), HOLD_SWEEP_INTERVAL_MS: '5000' },
      // An Idempotency-Key claim whose media process died is taken over after its lease.
      media: { IMAGE_CLAIM_LEASE_MS: '20000' },
    },
  });
  await seedDemoModels(system);
}, 180_000);

afterAll(async () => {
  await system?.stop();
  await nats?.stop();
  await pg?.remove();
}, 120_000);

interface Fault {
  name: string;
  at: number;
  /** `status code` of each failure, counted. */
  failures?: Record<string, number>;
  /** The first answered (200) request sent after the fault. */
  recoveredMs?: number;
  failed?: number;
}

describe.skipIf(cannotStartPostgres !== undefined)('fault suite', () => {
  it('kill -9 of every service, a NATS restart and a PostgreSQL restart under paid traffic: nothing answered is lost or charged twice, orphans resolved within 2 minutes, the audit holds', async () => {
    const funded = 100_000_000;
    const { apiKey, accountId } = await fundedAccount(system, funded);
    await admin(system, 'account', 'rate-limit', 'set', '--account', accountId, '--per-second', '100000', '--per-minute', '10000000');
    await waitForListing(system, apiKey, ['gpt-sim-mini', 'gpt-sim-one-image']);

    const traffic = paidTraffic(() => [system.baseUrl], apiKey, 6);
    const images = keyedImageTraffic(() => system.baseUrl, apiKey, 2);
    const faults: Fault[] = [];
    await sleep(2_000);
    for (const name of SERVICES) {
      faults.push({ name: `${name} killed (-9)`, at: Date.now() });
      await kill9(system.services.get(name)!.child);
      await system.restartService(name);
      await sleep(3_000);
    }
    faults.push({ name: 'NATS restarted', at: Date.now() });
    await nats.stop();
    await sleep(3_000);
    await nats.start();
    await sleep(4_000);
    faults.push({ name: 'PostgreSQL restarted', at: Date.now() });
    await pg.stop();
    await sleep(3_000);
    await pg.start();
    await sleep(8_000);
    const lastFault = faults.at(-1)!.at;
    await Promise.all([traffic.stop(), images.stop()]);
    const { outcomes } = traffic;

    // Images with an Idempotency-Key, retried as documented: each key answered, or its job found
    // finished (the answer was lost), within 2 minutes; never stuck behind a dead claim.
    const keyed = images.outcomes;
    expect(keyed.length).toBeGreaterThan(5);
    expect(keyed.filter((k) => k.end === 'stuck')).toEqual([]);
    expect(Math.max(...keyed.map((k) => k.ms))).toBeLessThan(120_000);

    // Each fault: requests that failed while it lasted (by when their answer came: a request in
    // flight at the fault fails then), and how soon one was answered after it.
    for (const [i, f] of faults.entries()) {
      const until = faults[i + 1]?.at ?? Infinity;
      const endedDuring = outcomes.filter((o) => o.startedAt + o.ms >= f.at && o.startedAt + o.ms < until);
      const failures = endedDuring.filter((o) => o.status !== 200);
      f.failed = failures.length;
      f.failures = {};
      for (const o of failures) f.failures[`${o.status} ${o.code ?? ''}`.trim()] = (f.failures[`${o.status} ${o.code ?? ''}`.trim()] ?? 0) + 1;
      const served = outcomes.filter((o) => o.status === 200 && o.startedAt >= f.at && o.startedAt < until).map((o) => o.startedAt + o.ms - f.at);
      if (served.length > 0) f.recoveredMs = Math.min(...served);
    }
    const answered = [...outcomes.filter((o) => o.status === 200), ...keyed.filter((k) => k.end === 'answered')];
    const unanswered = outcomes.filter((o) => o.status === 0);

    // Orphans (holds of requests whose gateway or answer died) are resolved within 2 minutes.
    const orphanWaitStart = Date.now();
    let open = await openHolds(system);
    while (open > 0 && Date.now() - lastFault < 120_000) {
      await sleep(1_000);
      open = await openHolds(system);
    }
    const waitedAfterTrafficMs = Date.now() - orphanWaitStart;
    expect(open).toBe(0);
    // How long each hold stayed open (created to settled or released): an orphan's is the time to resolve it.
    const answeredIds = new Set(answered.map((o) => o.requestId));
    const lifetimes = await query<{ request_id: string; open_ms: string }>(
      system,
      `select request_id, round(extract(epoch from coalesce(settled_at, now()) - created_at) * 1000)::bigint as open_ms from billing.hold`,
    );
    const orphans = lifetimes.filter((h) => !answeredIds.has(h.request_id));
    const longestOrphanMs = Math.max(0, ...orphans.map((h) => Number(h.open_ms)));
    process.stdout.write(
      `fault suite: ${JSON.stringify({ requests: outcomes.length, imageKeys: keyed.length, imageKeysRetried: keyed.filter((k) => k.statuses.length > 1).length, imageKeysFinishedElsewhere: keyed.filter((k) => k.end === 'finished').length, longestImageKeyMs: Math.max(...keyed.map((k) => k.ms)), answered: answered.length, unanswered: unanswered.length, orphans: orphans.length, longestOrphanMs, longestHoldMs: Math.max(...lifetimes.map((h) => Number(h.open_ms))), waitedAfterTrafficMs, faults: faults.map((f) => ({ ...f, at: undefined })) })}\n`,
    );
    expect(Math.max(...lifetimes.map((h) => Number(h.open_ms)))).toBeLessThan(120_000);

    expect(answered.length).toBeGreaterThan(50);
    // Every failure is a documented answer (or the gateway itself gone) and charged nothing.
    for (const o of outcomes.filter((x) => x.status !== 200)) expect([0, 429, 500, 502, 503, 504]).toContain(o.status);
    expect(outcomes.filter((x) => x.status !== 200 && x.charged !== 0)).toEqual([]);

    // Every answered request: its one hold settled at exactly the charge it answered.
    const holds = new Map(
      (await query<{ request_id: string; status: string; charged: string | null; refunded: string; endpoint: string }>(system, `select request_id, status, charged, refunded, endpoint from billing.hold`)).map((h) => [h.request_id, h]),
    );
    // Each Idempotency-Key ran (and was charged) at most once, however often it was sent.
    const imageCharges = [...holds.values()].filter((h) => h.endpoint.startsWith('images/') && h.status === 'settled' && Number(h.charged) - Number(h.refunded) > 0);
    expect(imageCharges.length).toBeLessThanOrEqual(keyed.length);
    const mismatched = answered.filter((o) => {
      const h = holds.get(o.requestId);
      return !h || h.status !== 'settled' || Number(h.charged) !== o.charged;
    });
    expect(mismatched).toEqual([]);
    // Charged without an answer: only requests whose answer died with the gateway.
    const chargedUnanswered = [...holds.values()].filter((h) => !answeredIds.has(h.request_id) && h.status === 'settled' && Number(h.charged) - Number(h.refunded) > 0);
    const imageAnswersLost = keyed.reduce((sum, k) => sum + k.statuses.filter((x) => x === 0).length, 0) + keyed.filter((k) => k.end === 'finished').length;
    expect(chargedUnanswered.length).toBeLessThanOrEqual(unanswered.length + imageAnswersLost);

    // The wallet: funding less every charge, nothing held; the ledger audit is clean.
    const charges = [...holds.values()].reduce((sum, h) => sum + (h.status === 'settled' ? Number(h.charged) - Number(h.refunded) : 0), 0);
    expect(await balanceOf(system, accountId)).toBe(funded - charges);
    expect(charges - answered.reduce((sum, o) => sum + o.charged, 0)).toBe(chargedUnanswered.reduce((sum, h) => sum + Number(h.charged) - Number(h.refunded), 0));
    expect(await admin(system, 'ledger', 'audit')).toMatchObject({ ok: true, problems: [] });
  }, 420_000);
});
