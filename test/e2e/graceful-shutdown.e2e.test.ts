import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { balanceOf, waitForListing, seedDemoModels } from '../support/clients.ts';
import { fundedAccount, startTestSystem } from '../support/system-fixture.ts';

// A rolling update sends SIGTERM to a gateway replica while it streams: readiness drops, new work
// is refused, and the open stream runs to its end, billed, before the process exits.
describe('graceful shutdown of the gateway', () => {
  let system: RunningSystem;

  beforeAll(async () => {
    system = await startTestSystem();
    await seedDemoModels(system);
  }, 120_000);
  afterAll(() => system?.stop());

  it('SIGTERM during a stream lets the stream finish and bills it, then exits 0', async () => {
    const { apiKey, accountId } = await fundedAccount(system, 1_000_000);
    await waitForListing(system, apiKey, ['gpt-sim-mini']);
    const res = await fetch(`${system.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      // About 30 chunks 50 ms apart: the stream outlives the moment of SIGTERM by more than a second.
      body: JSON.stringify({ model: 'gpt-sim-mini', stream: true, messages: [{ role: 'user', content: 'go [[sim:words=30;chunk_delay=50]]' }] }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value);

    const gateway = system.services.get('edge-gateway')!.child;
    const exited = new Promise<number | null>((resolve) => gateway.once('exit', (code) => resolve(code)));
    gateway.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 100));
    // Draining: readiness is down and new connections are not served.
    const probe = await fetch(`${system.baseUrl.replace(/\/v1$/, '')}/readyz`).then((r) => r.status, () => 'refused');
    expect([503, 'refused']).toContain(probe);

    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    expect(text).toContain('data: [DONE]');
    const final = text
      .split('\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => JSON.parse(l.slice(6)) as { usage?: { total_tokens: number }; service?: { credit_charged: number; balance_after: number } })
      .find((c) => c.service);
    expect(final?.usage?.total_tokens).toBeGreaterThan(0);
    expect(final!.service!.balance_after).toBe(1_000_000 - final!.service!.credit_charged);
    expect(await balanceOf(system, accountId)).toBe(final!.service!.balance_after);
    expect(await exited).toBe(0);
  }, 30_000);
});
