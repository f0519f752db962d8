import { create } from '@bufbuild/protobuf';
import { billingV1, catalogV1 } from '@gw/contracts';
import { afterEach, describe, expect, it } from 'vitest';
import { chatAnswer, fakeGateway, type FakeGateway } from './support/fake-gateway.ts';

/** The edge's side of "one request id end to end" and its refusals that carry what to do next. */
let gw: FakeGateway;
afterEach(async () => {
  await gw?.app.close();
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A gateway whose billing records what it was asked; text answers succeed. */
async function recording(): Promise<{ calls: Array<{ method: string; requestId: string; clientRequestId?: string }> }> {
  const calls: Array<{ method: string; requestId: string; clientRequestId?: string }> = [];
  gw = await fakeGateway({
    deps: {
      money: {
        authorize: async (req: billingV1.AuthorizeRequest) => {
          calls.push({ method: 'authorize', requestId: req.requestId, clientRequestId: req.clientRequestId });
          return create(billingV1.AuthorizeResponseSchema, {});
        },
        settle: async (req: billingV1.SettleRequest) => {
          calls.push({ method: 'settle', requestId: req.requestId });
          return create(billingV1.SettleResponseSchema, { creditCharged: 1n, balanceAfter: 99n });
        },
        release: async (req: billingV1.ReleaseRequest) => {
          calls.push({ method: 'release', requestId: req.requestId });
          return create(billingV1.ReleaseResponseSchema, {});
        },
      },
      generate: { generate: async () => chatAnswer(), generateStream: () => (async function* () {})() },
    } as never,
  });
  return { calls };
}

const chat = (headers: Record<string, string> = {}) =>
  gw.app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: { authorization: `Bearer ${gw.keys.a}`, 'content-type': 'application/json', ...headers },
    payload: { model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
  });

describe('request ids', () => {
  it("a text request's hold and settlement carry the x-request-id the client is shown; the client's own id goes beside it", async () => {
    const { calls } = await recording();
    const res = await chat({ 'x-request-id': 'client-trace-42' });
    expect(res.statusCode).toBe(200);
    const id = String(res.headers['x-request-id']);
    expect(id).toMatch(UUID);
    expect(calls).toEqual([
      { method: 'authorize', requestId: id, clientRequestId: 'client-trace-42' },
      { method: 'settle', requestId: id },
    ]);
  });

  it('two requests sending one client id get ids of their own; a malformed client id is not recorded', async () => {
    const { calls } = await recording();
    const first = await chat({ 'x-request-id': 'same-id-twice' });
    const second = await chat({ 'x-request-id': 'same-id-twice' });
    expect(first.headers['x-request-id']).not.toBe(second.headers['x-request-id']);
    await chat({ 'x-request-id': 'has spaces in it' });
    expect(calls.filter((c) => c.method === 'authorize').map((c) => c.clientRequestId)).toEqual(['same-id-twice', 'same-id-twice', '']);
  });
});

describe('refusals that say what to do', () => {
  it('maintenance and paused AI requests answer 503 with Retry-After', async () => {
    gw = await fakeGateway();
    gw.deps.switches.set({ maintenance: true, aiRequestsDisabled: false });
    let res = await chat();
    expect([res.statusCode, res.json().error.code, res.headers['retry-after']]).toEqual([503, 'system_maintenance', '60']);
    gw.deps.switches.set({ maintenance: false, aiRequestsDisabled: true });
    res = await chat();
    expect([res.statusCode, res.json().error.code, res.headers['retry-after']]).toEqual([503, 'ai_requests_disabled', '60']);
  });

  it('a stale catalog answers 503 provider_catalog_stale with Retry-After', async () => {
    gw = await fakeGateway();
    gw.deps.catalogCache.replace(
      create(catalogV1.GetSnapshotResponseSchema, {
        models: [{ id: 'm', kind: catalogV1.ModelKind.TEXT, capabilities: ['chat/completions'], priceCreditPerUnit: 100n, enabled: true, provider: 'p-chat', upstreamModel: 'm-up', limits: { maxOutputTokens: 64 } }],
        providers: [{ provider: 'p-chat', lastSuccessUnixMs: 1n, servedModels: ['m-up'] }],
        maxSyncAgeMs: 1000n,
        protocols: [{ provider: 'p-chat', textDialects: ['chat'] }],
      }),
    );
    const res = await chat();
    expect([res.statusCode, res.json().error.code, res.headers['retry-after']]).toEqual([503, 'provider_catalog_stale', '120']);
  });

  it('a multipart /images/edits is shown the JSON image form to send', async () => {
    gw = await fakeGateway();
    const boundary = 'b0undary';
    const res = await gw.app.inject({
      method: 'POST',
      url: '/v1/images/edits',
      headers: { authorization: `Bearer ${gw.keys.a}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nimg\r\n--${boundary}--\r\n`,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('invalid_request');
    expect(res.json().error.message).toMatch(/^\/images\/edits takes a JSON body \(Content-Type: application\/json\), not multipart\/form-data/);
    expect(res.json().error.message).toContain('"image":{"b64_json":"<base64>","mime_type":"image/png"}');
  });
});
