import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { create } from '@bufbuild/protobuf';
import { textV1 } from '@gw/contracts';
import { FallbackRouter, ProviderRegistry, RouteHealthBoard } from '@gw/providers';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildSimulator } from '../../provider-simulator/src/app.ts';
import { generate, generateStream, type TextDeps } from '../src/domain/text-generation.ts';

// The text service's request and stream handling against the provider simulator: the gateway's
// translation is sent as it is, the usage-bearing frame leaves a slot for the gateway's `service`
// object, and failure events come from the translator that holds the stream's state.
const sim = buildSimulator({ logger: false });
let providers: ProviderRegistry;
let deps: TextDeps;
const ROUTE = { provider: 'openai', upstreamModel: 'gpt-sim-mini', priority: 0, weight: 1 };

beforeAll(async () => {
  await sim.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(sim.server.address() as AddressInfo).port}`;
  providers = new ProviderRegistry([{ name: 'openai', kind: 'openai', baseUrl: `${url}/openai/v1`, apiKey: 'sim-openai-key' }]);
  deps = { providers, router: new FallbackRouter({ health: new RouteHealthBoard({}) }), now: Date.now, firstByteTimeoutMs: 10_000 };
});
afterEach(async () => {
  await sim.inject({ method: 'DELETE', url: '/_sim/requests' });
});
afterAll(async () => {
  await providers.close();
  await sim.close();
});

/** The last body the simulator received. */
async function lastSent(): Promise<Record<string, unknown>> {
  const res = await sim.inject({ method: 'GET', url: '/_sim/requests?provider=openai&limit=1' });
  return (res.json() as { requests: Array<{ body: Record<string, unknown> }> }).requests.at(-1)!.body;
}

const json = (bytes: Uint8Array | Buffer) => Buffer.from(bytes).toString('utf8');
const SERVICE = { credit_charged: 3, balance_after: 97 };
/** A body with the gateway's `service` object spliced in at its slot, as the gateway does. */
const filled = (data: Uint8Array, at: number) => {
  const bytes = Buffer.from(data);
  return JSON.parse(json(Buffer.concat([bytes.subarray(0, at), Buffer.from(JSON.stringify(SERVICE)), bytes.subarray(at)]))) as Record<string, unknown>;
};

const upstream = (dialect: textV1.Dialect, body: object) => [{ dialect, upstreamModel: '', body: Buffer.from(JSON.stringify(body)) }];

/** A stream's frames (data as text) and its end. */
async function drain(req: textV1.GenerateStreamRequest): Promise<{ frames: textV1.Frame[]; end: textV1.StreamEnd }> {
  const frames: textV1.Frame[] = [];
  let end: textV1.StreamEnd | undefined;
  for await (const { item } of generateStream(deps, req, new AbortController().signal)) {
    if (item.case === 'frame') frames.push(item.value);
    if (item.case === 'frames') frames.push(...item.value.frames);
    if (item.case === 'end') end = item.value;
  }
  return { frames, end: end! };
}

describe('the gateway translates; the text service sends that translation', () => {
  it('sends the upstream body as it is but for the route model, without the client body; a lone route is asked for the complete answer', async () => {
    // A field only the gateway's translation has: the text service did not translate again.
    const body = { model: 'from-the-gateway', messages: [{ role: 'user', content: 'Hello' }], max_completion_tokens: 77, user: 'translated-at-the-edge' };
    const res = await generate(
      deps,
      create(textV1.GenerateRequestSchema, { requestId: randomUUID(), dialect: textV1.Dialect.CHAT, publicModel: 'm', routes: [ROUTE], upstream: upstream(textV1.Dialect.CHAT, body) }),
      new AbortController().signal,
    );
    const sent = await lastSent();
    expect(sent).toMatchObject({ ...body, model: 'gpt-sim-mini' });
    expect(sent.stream).not.toBe(true);
    expect(sent).not.toHaveProperty('stream_options');
    // The answer leaves a slot for the gateway's `service` object at the top level.
    const answer = filled(res.body, res.serviceAt);
    expect(answer).toMatchObject({ object: 'chat.completion', model: 'm', service: SERVICE });
    expect(Object.keys(answer).at(-1)).toBe('service');
  });

  it('asks a route with another after it for a stream (the adapter adds the stream fields), and the last route for the complete answer', async () => {
    const body = { model: 'x', messages: [{ role: 'user', content: 'Hello' }] };
    // The first route's model fails retryable, so the second one answers.
    const first = { ...ROUTE, upstreamModel: 'gpt-sim-mini', priority: 0 };
    const second = { ...ROUTE, upstreamModel: 'gpt-sim-mini-2', priority: 1 };
    await sim.inject({ method: 'PUT', url: '/_sim/models/openai', payload: ['gpt-sim-mini', 'gpt-sim-mini-2'] });
    await sim.inject({ method: 'PUT', url: '/_sim/settings/openai/gpt-sim-mini', payload: { fault: '503' } });
    try {
      const res = await generate(
        deps,
        create(textV1.GenerateRequestSchema, { requestId: randomUUID(), dialect: textV1.Dialect.CHAT, publicModel: 'm', routes: [first, second], upstream: upstream(textV1.Dialect.CHAT, body) }),
        new AbortController().signal,
      );
      expect(filled(res.body, res.serviceAt)).toMatchObject({ object: 'chat.completion', model: 'm' });
    } finally {
      await sim.inject({ method: 'DELETE', url: '/_sim/settings/openai/gpt-sim-mini' });
      await sim.inject({ method: 'DELETE', url: '/_sim/models/openai' });
    }
    const sent = (await sim.inject({ method: 'GET', url: '/_sim/requests?provider=openai&limit=2' })).json() as { requests: Array<{ body: Record<string, unknown> }> };
    const [toFirst, toSecond] = sent.requests.map((r) => r.body);
    expect(toFirst).toMatchObject({ model: 'gpt-sim-mini', stream: true, stream_options: { include_usage: true } });
    expect(toSecond).toMatchObject({ model: 'gpt-sim-mini-2' });
    expect(toSecond!.stream).not.toBe(true);
  });

  it('translates for itself from the client body where the gateway sent no translation for the route (a provider the catalog did not describe)', async () => {
    const client = { model: 'm', messages: [{ role: 'user', content: 'Hello' }] };
    const res = await generate(
      deps,
      create(textV1.GenerateRequestSchema, { requestId: randomUUID(), dialect: textV1.Dialect.CHAT, publicModel: 'm', routes: [ROUTE], body: Buffer.from(JSON.stringify(client)), defaultMaxOutputTokens: 55 }),
      new AbortController().signal,
    );
    expect(await lastSent()).toMatchObject({ model: 'gpt-sim-mini', max_completion_tokens: 55 });
    expect(filled(res.body, res.serviceAt).service).toEqual(SERVICE);
  });

  it('refuses a route it has no body for when the gateway sent no client body either', async () => {
    const req = create(textV1.GenerateRequestSchema, { requestId: randomUUID(), dialect: textV1.Dialect.CHAT, publicModel: 'm', routes: [ROUTE], upstream: upstream(textV1.Dialect.MESSAGES, { model: 'x' }) });
    await expect(generate(deps, req, new AbortController().signal)).rejects.toMatchObject({ code: 'upstream_error' });
  });
});

describe('streams: frames as the gateway sends them', () => {
  it("a chat stream's usage chunk has the slot; a finished stream's end carries the events for a settle that fails", async () => {
    const body = { model: 'x', stream: true, messages: [{ role: 'user', content: 'Hello' }] };
    const { frames, end } = await drain(
      create(textV1.GenerateStreamRequestSchema, { requestId: randomUUID(), dialect: textV1.Dialect.CHAT, publicModel: 'm', routes: [ROUTE], upstream: upstream(textV1.Dialect.CHAT, body) }),
    );
    const billed = frames.findIndex((f) => f.usageBearing);
    expect(filled(frames[billed]!.data, frames[billed]!.serviceAt)).toMatchObject({ choices: [], usage: { prompt_tokens: expect.any(Number) }, service: SERVICE });
    expect(json(frames.at(-1)!.data)).toBe('[DONE]');
    expect(end.errorCode).toBe('');
    // The usage chunk comes before `[DONE]` and is final: its frame brings the usage, so the gateway
    // can settle while the provider's stream closes.
    expect(end.usage!.billableTokens).toBeGreaterThan(0n);
    expect(frames[billed]!.usage).toEqual(end.usage);
    expect(end.failureFrames.map((f) => JSON.parse(json(f.data)) as unknown)).toEqual([
      { error: { message: 'Billing did not confirm the charge of this request, so it is not charged: its hold is given back.', type: 'server_error', code: 'upstream_error' } },
    ]);
  });

  it('a responses stream failing upstream ends with failure events that continue its numbering and fail the response it created', async () => {
    const body = { model: 'x', stream: true, input: 'go [[sim:fault=stream_error]]', max_output_tokens: 64 };
    const { frames, end } = await drain(
      create(textV1.GenerateStreamRequestSchema, {
        requestId: randomUUID(),
        dialect: textV1.Dialect.RESPONSES,
        publicModel: 'm',
        routes: [ROUTE],
        body: Buffer.from(JSON.stringify(body)),
        upstream: upstream(textV1.Dialect.RESPONSES, body),
      }),
    );
    expect(end.errorCode).toBe('upstream_error');
    const sent = frames.map((f) => JSON.parse(json(f.data)) as { sequence_number: number; response?: { id: string } });
    const failure = end.failureFrames.map((f) => [f.event, JSON.parse(json(f.data))] as const);
    expect(failure.map(([event]) => event)).toEqual(['error', 'response.failed']);
    expect(failure[0]![1]).toMatchObject({ code: 'upstream_error', message: end.errorMessage, sequence_number: sent.at(-1)!.sequence_number + 1 });
    expect(failure[1]![1]).toMatchObject({ sequence_number: sent.at(-1)!.sequence_number + 2, response: { id: sent[0]!.response!.id, status: 'failed', max_output_tokens: 64 } });
  });
});
