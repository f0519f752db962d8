import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { balanceOf, seedDemoModels, waitForListing } from '../support/clients.ts';
import { OwnNats } from '../support/own-nats.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';

async function chat(baseUrl: string, apiKey: string): Promise<{ status: number; code?: string; charged?: number }> {
  const res = await fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-sim-mini', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] }),
    signal: AbortSignal.timeout(30_000),
  });
  const body = (await res.json()) as { service?: { credit_charged: number }; error?: { code: string } };
  return { status: res.status, code: body.error?.code, charged: body.service?.credit_charged };
}

// NATS carries events only; the money path does not need it. With it away, services must still
// start (a rolling restart or a crash during the outage), serve, and refuse money to a key
// revoked meanwhile, whose revocation event cannot reach the gateways.
describe('NATS away: the generation path keeps working', () => {
  let nats: OwnNats;
  let system: RunningSystem;

  beforeAll(async () => {
    nats = await OwnNats.onFreePort();
    await nats.start();
    system = await startTestSystem({ natsUrl: nats.url });
    await seedDemoModels(system);
  }, 180_000);
  afterAll(async () => {
    await system?.stop();
    await nats?.stop();
  });

  it('billing and text restart, and a new gateway replica starts, while NATS is down; all serve, billed exactly', async () => {
    const { apiKey, accountId } = await fundedAccount(system, 1_000_000);
    await waitForListing(system, apiKey, ['gpt-sim-mini']);
    await nats.stop();
    try {
      const billing = system.services.get('billing')!.child;
      await new Promise((done) => {
        billing.once('exit', done);
        billing.kill('SIGKILL');
      });
      await system.restartService('billing');
      await system.stopService('text');
      await system.restartService('text');
      const second = await system.addGateway();
      const before = await balanceOf(system, accountId);
      const answers = [await chat(system.baseUrl, apiKey), await chat(second, apiKey)];
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
      expect(answers.every((a) => a.charged! >= 1)).toBe(true);
      expect(await balanceOf(system, accountId)).toBe(before - answers[0]!.charged! - answers[1]!.charged!);
    } finally {
      await nats.start();
    }
  }, 120_000);

  it('a key revoked while NATS is down is refused money at once (401 auth_revoked), although the gateway cached it', async () => {
    const { apiKey, accountId, keyId } = await fundedAccount(system, 1_000_000);
    await waitForListing(system, apiKey, ['gpt-sim-mini']);
    expect((await chat(system.baseUrl, apiKey)).status).toBe(200);
    await nats.stop();
    try {
      await admin(system, 'key', 'revoke', keyId);
      const before = await balanceOf(system, accountId);
      expect(await chat(system.baseUrl, apiKey)).toMatchObject({ status: 401, code: 'auth_revoked' });
      expect(await balanceOf(system, accountId)).toBe(before);
    } finally {
      await nats.start();
    }
  }, 60_000);

  it('leaves a ledger whose every balance equals the sum of its entries', async () => {
    expect(await admin(system, 'ledger', 'audit')).toMatchObject({ ok: true, problems: [] });
  });
});
