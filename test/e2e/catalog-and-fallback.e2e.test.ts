import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { balanceOf, waitForListing } from '../support/clients.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * Evidence older than this is stale; no periodic sync runs during the suite (only `catalog sync`).
 * Long enough that the last good sync (each test's `beforeEach`) is still fresh after a failed sync
 * run through the operator CLI on a loaded CI machine: at 4 s, two CLI start-ups and a poll outran it.
 */
const MAX_SYNC_AGE_MS = 10_000;

type ErrorBody = { error: { code: string; message: string } };
const codeOf = async (res: Response) => ((await res.json()) as ErrorBody).error.code;

// Resolution of (model, endpoint) through the real gateway, provider catalog sync, and fallback
// between a model's routes, with the simulator as the providers.
describe('model availability, provider sync and route fallback', () => {
  let system: RunningSystem;
  let key: { accountId: string; keyId: string; apiKey: string };

  const sim = (method: string, path: string, body?: unknown) =>
    fetch(`${system.simulatorUrl}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const chat = (model: string, content = 'hi', path = '/chat/completions') =>
    fetch(`${system.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
    });
  const listed = async () => {
    const res = await fetch(`${system.baseUrl}/models`, { headers: { authorization: `Bearer ${key.apiKey}` } });
    return res.ok ? ((await res.json()) as { data: Array<{ id: string }> }).data.map((m) => m.id) : [];
  };
  /** Runs a sync now and waits until the gateway's snapshot shows `check`. */
  const syncUntil = async (check: () => Promise<boolean>) => {
    await admin(system, 'catalog', 'sync');
    for (let i = 0; i < 100 && !(await check()); i++) await sleep(50);
    expect(await check()).toBe(true);
  };
  const upsert = (...args: string[]) => admin(system, 'model', 'upsert', ...args);
  /** Upstream models the simulator saw chat requests for, in order. */
  const calls = async () =>
    ((await (await sim('GET', '/_sim/requests?path=/openai/v1/chat/completions')).json()) as { requests: Array<{ model: string }> }).requests.map(
      (r) => r.model,
    );

  beforeAll(async () => {
    system = await startTestSystem({
      providerTimeouts: { textFirstByteMs: 1_500, textTotalMs: 1_500, listMs: 2_000 },
      serviceEnv: {
        catalog: { PROVIDER_SYNC_MAX_AGE_MS: String(MAX_SYNC_AGE_MS), PROVIDER_SYNC_INTERVAL_MS: '3600000' },
        text: { ROUTE_HEALTH: 'false' },
      },
    });
    key = await fundedAccount(system, 1_000_000);
    await upsert('--id', 'm-ok', '--kind', 'TEXT', '--provider', 'openai', '--upstream-model', 'gpt-sim-mini', '--price', '1000');
    await upsert('--id', 'm-off', '--kind', 'TEXT', '--provider', 'openai', '--upstream-model', 'gpt-sim-mini', '--price', '1000', '--disabled');
    await upsert('--id', 'm-unpriced', '--kind', 'TEXT', '--provider', 'openai', '--upstream-model', 'gpt-sim-mini');
    await upsert('--id', 'm-image', '--kind', 'IMAGE', '--provider', 'openai', '--upstream-model', 'gpt-sim-image', '--price', '500');
    // Listed only while the backup provider serves `gpt-sim-mini-b`: tells the tests which sync the gateway has seen.
    await upsert('--id', 'm-b-only', '--kind', 'TEXT', '--provider', 'openai-backup', '--upstream-model', 'gpt-sim-mini-b', '--price', '1000');
    await upsert('--id', 'm-chat-only', '--kind', 'TEXT', '--provider', 'compat', '--upstream-model', 'compat-sim-chat', '--price', '1000', '--capabilities', 'chat/completions');
  }, 120_000);
  afterAll(() => system?.stop());
  beforeEach(async () => {
    await sim('POST', '/_sim/reset');
    await syncUntil(async () => {
      const ids = await listed();
      return ids.includes('m-ok') && !ids.includes('m-b-only');
    });
  });

  it('resolves every outcome in order, with the /chat special rule', async () => {
    expect(await codeOf(await chat('no-such-model'))).toBe('unknown_model');
    expect(await codeOf(await chat('m-image'))).toBe('capability_not_supported');
    expect(await codeOf(await chat('m-chat-only', 'hi', '/responses'.replace('/responses', '/chat')))).toBe('capability_not_supported');
    const disabled = await chat('m-off');
    expect(disabled.status).toBe(503);
    expect(await codeOf(disabled)).toBe('model_disabled');
    const disabledLegacy = await chat('m-off', 'hi', '/chat');
    expect(disabledLegacy.status).toBe(400);
    expect(await codeOf(disabledLegacy)).toBe('unknown_model');
    expect(await codeOf(await chat('m-unpriced'))).toBe('pricing_not_configured');
    expect((await chat('m-ok')).status).toBe(200);
  });

  it('lists only enabled, priced, served models; the hidden listing is 503 while known ids keep working', async () => {
    const ids = await listed();
    expect(ids).toEqual(expect.arrayContaining(['m-ok', 'm-image', 'm-chat-only']));
    expect(ids).not.toContain('m-off');
    expect(ids).not.toContain('m-unpriced');
    try {
      await admin(system, 'catalog', 'listing', 'hide');
      let res: Response | undefined;
      for (let i = 0; i < 40; i++) {
        res = await fetch(`${system.baseUrl}/models`, { headers: { authorization: `Bearer ${key.apiKey}` } });
        if (res.status === 503) break;
        await sleep(50);
      }
      expect(res!.status).toBe(503);
      expect(await codeOf(res!)).toBe('model_catalog_disabled');
      expect((await chat('m-ok')).status).toBe(200);
    } finally {
      await admin(system, 'catalog', 'listing', 'show');
    }
    await syncUntil(async () => (await listed()).includes('m-ok'));
  });

  it('price and enable changes by the operator are visible at once', async () => {
    await admin(system, 'model', 'price', '--model', 'm-unpriced', '--credits', '2000');
    await syncUntil(async () => (await chat('m-unpriced')).status === 200);
    await admin(system, 'model', 'price', '--model', 'm-unpriced', '--clear');
    await syncUntil(async () => (await chat('m-unpriced')).status === 503);
    await admin(system, 'model', 'enable', 'm-off');
    await syncUntil(async () => (await listed()).includes('m-off'));
    await admin(system, 'model', 'disable', 'm-off');
    await syncUntil(async () => !(await listed()).includes('m-off'));
    expect(await codeOf(await chat('m-off'))).toBe('model_disabled');
  });

  it('a model the provider stops serving is temporarily unavailable and leaves the listing, then returns', async () => {
    const before = await balanceOf(system, key.accountId);
    await sim('PUT', '/_sim/models/openai', ['gpt-sim-image', 'sora-sim']);
    await syncUntil(async () => !(await listed()).includes('m-ok'));
    const res = await chat('m-ok');
    expect(res.status).toBe(503);
    expect(await codeOf(res)).toBe('model_temporarily_unavailable');
    expect(await balanceOf(system, key.accountId)).toBe(before);
    await sim('DELETE', '/_sim/models/openai');
    await syncUntil(async () => (await listed()).includes('m-ok'));
    expect((await chat('m-ok')).status).toBe(200);
  });

  it('with no successful sync within the maximum age the provider is stale; one successful sync clears it', async () => {
    await sim('PUT', '/_sim/settings/openai', { listing_fault: true });
    const sync = (await admin(system, 'catalog', 'sync')) as { providers: Array<{ provider: string; ok: boolean }> };
    expect(sync.providers.find((p) => p.provider === 'openai')?.ok).toBe(false);
    // The last good evidence still holds until it is older than the maximum age.
    expect((await chat('m-ok')).status).toBe(200);
    await sleep(MAX_SYNC_AGE_MS + 200);
    const stale = await chat('m-ok');
    expect(stale.status).toBe(503);
    expect(await codeOf(stale)).toBe('provider_catalog_stale');
    expect(await listed()).not.toContain('m-ok');
    await sim('PUT', '/_sim/settings/openai', { listing_fault: false });
    await syncUntil(async () => (await chat('m-ok')).status === 200);
  });

  describe('fallback between routes', () => {
    beforeEach(async () => {
      await sim('PUT', '/_sim/models/openai', ['gpt-sim-mini', 'gpt-sim-mini-b', 'gpt-sim-image']);
      await upsert('--id', 'm-two', '--kind', 'TEXT', '--route', 'openai:gpt-sim-mini:0', '--route', 'openai-backup:gpt-sim-mini-b:1', '--price', '1000');
      await syncUntil(async () => {
        const ids = await listed();
        return ids.includes('m-two') && ids.includes('m-b-only');
      });
      await sim('DELETE', '/_sim/requests');
    });

    it.each([['503'], ['timeout']])('the first route answering %s → the second serves, billed once', async (fault) => {
      await sim('PUT', '/_sim/settings/openai/gpt-sim-mini', { fault });
      const before = await balanceOf(system, key.accountId);
      const records = async () => ((await admin(system, 'usage', '--key', key.keyId)) as { records: Array<{ model: string }> }).records.filter((r) => r.model === 'm-two');
      const recordsBefore = (await records()).length;
      const res = await chat('m-two');
      expect(res.status).toBe(200);
      const body = (await res.json()) as { model: string; service: { credit_charged: number; balance_after: number } };
      expect(body.model).toBe('m-two');
      expect(await calls()).toEqual(['gpt-sim-mini', 'gpt-sim-mini-b']);
      expect(body.service.balance_after).toBe(before - body.service.credit_charged);
      expect(await balanceOf(system, key.accountId)).toBe(body.service.balance_after);
      expect(await records()).toHaveLength(recordsBefore + 1);
    });

    it('all routes failing → the last attempt’s code, nothing charged', async () => {
      await sim('PUT', '/_sim/settings/openai/gpt-sim-mini', { fault: '503' });
      await sim('PUT', '/_sim/settings/openai/gpt-sim-mini-b', { fault: '429' });
      const before = await balanceOf(system, key.accountId);
      const res = await chat('m-two');
      expect(res.status).toBe(429);
      expect(await codeOf(res)).toBe('upstream_rate_limited');
      expect(await calls()).toEqual(['gpt-sim-mini', 'gpt-sim-mini-b']);
      expect(await balanceOf(system, key.accountId)).toBe(before);
    });
  });

  it('resolves from memory: with the catalog service down, requests still resolve and run', async () => {
    await waitForListing(system, key.apiKey, ['m-ok']);
    await system.stopService('catalog');
    try {
      expect((await chat('m-ok')).status).toBe(200);
      expect(await codeOf(await chat('no-such-model'))).toBe('unknown_model');
    } finally {
      await system.restartService('catalog');
    }
  });
});
