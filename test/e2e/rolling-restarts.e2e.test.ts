import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSystem, ServiceName } from '../../scripts/system.ts';
import { balanceOf, waitForListing, seedDemoModels } from '../support/clients.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Outcome {
  status: number;
  charged: number;
  code?: string;
}

// A rolling update of billing or text while clients keep sending: the gateway reaches both over
// long-lived exchange streams. The service shutting down answers what it took and refuses the
// rest, which the gateway sends to its successor, so every request is served and billed exactly
// once: the wallet moves by exactly what the answers say and the ledger audit stays clean.
describe('rolling restarts of billing and text under load', () => {
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
