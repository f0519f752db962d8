import { createServer, type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';

interface RouteOut {
  provider: string;
  upstream_model: string;
  state: string;
  reason: string | null;
  requests: number;
  error_rate: number;
  failing_accounts: number;
  latency_p50_ms: number;
  latency_p99_ms: number;
  last_error: string | null;
  last_error_at: string | null;
  since: string | null;
}

// Route health through the whole system (docs/routing.md): a model's first-byte deadline set with
// the operator CLI moves a streamed request off a silent route; operators read every route's health.
describe('routing through the whole system', () => {
  let system: RunningSystem;
  let key: { accountId: string; keyId: string; apiKey: string };
  const sim = (method: string, path: string, body?: unknown) =>
    fetch(`${system.simulatorUrl}${path}`, { method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) });
  const listed = async () => {
    const res = await fetch(`${system.baseUrl}/models`, { headers: { authorization: `Bearer ${key.apiKey}` } });
    return res.ok ? ((await res.json()) as { data: Array<{ id: string }> }).data.map((m) => m.id) : [];
  };
  const routes = async () => ((await admin(system, 'routes', 'health')) as { routes: RouteOut[] }).routes;
  const gone = async () => (await routes()).find((r) => r.upstream_model === 'gpt-sim-gone');

  let textMetrics: string;

  beforeAll(async () => {
    // The text service's Prometheus endpoint on a port of its own.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    textMetrics = `http://127.0.0.1:${port}/metrics`;
    system = await startTestSystem({ metricsPorts: { text: port } });
    key = await fundedAccount(system, 1_000_000);
    await sim('PUT', '/_sim/models/openai', ['gpt-sim-mini', 'gpt-sim-mini-b']);
    await admin(system, 'model', 'upsert', '--id', 'm-routed', '--kind', 'TEXT', '--route', 'openai:gpt-sim-mini:0', '--route', 'openai-backup:gpt-sim-mini-b:1', '--price', '1000', '--first-byte-timeout-ms', '500');
    await admin(system, 'catalog', 'sync');
    for (let i = 0; i < 100 && !(await listed()).includes('m-routed'); i++) await sleep(50);
  }, 120_000);
  afterAll(() => system?.stop());

  it('the model keeps its first-byte deadline and is listed', async () => {
    const { models } = (await admin(system, 'models', 'list')) as { models: Array<{ id: string; limits: { first_byte_timeout_ms: number } }> };
    expect(models.find((m) => m.id === 'm-routed')?.limits.first_byte_timeout_ms).toBe(500);
    expect(await listed()).toContain('m-routed');
  });

  it('the operator CLI refuses a first-byte deadline out of range', async () => {
    await expect(admin(system, 'model', 'upsert', '--id', 'm-bad', '--kind', 'TEXT', '--provider', 'openai', '--upstream-model', 'gpt-sim-mini', '--first-byte-timeout-ms', '700000')).rejects.toThrow(/first-byte-timeout-ms/);
  });

  it("a silent primary is left for the backup at the model's first-byte deadline; the stream is whole and billed", async () => {
    await sim('PUT', '/_sim/settings/openai/gpt-sim-mini', { fault: 'timeout' });
    try {
      const res = await fetch(`${system.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm-routed', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hello there' }] }),
      });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('data: [DONE]');
      expect(text).toContain('"credit_charged"');
    } finally {
      await sim('DELETE', '/_sim/settings');
    }
    // The silent route's failure is in its evidence, as operators see it.
    const primary = (await routes()).find((r) => r.provider === 'openai' && r.upstream_model === 'gpt-sim-mini');
    expect(primary).toMatchObject({ state: 'closed', failing_accounts: 1 });
    expect(primary!.last_error).toMatch(/did not answer in time/);
    const backup = (await routes()).find((r) => r.provider === 'openai-backup' && r.upstream_model === 'gpt-sim-mini-b');
    expect(backup).toMatchObject({ state: 'closed', requests: 1, error_rate: 0 });
    expect(backup!.latency_p50_ms).toBeGreaterThan(0);
  }, 30_000);

  it("the text service's Prometheus series show each route's state, error rate and latency", async () => {
    const text = await (await fetch(textMetrics)).text();
    const series = (name: string, upstream: string) => new RegExp(`^${name}\\{[^}]*upstream_model="${upstream}"[^}]*\\} ([0-9.e+-]+)$`, 'm').exec(text)?.[1];
    expect(series('gateway_route_state', 'gpt-sim-mini')).toBe('0');
    expect(Number(series('gateway_route_error_rate', 'gpt-sim-mini'))).toBeGreaterThan(0);
    expect(Number(series('gateway_route_latency_p50', 'gpt-sim-mini-b'))).toBeGreaterThan(0);
    expect(series('gateway_route_latency_p99', 'gpt-sim-mini-b')).toBeDefined();
  });

  it('pnpm admin routes health lists every route of the catalog, used or not', async () => {
    const all = await routes();
    expect(all.map((r) => `${r.provider}:${r.upstream_model}`)).toEqual(expect.arrayContaining(['openai:gpt-sim-mini', 'openai-backup:gpt-sim-mini-b']));
    for (const r of all) expect(['closed', 'open', 'half_open']).toContain(r.state);
  });

  it("a complete (non-streamed) answer from a silent primary comes from the backup at the model's first-byte deadline, whole and billed", async () => {
    const before = (await routes()).find((r) => r.provider === 'openai-backup')!.requests;
    await sim('PUT', '/_sim/settings/openai/gpt-sim-mini', { fault: 'timeout' });
    try {
      const res = await fetch(`${system.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm-routed', messages: [{ role: 'user', content: 'hello there' }] }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { object: string; model: string; choices: Array<{ message: { content: string } }>; usage: { completion_tokens: number }; service: { credit_charged: number } };
      expect(body).toMatchObject({ object: 'chat.completion', model: 'm-routed' });
      expect(body.choices[0]!.message.content.length).toBeGreaterThan(0);
      expect(body.usage.completion_tokens).toBeGreaterThan(0);
      expect(body.service.credit_charged).toBeGreaterThan(0);
    } finally {
      await sim('DELETE', '/_sim/settings');
    }
    const after = await routes();
    expect(after.find((r) => r.provider === 'openai' && r.upstream_model === 'gpt-sim-mini')!.last_error).toMatch(/did not answer in time/);
    expect(after.find((r) => r.provider === 'openai-backup')!.requests).toBe(before + 1);
  }, 30_000);

  it('a route no model uses any more is no longer probed, and leaves the routes listing', async () => {
    const probesOf = async (model: string) => {
      const res = await sim('GET', `/_sim/requests?limit=1000&model=${model}`);
      return ((await res.json()) as { requests: Array<{ headers: Record<string, string> }> }).requests.filter((r) => (r.headers['x-request-id'] ?? '').startsWith('route-probe-')).length;
    };
    await sim('PUT', '/_sim/models/openai', ['gpt-sim-mini', 'gpt-sim-mini-b', 'gpt-sim-gone']);
    await admin(system, 'model', 'upsert', '--id', 'm-gone', '--kind', 'TEXT', '--route', 'openai:gpt-sim-gone:0', '--price', '1000');
    await admin(system, 'catalog', 'sync');
    for (let i = 0; i < 100 && !(await listed()).includes('m-gone'); i++) await sleep(50);
    // The provider fails it: one account's failures, confirmed by the gateway's probe, open it;
    // an open route is probed again and again.
    await sim('PUT', '/_sim/settings/openai/gpt-sim-gone', { fault: '500' });
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${system.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm-gone', messages: [{ role: 'user', content: 'hello' }] }),
      });
      await res.arrayBuffer();
    }
    for (let i = 0; i < 200 && (await probesOf('gpt-sim-gone')) < 2; i++) await sleep(100);
    expect(await probesOf('gpt-sim-gone')).toBeGreaterThanOrEqual(2);
    expect((await gone())?.state).not.toBe('closed');

    // Its only model now routes elsewhere: nothing uses the route.
    await admin(system, 'model', 'upsert', '--id', 'm-gone', '--kind', 'TEXT', '--route', 'openai-backup:gpt-sim-mini-b:0', '--price', '1000');
    for (let i = 0; i < 10 && (await gone()) !== undefined; i++) await sleep(200);
    expect(await gone()).toBeUndefined();
    await sim('DELETE', '/_sim/requests');
    // Longer than the longest wait between probes (5 s): not one more probe.
    await sleep(6_000);
    expect(await probesOf('gpt-sim-gone')).toBe(0);
    await sim('DELETE', '/_sim/settings');
  }, 120_000);
});
