import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { create, fromBinary } from '@bufbuild/protobuf';
import { catalogV1, eventsV1, textV1 } from '@gw/contracts';
import { FallbackRouter, ProviderRegistry, RouteHealthBoard, type HealthPolicy } from '@gw/providers';
import { connectNats, createLogger, qualify, type NatsConnection } from '@gw/service-kit';
import { Kvm } from '@nats-io/kv';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildSimulator } from '../../provider-simulator/src/app.ts';
import { generate, generateStream, type TextDeps } from '../src/domain/text-generation.ts';
import { CatalogFollower, liveTextRoutes } from '../src/health/live-routes.ts';
import { PROBE_REQUEST_PREFIX, probeWith } from '../src/health/probe.ts';
import { kvKey } from '../src/health/route-status-codec.ts';
import { bucketName, SharedRouteHealth } from '../src/health/shared-route-health.ts';

const silent = createLogger('text-test', 'silent');
const PRIMARY = { provider: 'primary', upstreamModel: 'gpt-sim-mini', priority: 0, weight: 1 };
const BACKUP = { provider: 'backup', upstreamModel: 'compat-sim-chat', priority: 1, weight: 1 };
const ROUTES = [PRIMARY, BACKUP];
/** Short probe intervals, so that recovery shows within the test's seconds. */
const POLICY: Partial<HealthPolicy> = { probeIntervalMs: 300, maxProbeIntervalMs: 600, probeTimeoutMs: 2_000, suspectProbeIntervalMs: 2_000 };

// A `timeout` fault hangs for a minute: only the first-byte deadline can move a request on in time.
const sim = buildSimulator({ logger: false, timeoutFaultCapMs: 60_000 });
let providers: ProviderRegistry;
const open: Array<() => Promise<void>> = [];

beforeAll(async () => {
  await sim.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(sim.server.address() as AddressInfo).port}`;
  providers = new ProviderRegistry([
    { name: 'primary', kind: 'openai', baseUrl: `${url}/openai/v1`, apiKey: 'sim-openai-key' },
    { name: 'backup', kind: 'compat', baseUrl: `${url}/compat/v1`, apiKey: 'sim-compat-key' },
  ]);
});
afterEach(async () => {
  for (const close of open.splice(0)) await close();
  await control('DELETE', '/settings');
  await control('DELETE', '/requests');
});
afterAll(async () => {
  await providers.close();
  await sim.close();
});

async function control(method: 'PUT' | 'DELETE', path: string, body?: object): Promise<void> {
  const res = await sim.inject({ method, url: `/_sim${path}`, ...(body ? { payload: body } : {}) });
  if (res.statusCode >= 300) throw new Error(`simulator ${path}: ${res.body}`);
}

/** Requests the simulator received for a model, with their `x-request-id`. */
async function received(model: string): Promise<string[]> {
  const res = await sim.inject({ method: 'GET', url: `/_sim/requests?limit=1000&model=${model}` });
  return (res.json() as { requests: Array<{ headers: Record<string, string> }> }).requests.map((r) => r.headers['x-request-id'] ?? '');
}

interface Replica {
  health: SharedRouteHealth;
  deps: TextDeps;
  nc: NatsConnection;
}

/** One text replica: its own NATS connection, board and router, sharing the namespace's KV bucket. */
async function replica(ns: string): Promise<Replica> {
  const nc = await connectNats(inject('natsUrl'), 'text-test');
  const board = new RouteHealthBoard({ policy: POLICY });
  const health = new SharedRouteHealth({ board, probe: probeWith(providers), logger: silent, namespace: ns, tickMs: 50 });
  health.run();
  const detach = await health.attach(nc);
  open.push(async () => {
    await detach();
    await health.stop();
    await nc.drain();
  });
  return { health, nc, deps: { providers, router: new FallbackRouter({ health: board }), now: Date.now, firstByteTimeoutMs: 10_000 } };
}

function namespace(): string {
  return `${inject('eventsNamespace')}_rh${randomUUID().slice(0, 8)}`;
}

function request(account: string, prompt = 'Hello'): textV1.GenerateRequest {
  return create(textV1.GenerateRequestSchema, {
    requestId: randomUUID(),
    dialect: textV1.Dialect.CHAT,
    publicModel: 'm',
    routes: ROUTES,
    body: Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: prompt }] })),
    accountId: account,
  });
}

async function ask(r: Pick<Replica, 'deps'>, account: string, prompt?: string): Promise<string> {
  const res = await generate(r.deps, request(account, prompt), new AbortController().signal);
  return res.provider;
}

async function eventually<T>(read: () => T | Promise<T>, ok: (value: T) => boolean, timeoutMs = 5_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value) || Date.now() > until) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const stateOf = (r: Pick<Replica, 'health'>) => r.health.board.status(PRIMARY).state;

describe('route health shared across text replicas', () => {
  it('a failing primary with a healthy backup: every request succeeds, the open primary gets only probes, and it closes within seconds of coming back', async () => {
    const ns = namespace();
    const r = await replica(ns);
    const events: eventsV1.RouteHealthChanged[] = [];
    const sub = r.nc.subscribe(qualify(ns, 'text.route.*'), { callback: (_err, msg) => void events.push(fromBinary(eventsV1.RouteHealthChangedSchema, msg.data)) });
    await control('PUT', '/settings/openai/gpt-sim-mini', { fault: '500' });

    const served: string[] = [];
    for (let i = 0; i < 9; i++) served.push(await ask(r, `acct-${i % 3}`));
    expect(served.every((p) => p === 'backup')).toBe(true);
    expect(await eventually(() => stateOf(r), (s) => s !== 'closed')).not.toBe('closed');
    expect(r.health.board.status(PRIMARY).reason).toBe('errors');

    // Open: clients go straight to the backup; the primary hears only the gateway's probes.
    await control('DELETE', '/requests');
    for (let i = 0; i < 20; i++) served.push(await ask(r, `acct-${i % 5}`));
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(served.every((p) => p === 'backup')).toBe(true);
    const whileOpen = await received('gpt-sim-mini');
    expect(whileOpen.length).toBeGreaterThan(0);
    expect(whileOpen.every((id) => id.startsWith(PROBE_REQUEST_PREFIX))).toBe(true);

    // The provider is back: the next probe closes the route, and clients use it again.
    await control('DELETE', '/settings');
    expect(await eventually(() => stateOf(r), (s) => s === 'closed', 3_000)).toBe('closed');
    expect(await ask(r, 'acct-0')).toBe('primary');

    await eventually(() => events.length, (n) => n >= 2);
    sub.unsubscribe();
    expect(events.map((e) => e.route?.state)).toEqual([textV1.RouteState.OPEN, textV1.RouteState.CLOSED]);
    expect(events[0]).toMatchObject({ previousState: textV1.RouteState.CLOSED, route: { provider: 'primary', upstreamModel: 'gpt-sim-mini', reason: 'errors' } });
    expect(events[0]!.route!.lastError).toContain('500');
  });

  it("one account's prompt-provoked failures do not open the route for the others", async () => {
    const r = await replica(namespace());
    for (let i = 0; i < 25; i++) {
      await expect(ask(r, 'attacker', 'Hi [[sim:fault=500]]')).rejects.toMatchObject({ code: 'upstream_error' });
    }
    // Too few accounts to judge: the gateway asked the provider itself, and it answered.
    const probes = await eventually(
      async () => (await received('gpt-sim-mini')).filter((id) => id.startsWith(PROBE_REQUEST_PREFIX)),
      (ids) => ids.length > 0,
    );
    expect(probes.length).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(stateOf(r)).toBe('closed');
    expect(r.health.board.status(BACKUP).state).toBe('closed');
    expect(await ask(r, 'someone-else')).toBe('primary');
    const [primary] = r.health.list().filter((h) => h.provider === 'primary');
    expect(primary).toMatchObject({ state: textV1.RouteState.CLOSED, failingAccounts: 1 });
    expect(primary!.errorRate).toBeGreaterThan(0.9);
  });

  it('the failures of too few accounts that a probe confirms open the route', async () => {
    const r = await replica(namespace());
    await control('PUT', '/settings/openai/gpt-sim-mini', { fault: '500' });
    for (let i = 0; i < 6; i++) expect(await ask(r, 'only-one')).toBe('backup');
    expect(await eventually(() => stateOf(r), (s) => s !== 'closed')).not.toBe('closed');
    expect(r.health.board.status(PRIMARY).reason).toBe('probe_failed');
  });

  it('a 429 with Retry-After rests the route for that long, then it serves again', async () => {
    const r = await replica(namespace());
    await control('PUT', '/settings/openai/gpt-sim-mini', { fault: '429' });
    const before = Date.now();
    expect(await ask(r, 'acct-1')).toBe('backup');
    const status = await eventually(() => r.health.board.status(PRIMARY), (s) => s.state !== 'closed');
    // The simulator's 429 says `retry-after: 1`; one account got it, and the gateway's probe too:
    // a one-second rest.
    expect(status).toMatchObject({ state: 'open', reason: 'retry_after' });
    expect(status.until - status.since).toBeGreaterThanOrEqual(900);
    expect(status.until - before).toBeLessThanOrEqual(1_000 + (Date.now() - before));
    await control('DELETE', '/settings');
    await control('DELETE', '/requests');
    expect(await ask(r, 'acct-2')).toBe('backup');
    expect(await received('gpt-sim-mini')).toEqual([]);
    expect(await eventually(() => stateOf(r), (s) => s === 'closed', 3_000)).toBe('closed');
    expect(Date.now()).toBeGreaterThanOrEqual(status.until);
    expect(await ask(r, 'acct-2')).toBe('primary');
  });

  it("one account's prompt-provoked 429 with Retry-After rests nothing: the gateway's probe is answered", async () => {
    const r = await replica(namespace());
    expect(await ask(r, 'attacker', 'Hi [[sim:fault=429]]').catch((err: unknown) => err)).toMatchObject({ code: 'upstream_rate_limited' });
    const probes = await eventually(
      async () => (await received('gpt-sim-mini')).filter((id) => id.startsWith(PROBE_REQUEST_PREFIX)),
      (ids) => ids.length > 0,
    );
    expect(probes.length).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(stateOf(r)).toBe('closed');
    expect(await ask(r, 'someone-else')).toBe('primary');
  });

  it('two replicas pool their evidence and agree on the route state', async () => {
    const ns = namespace();
    const a = await replica(ns);
    const b = await replica(ns);
    await control('PUT', '/settings/openai/gpt-sim-mini', { fault: '500' });
    // Neither replica alone sees enough (a: 2 accounts, 3 failures; b: 1 account, 2 failures).
    for (const account of ['acct-1', 'acct-2', 'acct-1']) expect(await ask(a, account)).toBe('backup');
    for (const account of ['acct-3', 'acct-3']) expect(await ask(b, account)).toBe('backup');
    await eventually(() => [stateOf(a), stateOf(b)], ([x, y]) => x !== 'closed' && y !== 'closed');
    expect(stateOf(a)).not.toBe('closed');
    expect(stateOf(b)).not.toBe('closed');
    expect(a.health.board.status(PRIMARY).reason).toBe('errors');
    expect(b.health.board.status(PRIMARY).since).toBe(a.health.board.status(PRIMARY).since);
    expect(b.deps.router.order(ROUTES)).toEqual([BACKUP]);

    await control('DELETE', '/settings');
    await eventually(() => [stateOf(a), stateOf(b)], ([x, y]) => x === 'closed' && y === 'closed', 3_000);
    expect([stateOf(a), stateOf(b)]).toEqual(['closed', 'closed']);
    expect(await ask(b, 'acct-4')).toBe('primary');
  });
});

function streamRequest(firstByteTimeoutMs: number): textV1.GenerateStreamRequest {
  return create(textV1.GenerateStreamRequestSchema, {
    requestId: randomUUID(),
    dialect: textV1.Dialect.CHAT,
    publicModel: 'm',
    routes: ROUTES,
    body: Buffer.from(JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'Hello' }] })),
    accountId: 'acct-1',
    firstByteTimeoutMs,
  });
}

async function streamed(r: Replica, req: textV1.GenerateStreamRequest): Promise<{ frames: number; end: textV1.StreamEnd | undefined }> {
  let frames = 0;
  let end: textV1.StreamEnd | undefined;
  for await (const item of generateStream(r.deps, req, new AbortController().signal)) {
    if (item.item.case === 'frame') frames += 1;
    if (item.item.case === 'frames') frames += item.item.value.frames.length;
    if (item.item.case === 'end') end = item.item.value;
  }
  return { frames, end };
}

/**
 * A complete answer's JSON. Where the text service leaves the gateway a slot for its `service`
 * object (`serviceAt`, a byte offset), the slot is filled with null.
 */
function answerJson(res: textV1.GenerateResponse): Record<string, unknown> {
  const bytes = Buffer.from(res.body);
  const at = (res as { serviceAt?: number }).serviceAt;
  const json = at ? Buffer.concat([bytes.subarray(0, at), Buffer.from('null'), bytes.subarray(at)]) : bytes;
  return JSON.parse(json.toString('utf8')) as Record<string, unknown>;
}

describe('route health without NATS', () => {
  it('a replica that cannot reach NATS judges alone, in memory: it opens and closes the route itself', async () => {
    const board = new RouteHealthBoard({ policy: POLICY });
    const health = new SharedRouteHealth({ board, probe: probeWith(providers), logger: silent, namespace: namespace(), tickMs: 50 });
    health.run();
    open.push(() => health.stop());
    const alone = { health, deps: { providers, router: new FallbackRouter({ health: board }), now: Date.now, firstByteTimeoutMs: 10_000 } satisfies TextDeps };
    await control('PUT', '/settings/openai/gpt-sim-mini', { fault: '500' });
    for (let i = 0; i < 6; i++) expect(await ask(alone, `acct-${i % 3}`)).toBe('backup');
    expect(await eventually(() => stateOf(alone), (s) => s !== 'closed')).not.toBe('closed');
    await control('DELETE', '/settings');
    expect(await eventually(() => stateOf(alone), (s) => s === 'closed', 3_000)).toBe('closed');
    expect(await ask(alone, 'acct-0')).toBe('primary');
  });
});

describe('first-byte deadline', () => {
  it('a silent primary is left for the backup at the deadline, before anything reached the client', async () => {
    const r = await replica(namespace());
    await control('PUT', '/settings/openai/gpt-sim-mini', { fault: 'timeout' });
    const { frames, end } = await streamed(r, streamRequest(300));
    expect(end).toMatchObject({ provider: 'backup', errorCode: '' });
    expect(frames).toBeGreaterThan(0);
    expect(await received('gpt-sim-mini')).toHaveLength(1);
  });

  it('a complete (non-streamed) answer from a silent primary moves to the backup at the deadline: the client gets the backup answer, the primary health records it', async () => {
    const r = await replica(namespace());
    await control('PUT', '/settings/openai/gpt-sim-mini', { fault: 'timeout' });
    const res = await generate(r.deps, create(textV1.GenerateRequestSchema, { ...request('acct-1'), firstByteTimeoutMs: 300 }), new AbortController().signal);
    expect(res.provider).toBe('backup');
    // The complete answer as ever: one chat.completion under the public model, with its usage.
    const body = answerJson(res);
    expect(body).toMatchObject({ object: 'chat.completion', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: expect.any(String) }, finish_reason: 'stop' }] });
    expect(body['usage']).toMatchObject({ prompt_tokens: Number(res.usage?.inputTokens), completion_tokens: Number(res.usage?.outputTokens) });
    expect(res.usage?.outputTokens).toBeGreaterThan(0n);
    expect(await received('gpt-sim-mini')).toHaveLength(1);
    const [primary] = r.health.list().filter((h) => h.provider === 'primary');
    expect(primary).toMatchObject({ state: textV1.RouteState.CLOSED, requests: 1, errorRate: 1, failingAccounts: 1 });
    expect(primary!.lastError).toMatch(/did not answer in time/);
    const [backup] = r.health.list().filter((h) => h.provider === 'backup');
    expect(backup).toMatchObject({ requests: 1, errorRate: 0 });
  });

  it('a slow primary that has started its complete answer is not cut at the deadline', async () => {
    const r = await replica(namespace());
    // The first event comes at once, the whole answer well after the deadline.
    await control('PUT', '/settings/openai/gpt-sim-mini', { chunkDelayMs: 60 });
    const res = await generate(r.deps, create(textV1.GenerateRequestSchema, { ...request('acct-1', 'Hello [[sim:words=20]]'), firstByteTimeoutMs: 300 }), new AbortController().signal);
    expect(res.provider).toBe('primary');
    const body = answerJson(res) as { choices: Array<{ message: { content: string } }> };
    expect(body.choices[0]!.message.content.split(' ').length).toBeGreaterThanOrEqual(15);
    expect(r.health.board.stats(PRIMARY)).toMatchObject({ requests: 1, failed: 0 });
  });

  it('a stream that fails before its first event falls back too', async () => {
    const r = await replica(namespace());
    await control('PUT', '/settings/openai/gpt-sim-mini', { fault: '502' });
    const { end } = await streamed(r, streamRequest(0));
    expect(end).toMatchObject({ provider: 'backup', errorCode: '' });
  });
});

/** A catalog snapshot of text models, each with its routes (`enabled` unless said). */
function snapshot(models: Array<{ id: string; routes: typeof ROUTES; enabled?: boolean; kind?: catalogV1.ModelKind }>): catalogV1.GetSnapshotResponse {
  return create(catalogV1.GetSnapshotResponseSchema, {
    models: models.map((m) => ({ id: m.id, kind: m.kind ?? catalogV1.ModelKind.TEXT, enabled: m.enabled ?? true, provider: m.routes[0]!.provider, upstreamModel: m.routes[0]!.upstreamModel, routes: m.routes })),
  });
}

describe('routes no live model uses', () => {
  it('are the routes of deleted, disabled and non-text models only', () => {
    const live = liveTextRoutes(
      snapshot([
        { id: 'kept', routes: [BACKUP] },
        { id: 'off', routes: [PRIMARY], enabled: false },
        { id: 'image', routes: [{ provider: 'primary', upstreamModel: 'gpt-sim-image', priority: 0, weight: 1 }], kind: catalogV1.ModelKind.IMAGE },
      ]),
    );
    expect(live).toEqual([{ provider: 'backup', upstreamModel: 'compat-sim-chat' }]);
    // A model without routes is served by its provider and upstream model.
    const bare = create(catalogV1.GetSnapshotResponseSchema, { models: [{ id: 'bare', kind: catalogV1.ModelKind.TEXT, enabled: true, provider: 'primary', upstreamModel: 'gpt-sim-mini' }] });
    expect(liveTextRoutes(bare)).toEqual([{ provider: 'primary', upstreamModel: 'gpt-sim-mini' }]);
  });

  it("an open route whose model was deleted is no longer probed and is forgotten by every replica; used again, it starts closed", async () => {
    const ns = namespace();
    const a = await replica(ns);
    const b = await replica(ns);
    let catalog = snapshot([{ id: 'm', routes: ROUTES }]);
    const follower = new CatalogFollower({ load: () => Promise.resolve(catalog), retain: (routes) => a.health.retainOnly(routes), logger: silent, refreshMs: 60_000 });
    await follower.reload();

    await control('PUT', '/settings/openai/gpt-sim-mini', { fault: '500' });
    for (let i = 0; i < 6; i++) expect(await ask(a, `acct-${i % 3}`)).toBe('backup');
    await eventually(() => [stateOf(a), stateOf(b)], ([x, y]) => x !== 'closed' && y !== 'closed');
    expect(stateOf(b)).not.toBe('closed');
    const probes = await eventually(
      async () => (await received('gpt-sim-mini')).filter((id) => id.startsWith(PROBE_REQUEST_PREFIX)),
      (ids) => ids.length > 0,
    );
    expect(probes.length).toBeGreaterThan(0);

    // The model is deleted: the catalog now has the backup's model only.
    catalog = snapshot([{ id: 'other', routes: [BACKUP] }]);
    await follower.reload();
    expect(a.health.board.routes()).toEqual([{ provider: 'backup', upstreamModel: 'compat-sim-chat' }]);
    expect(a.health.list().map((h) => h.provider)).toEqual(['backup']);
    // Gone from the shared bucket, and so from the other replica.
    const entry = await (await new Kvm(a.nc).open(bucketName(ns))).get(kvKey(PRIMARY));
    expect(entry === null || entry.operation !== 'PUT').toBe(true);
    expect(await eventually(() => b.health.board.routes().length, (n) => n === 1)).toBe(1);
    // Past several probe intervals (at most 600 ms here), not one more probe.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await control('DELETE', '/requests');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await received('gpt-sim-mini')).toEqual([]);

    // A model uses the route again: it starts closed, and serves once the provider does.
    await control('DELETE', '/settings');
    catalog = snapshot([{ id: 'm2', routes: ROUTES }]);
    await follower.reload();
    expect(stateOf(a)).toBe('closed');
    expect(await ask(a, 'acct-1')).toBe('primary');
  });
});
