import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { billingV1, createClient, type RpcError } from '@gw/contracts';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { inject } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { balanceOf, seedDemoModels, waitForListing } from '../support/clients.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';
import { freePort } from '../support/own-nats.ts';
import { kill9, openHolds, paidTraffic, startReplica, type Replica } from './support.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Replicas as a cluster runs them, without a balancer in front: three billing replicas, two text
// replicas and two gateways, each gateway given every replica's address (a list of IPs here; one
// headless Service name in a cluster) and balancing its calls round-robin. Under paid traffic one
// billing replica is killed with -9 and another hung (SIGSTOP: its connections stay open and
// nothing is answered). Billing's calls are idempotent and go again to a live replica once
// keepalive gives the dead or hung one up (about 2 s), so no request fails; every hold is
// resolved, the wallet moves by exactly what the answers say, and the ledger audit holds.

let system: RunningSystem;
const token = `replica-test-token-${randomBytes(8).toString('hex')}`;
let savedToken: string | undefined;
const replicas: Replica[] = [];
let gateways: string[] = [];
/** The billing replicas: their process and Prometheus port. */
let billing: Array<{ child: ChildProcess; address: string; metrics: number }> = [];

/** Credits a billing replica has charged since it started (its Prometheus counter). */
async function chargedBy(metrics: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metrics}/metrics`)).text();
  return [...text.matchAll(/^billing_credits_charged\S* (\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

/** The replica charging most right now (over one second): the one the gateways' money streams are on. */
async function busiest(candidates: typeof billing): Promise<(typeof billing)[number]> {
  const before = await Promise.all(candidates.map((c) => chargedBy(c.metrics)));
  await sleep(1_000);
  const after = await Promise.all(candidates.map((c) => chargedBy(c.metrics)));
  const deltas = after.map((a, i) => a - before[i]!);
  expect(Math.max(...deltas)).toBeGreaterThan(0);
  return candidates[deltas.indexOf(Math.max(...deltas))]!;
}

beforeAll(async () => {
  const namespace = `${inject('eventsNamespace')}_r${randomBytes(3).toString('hex')}`;
  const natsUrl = inject('natsUrl');
  const billingEnv = { HOLD_LEASE_MS: '30000', HOLD_SWEEP_INTERVAL_MS: '3000', SERVICE_TOKEN: token };
  const ports = [await freePort(), await freePort(), await freePort()];
  // The shared service token on, as the chart has it: every process, and this test's own clients.
  savedToken = process.env.SERVICE_TOKEN;
  process.env.SERVICE_TOKEN = token;
  system = await startTestSystem({ eventsNamespace: namespace, env: { SERVICE_TOKEN: token }, serviceEnv: { billing: { ...billingEnv, METRICS_PORT: String(ports[0]) } } });
  await seedDemoModels(system);
  const more = (name: 'billing' | 'text', env: Record<string, string> = {}) => startReplica(system, name, { natsUrl, namespace, env: { SERVICE_TOKEN: token, ...env } });
  const [b2, b3, t2] = await Promise.all([
    more('billing', { ...billingEnv, METRICS_PORT: String(ports[1]) }),
    more('billing', { ...billingEnv, METRICS_PORT: String(ports[2]) }),
    more('text'),
  ]);
  replicas.push(b2, b3, t2);
  billing = [{ child: system.services.get('billing')!.child, address: system.billingAddr, metrics: ports[0]! }, ...[b2, b3].map((b, i) => ({ child: b.child, address: b.address, metrics: ports[i + 1]! }))];
  const edgeEnv = {
    BILLING_ADDR: [system.billingAddr, b2.address, b3.address].join(','),
    TEXT_ADDR: [system.textAddr, t2.address].join(','),
    CATALOG_ADDR: system.catalogAddr,
    MEDIA_ADDR: system.mediaAddr,
    VIDEO_JOBS_ADDR: system.videoJobsAddr,
    SERVICE_TOKEN: token,
  };
  const edges = await Promise.all([0, 1].map(() => startReplica(system, 'edge-gateway', { natsUrl, namespace, env: edgeEnv })));
  replicas.push(...edges);
  gateways = edges.map((e) => e.address);
}, 180_000);

afterAll(async () => {
  for (const b of billing) if (b.child.exitCode === null && b.child.signalCode === null) b.child.kill('SIGCONT');
  for (const r of replicas) await r.stop();
  await system?.stop();
  if (savedToken === undefined) delete process.env.SERVICE_TOKEN;
  else process.env.SERVICE_TOKEN = savedToken;
}, 60_000);

describe('replicas without a balancer', () => {
  it('one billing killed (-9) and one hung (SIGSTOP) under paid traffic: no request fails, each is charged once, every hold is resolved, the audit holds (service token on)', async () => {
    const funded = 100_000_000;
    const { apiKey, accountId } = await fundedAccount(system, funded);
    await admin(system, 'account', 'rate-limit', 'set', '--account', accountId, '--per-second', '100000', '--per-minute', '10000000');
    for (const g of gateways) await waitForListing({ ...system, baseUrl: g }, apiKey, ['gpt-sim-mini']);

    const traffic = paidTraffic(() => gateways, apiKey, 8);
    await sleep(2_000);
    // The replica the money streams are on is the one that fails, so the fault is felt.
    const killed = await busiest(billing);
    const killedAt = Date.now();
    await kill9(killed.child);
    await sleep(4_000);
    const hung = await busiest(billing.filter((b) => b !== killed));
    const live = billing.find((b) => b !== killed && b !== hung)!;
    const hungAt = Date.now();
    hung.child.kill('SIGSTOP');
    await sleep(6_000);
    await traffic.stop();
    const { outcomes } = traffic;

    const byWindow = (from: number, to: number) => outcomes.filter((o) => o.startedAt >= from && o.startedAt < to);
    const slowest = (list: typeof outcomes) => Math.max(0, ...list.map((o) => o.ms));
    const figures = {
      requests: outcomes.length,
      failed: outcomes.filter((o) => o.status !== 200).length,
      slowestAfterKillMs: slowest(byWindow(killedAt - 500, hungAt - 1_000)),
      slowestAfterHangMs: slowest(byWindow(hungAt - 500, Date.now())),
      servedAfterHang: byWindow(hungAt + 3_000, Date.now()).filter((o) => o.status === 200).length,
    };
    process.stdout.write(`replica faults: ${JSON.stringify(figures)}\n`);

    // Idempotent money calls go again to a live replica: nothing fails, not even what was in flight.
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    // Traffic kept flowing through both gateways after both faults.
    expect(figures.servedAfterHang).toBeGreaterThan(10);
    expect(new Set(byWindow(hungAt + 3_000, Date.now()).map((o) => o.via))).toEqual(new Set(gateways));

    const charged = outcomes.reduce((sum, o) => sum + o.charged, 0);
    expect(charged).toBeGreaterThan(0);
    // The hung replica comes back (as a paused pod would) before the books are checked.
    hung.child.kill('SIGCONT');
    await vi.waitFor(async () => expect(await openHolds(system)).toBe(0), { timeout: 120_000, interval: 1_000 });
    expect(await balanceOf({ ...system, billingAddr: live.address }, accountId)).toBe(funded - charged);
    expect(await admin({ ...system, billingAddr: live.address }, 'ledger', 'audit')).toMatchObject({ ok: true, problems: [] });

    // The whole system ran with the service token; a call without it is refused.
    const stranger = createClient(billingV1.AccountService, live.address, { token: '' });
    try {
      const refused = await stranger.getWallet({ accountId }).catch((e: unknown) => e);
      expect((refused as RpcError).grpcCode).toBe(status.UNAUTHENTICATED);
    } finally {
      stranger.close();
    }
  }, 240_000);
});
