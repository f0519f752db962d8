import { randomUUID } from 'node:crypto';
import { billingV1, createClient, RpcError, type MethodsOf, type ServiceClient } from '@gw/contracts';
import { createMoneyExchange, type MoneyCalls } from '../../services/edge-gateway/src/generation/billing-exchange.ts';
import { GatewayError } from '@gw/errors';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunningSystem, ServiceName } from '../../scripts/system.ts';
import { holdCredits, releaseHold, settleHold, type HoldSpec, type SettleCalls } from '../../services/edge-gateway/src/generation/metering.ts';
import type { ResolvedModel } from '../../services/edge-gateway/src/state/catalog-cache.ts';
import type { KeyRecord } from '../../services/edge-gateway/src/auth/key-cache.ts';
import { balanceOf, waitForListing, seedDemoModels } from '../support/clients.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Outcome {
  status: number;
  charged: number;
  code?: string;
}

// One running system for both kinds of fault: services restarted, and answers lost on the way.
let system: RunningSystem;

beforeAll(async () => {
  system = await startTestSystem();
  await seedDemoModels(system);
}, 120_000);
afterAll(() => system?.stop());

/**
 * Six clients send chat requests until told to stop, while `name` is stopped (SIGTERM, or
 * SIGKILL: a crash) and started again.
 */
async function restartUnderLoad(name: ServiceName, how: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<{ outcomes: Outcome[]; accountId: string; funded: number }> {
  const funded = 10_000_000;
  const { apiKey, accountId } = await fundedAccount(system, funded);
  await admin(system, 'account', 'rate-limit', 'set', '--account', accountId, '--per-second', '100000', '--per-minute', '10000000');
  await waitForListing(system, apiKey, ['gpt-sim-mini']);
  const outcomes: Outcome[] = [];
  const running = { stop: false };
  const client = async () => {
    while (!running.stop) {
      const res = await fetch(`${system.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-sim-mini', max_tokens: 16, messages: [{ role: 'user', content: `through a restart of ${name}` }] }),
      });
      const body = (await res.json()) as { service?: { credit_charged: number }; error?: { code: string } };
      outcomes.push({ status: res.status, charged: body.service?.credit_charged ?? 0, ...(body.error ? { code: body.error.code } : {}) });
    }
  };
  const clients = Array.from({ length: 6 }, client);
  await sleep(500);
  const before = outcomes.length;
  if (how === 'SIGTERM') await system.stopService(name);
  else {
    const child = system.services.get(name)!.child;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
  await system.restartService(name);
  await sleep(700);
  running.stop = true;
  await Promise.all(clients);
  expect(outcomes.length).toBeGreaterThan(before); // requests flowed across the restart
  return { outcomes, accountId, funded };
}

// A rolling update of billing or text while clients keep sending: the gateway reaches both over
// long-lived exchange streams. The service shutting down answers what it took and refuses the
// rest, which the gateway sends to its successor, so every request is served and billed exactly
// once: the wallet moves by exactly what the answers say and the ledger audit stays clean.
describe('rolling restarts of billing and text under load', () => {
  for (const name of ['billing', 'text'] as const) {
    it(`${name}: every request is served, charged once, and the wallet moves by exactly the charges`, async () => {
      const { outcomes, accountId, funded } = await restartUnderLoad(name);
      expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
      const charged = outcomes.reduce((sum, o) => sum + o.charged, 0);
      expect(charged).toBeGreaterThan(0);
      expect(await balanceOf(system, accountId)).toBe(funded - charged);
      expect(await admin(system, 'ledger', 'audit')).toMatchObject({ ok: true, problems: [] });
    }, 90_000);
  }

  // A crash answers nothing. Billing's calls are idempotent and are sent again to its successor:
  // nothing is lost or charged twice. A Generate in flight on the crashed text service fails as a
  // unary call would; its hold is released, so it charges nothing.
  it('billing crashed (SIGKILL): every request is still served and charged exactly once', async () => {
    const { outcomes, accountId, funded } = await restartUnderLoad('billing', 'SIGKILL');
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    const charged = outcomes.reduce((sum, o) => sum + o.charged, 0);
    expect(await balanceOf(system, accountId)).toBe(funded - charged);
    expect(await admin(system, 'ledger', 'audit')).toMatchObject({ ok: true, problems: [] });
  }, 90_000);

  it('text crashed (SIGKILL): requests in flight fail with an upstream error and charge nothing; the rest are served', async () => {
    const { outcomes, accountId, funded } = await restartUnderLoad('text', 'SIGKILL');
    const failed = outcomes.filter((o) => o.status !== 200);
    expect(failed.length).toBeLessThanOrEqual(6); // at most the requests in flight at the crash
    for (const f of failed) expect(f).toMatchObject({ status: 502, code: 'upstream_error', charged: 0 });
    expect(outcomes.filter((o) => o.status === 200).length).toBeGreaterThan(failed.length);
    const charged = outcomes.reduce((sum, o) => sum + o.charged, 0);
    expect(await balanceOf(system, accountId)).toBe(funded - charged);
    expect(await admin(system, 'ledger', 'audit')).toMatchObject({ ok: true, problems: [] });
  }, 90_000);
});

describe('a service that stays down', () => {
  it('text down: a chat request fails 502 upstream_error within the connect wait (not the 11-minute deadline) and charges nothing', async () => {
    const funded = 1_000_000;
    const { apiKey, accountId } = await fundedAccount(system, funded);
    await waitForListing(system, apiKey, ['gpt-sim-mini']);
    await system.stopService('text');
    try {
      const res = await fetch(`${system.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-sim-mini', max_tokens: 16, messages: [{ role: 'user', content: 'anyone there?' }] }),
        signal: AbortSignal.timeout(25_000), // far short of the Generate deadline
      });
      expect(res.status).toBe(502);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('upstream_error');
      expect(await balanceOf(system, accountId)).toBe(funded);
    } finally {
      await system.restartService('text');
    }
  }, 60_000);
});

/**
 * The money calls with the network failing in between: `lost` answers after billing did the call
 * (a deadline passing, a stream breaking), `undelivered` fails before billing sees it.
 */
function faulty(money: MoneyCalls, faults: { authorize?: Fault; settle?: Fault; release?: Fault }): MoneyCalls {
  const wrap = <K extends keyof MoneyCalls>(name: K) =>
    (async (req: never) => {
      const fault = faults[name];
      if (fault && fault.times > 0) {
        fault.times--;
        if (fault.kind === 'undelivered') throw new RpcError(status.UNAVAILABLE, 'no connection');
        await (money[name] as (r: never) => Promise<unknown>)(req);
        throw new RpcError(status.DEADLINE_EXCEEDED, 'the answer was lost');
      }
      return (money[name] as (r: never) => Promise<unknown>)(req);
    }) as MoneyCalls[K];
  return { authorize: wrap('authorize'), settle: wrap('settle'), release: wrap('release') };
}
interface Fault {
  kind: 'lost' | 'undelivered';
  times: number;
}

// The gateway's billing steps (metering.ts) against the real billing, with the answers of its
// calls lost or the calls never delivered: a retry finds the one hold and the one charge, and a
// settle that is never answered is taken back, so the client's "not charged" is the truth.
describe('money calls whose answers are lost', () => {
  const fast = { retries: 3, minTimeout: 10, factor: 1 };
  // 1 credit a token: a charge of 40 tokens is 40 credits.
  const model = { id: 'gpt-sim-mini', unit: billingV1.BillingUnit.MILLION_TOKENS, price: 1_000_000n } as ResolvedModel;
  const log = { info() {}, warn() {}, error() {} } as never;
  const textHold = (key: KeyRecord): HoldSpec => ({ key, model, endpoint: 'chat/completions', worstUnits: 100n, text: true, requestId: randomUUID(), clientRequestId: '', checkRateLimit: false });
  let money: MoneyCalls & { close(): void };
  let billing: ServiceClient<MethodsOf<typeof billingV1.BillingService>> & { close(): void };

  beforeAll(() => {
    money = createMoneyExchange(system.billingAddr);
    billing = createClient(billingV1.BillingService, system.billingAddr);
  });
  afterAll(() => {
    money?.close();
    billing?.close();
  });

  async function holdFor(faults: { authorize?: Fault; settle?: Fault; release?: Fault }) {
    const funded = 1_000;
    const { accountId, keyId } = await fundedAccount(system, funded);
    const calls: SettleCalls = { money: faulty(money, faults), billing };
    const key = { keyId, accountId, revokedAtMs: 0, expiresAtMs: 0 };
    const hold = await holdCredits(calls.money, log, textHold(key), fast);
    return { funded, accountId, calls, hold };
  }

  it('answers lost twice on authorize and on settle: one hold, one charge, reported as it is', async () => {
    const { funded, accountId, calls, hold } = await holdFor({ authorize: { kind: 'lost', times: 2 }, settle: { kind: 'lost', times: 2 } });
    const charge = await settleHold(calls, log, hold, { units: 40n, inputTokens: 30n, outputTokens: 10n }, fast);
    expect(charge).toEqual({ creditCharged: 40n, balanceAfter: BigInt(funded - 40) });
    expect(await balanceOf(system, accountId)).toBe(funded - 40);
    expect(await admin(system, 'ledger', 'audit')).toMatchObject({ ok: true, problems: [] });
  });

  it.each([
    ['went through, its answers lost', 'lost'],
    ['never delivered', 'undelivered'],
  ] as const)('a settle never answered (%s): the client hears "not charged", and it is not', async (_name, kind) => {
    const { funded, accountId, calls, hold } = await holdFor({ settle: { kind, times: Infinity } });
    const err = await settleHold(calls, log, hold, { units: 40n }, fast).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ code: 'upstream_error', message: expect.stringMatching(/not charged/) });
    // Taken back in the background: the hold released, or the charge that went through refunded.
    await vi.waitFor(async () => expect(await balanceOf(system, accountId)).toBe(funded), { timeout: 10_000, interval: 100 });
    expect(await admin(system, 'ledger', 'audit')).toMatchObject({ ok: true, problems: [] });
  });

  it('an authorize never answered (its hold taken all the same): the request fails and the hold is given back', async () => {
    const { accountId, keyId } = await fundedAccount(system, 1_000);
    const lost = faulty(money, { authorize: { kind: 'lost', times: Infinity } });
    const key = { keyId, accountId, revokedAtMs: 0, expiresAtMs: 0 };
    const err = await holdCredits(lost, log, textHold(key), fast).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcError);
    // Released in the background, not left to the sweeper's 30 minutes of 100 credits held.
    await vi.waitFor(async () => expect(await balanceOf(system, accountId)).toBe(1_000), { timeout: 10_000, interval: 100 });
    expect(await admin(system, 'ledger', 'audit')).toMatchObject({ ok: true, problems: [] });
  });

  it('an authorize sent again after its answer was lost finds its hold; the rate limit counts it once', async () => {
    const { accountId, keyId } = await fundedAccount(system, 1_000);
    await admin(system, 'account', 'rate-limit', 'set', '--account', accountId, '--per-second', '1000', '--per-minute', '1');
    if (new Date().getSeconds() > 50) await sleep((61 - new Date().getSeconds()) * 1000); // one minute window
    const lost = faulty(money, { authorize: { kind: 'lost', times: 1 } });
    const key = { keyId, accountId, revokedAtMs: 0, expiresAtMs: 0 };
    const hold = await holdCredits(lost, log, { ...textHold(key), checkRateLimit: true }, fast);
    expect(await balanceOf(system, accountId)).toBe(900);
    expect(await settleHold({ money, billing }, log, hold, { units: 40n }, fast)).toEqual({ creditCharged: 40n, balanceAfter: 960n });
  }, 30_000);

  it('a release that does not reach billing goes on in the background', async () => {
    const { funded, accountId, calls, hold } = await holdFor({ release: { kind: 'undelivered', times: 1 } });
    expect(await balanceOf(system, accountId)).toBe(funded - 100);
    await releaseHold(calls.money, hold, log);
    await vi.waitFor(async () => expect(await balanceOf(system, accountId)).toBe(funded), { timeout: 10_000, interval: 100 });
  });

  it('a refusal is an answer: not retried', async () => {
    const { calls, hold } = await holdFor({});
    let settles = 0;
    const counted: SettleCalls = { ...calls, money: { ...calls.money, settle: (req, opts) => (settles++, calls.money.settle(req, opts)) } };
    // A settle of a hold billing does not have is refused (not_found): an answer, not a lost call.
    const err = await settleHold(counted, log, { ...hold, requestId: randomUUID() }, { units: 40n }, fast).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'not_found' });
    expect(settles).toBe(1);
  });
});
