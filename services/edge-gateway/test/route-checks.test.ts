import { GatewayError } from '@gw/errors';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bearer, fakeGateway, wireError, type FakeGateway } from './support/fake-gateway.ts';

/**
 * Steps 1 to 3 of the order of checks (DECISIONS.md) over every route of the public API: which of
 * auth, the account rate limit and the operator switches each route runs, in which order, and
 * that nothing after a failed step runs (route-checks.ts applies them as the routes declare).
 */

let gw: FakeGateway;
afterEach(() => gw?.app.close());

type Kind = 'plain' | 'generation' | 'deferred';
interface Route {
  method: 'GET' | 'POST';
  url: string;
  /** What the route itself answers to a body missing every field (or to its GET) when no check refuses it. */
  own: { status: number; code?: string };
  /** plain: auth and rate limit; generation: and the switches; deferred: the rate limit counted by Authorize, or before a failure. */
  kind: Kind;
}

const HEX = '0123456789abcdef'.repeat(2);
const ROUTES: Route[] = [
  { method: 'GET', url: '/v1/models', own: { status: 200 }, kind: 'plain' },
  { method: 'GET', url: '/v1/models/m', own: { status: 200 }, kind: 'plain' },
  { method: 'GET', url: `/v1/images/jobs/imgjob_${HEX}`, own: { status: 404, code: 'not_found' }, kind: 'plain' },
  { method: 'GET', url: `/v1/videos/generations/vidjob_${HEX}`, own: { status: 404, code: 'not_found' }, kind: 'plain' },
  { method: 'GET', url: `/v1/videos/generations/vidjob_${HEX}/content`, own: { status: 404, code: 'not_found' }, kind: 'plain' },
  { method: 'POST', url: '/v1/messages/count_tokens', own: { status: 400, code: 'invalid_request' }, kind: 'generation' },
  { method: 'POST', url: '/v1/images/generations', own: { status: 400, code: 'invalid_request' }, kind: 'generation' },
  { method: 'POST', url: '/v1/images/edits', own: { status: 400, code: 'invalid_request' }, kind: 'generation' },
  { method: 'POST', url: '/v1/videos/generations', own: { status: 400, code: 'invalid_request' }, kind: 'generation' },
  { method: 'POST', url: '/v1/chat/completions', own: { status: 400, code: 'invalid_request' }, kind: 'deferred' },
  { method: 'POST', url: '/v1/messages', own: { status: 400, code: 'invalid_request' }, kind: 'deferred' },
  { method: 'POST', url: '/v1/responses', own: { status: 400, code: 'invalid_request' }, kind: 'deferred' },
  { method: 'POST', url: '/v1/chat', own: { status: 400, code: 'invalid_request' }, kind: 'deferred' },
];

/** The checks each kind of route runs when none refuses and its body is then refused: in call order. */
const CHECKS: Record<Kind, string[]> = {
  plain: ['auth', 'rate limit'],
  generation: ['auth', 'rate limit', 'switches'],
  // The rate limit is billing Authorize's to count; a request failing before it counts it then.
  deferred: ['auth', 'switches', 'rate limit'],
};

const overLimit = () => new GatewayError('rate_limit_exceeded', 'Too many requests for this account.', { limit_type: 'requests_per_minute', retry_after_seconds: 1 });

/** A gateway whose three checks are watched; returns the names of the checks run, in order. */
async function watched() {
  gw = await fakeGateway();
  const spies = {
    auth: vi.spyOn(gw.deps.keys, 'get'),
    'rate limit': vi.spyOn(gw.deps.billing, 'checkRateLimit'),
    switches: vi.spyOn(gw.deps.switches, 'assertGenerationAllowed'),
  };
  const ran = () =>
    Object.entries(spies)
      .flatMap(([name, spy]) => spy.mock.invocationCallOrder.map((order) => ({ name, order })))
      .sort((a, b) => a.order - b.order)
      .map((c) => c.name);
  return { spies, ran };
}

function send(route: Route, opts: { key?: boolean; payload?: string } = {}) {
  const headers = { ...(opts.key === false ? {} : bearer(gw.keys.a)), ...(route.method === 'POST' ? { 'content-type': 'application/json' } : {}) };
  return gw.app.inject({ method: route.method, url: route.url, headers, ...(route.method === 'POST' ? { payload: opts.payload ?? '{}' } : {}) });
}

/** The route's answers with maintenance on, then with AI requests paused; each checks its checks ran in order. */
async function underEachSwitch(route: Route) {
  const answers = [];
  for (const switches of [
    { maintenance: true, aiRequestsDisabled: false },
    { maintenance: false, aiRequestsDisabled: true },
  ]) {
    const { ran } = await watched();
    gw.deps.switches.set(switches);
    const res = await send(route);
    expect(ran()).toEqual(CHECKS[route.kind]);
    answers.push(wireError(res));
    await gw.app.close();
  }
  return answers;
}

describe('the route checks (order of checks, steps 1 to 3)', () => {
  it('the table covers every route of the API', async () => {
    gw = await fakeGateway();
    await gw.app.ready();
    const doc = gw.app.swagger() as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path.replace(/\{[^}]+\}/g, ':p')}`));
    const table = ROUTES.map((r) => `${r.method} ${r.url.replace(/(imgjob|vidjob)_[0-9a-f]{32}/, ':p').replace('/models/m', '/models/:p')}`);
    expect(new Set(table)).toEqual(new Set(documented));
  });

  describe.each(ROUTES)('$method $url ($kind)', (route) => {
    it('no check refusing: runs its checks in order, then answers itself', async () => {
      const { ran } = await watched();
      const res = await send(route);
      expect([res.statusCode, res.json().error?.code]).toEqual([route.own.status, route.own.code]);
      expect(ran()).toEqual(CHECKS[route.kind]);
    });

    it('no key: 401, and no other check runs', async () => {
      const { spies, ran } = await watched();
      spies['rate limit'].mockRejectedValue(overLimit());
      gw.deps.switches.set({ maintenance: true, aiRequestsDisabled: true });
      const res = await send(route, { key: false });
      expect(wireError(res)).toMatchInlineSnapshot(`
        {
          "body": {
            "error": {
              "code": "auth_missing_or_malformed",
              "message": "Send the API key as \`Authorization: Bearer <API_KEY>\`.",
            },
          },
          "retry-after": null,
          "status": 401,
          "x-should-retry": "false",
        }
      `);
      expect(ran()).toEqual([]);
    });

    it('over the rate limit, under maintenance, with a bad body: 429, nothing after it runs', async () => {
      const { spies, ran } = await watched();
      spies['rate limit'].mockRejectedValue(overLimit());
      gw.deps.switches.set({ maintenance: true, aiRequestsDisabled: false });
      const res = await send(route);
      expect(wireError(res)).toMatchInlineSnapshot(`
        {
          "body": {
            "error": {
              "code": "rate_limit_exceeded",
              "limit_type": "requests_per_minute",
              "message": "Too many requests for this account.",
              "retry_after_seconds": 1,
            },
          },
          "retry-after": "1",
          "status": 429,
          "x-should-retry": null,
        }
      `);
      // A deferred rate limit is counted once the switches refused; its 429 wins all the same.
      expect(ran()).toEqual(route.kind === 'deferred' ? CHECKS.deferred : ['auth', 'rate limit']);
    });

    it('either switch on, with a bad body: generation routes 503, others not blocked', async () => {
      const answers = await underEachSwitch(route);
      const blocked = route.kind !== 'plain';
      expect(answers.map((a) => [a.status, a['retry-after'], (a.body as { error?: { code: string } }).error?.code])).toEqual(
        blocked
          ? [
              [503, '60', 'system_maintenance'],
              [503, '60', 'ai_requests_disabled'],
            ]
          : [
              [route.own.status, null, route.own.code],
              [route.own.status, null, route.own.code],
            ],
      );
    });
  });

  describe.each(ROUTES.filter((r) => r.kind !== 'plain'))('$method $url ($kind)', (route) => {
    it('the 503 of either switch, on the wire', async () => {
      const [maintenance, aiRequestsOff] = await underEachSwitch(route);
      expect({ maintenance, 'ai requests off': aiRequestsOff }).toMatchInlineSnapshot(`
        {
          "ai requests off": {
            "body": {
              "error": {
                "code": "ai_requests_disabled",
                "message": "AI requests are paused by an operator. Nothing was charged; retry later.",
              },
            },
            "retry-after": "60",
            "status": 503,
            "x-should-retry": null,
          },
          "maintenance": {
            "body": {
              "error": {
                "code": "system_maintenance",
                "message": "The service is under maintenance. Nothing was charged; retry later.",
              },
            },
            "retry-after": "60",
            "status": 503,
            "x-should-retry": null,
          },
        }
      `);
    });
  });

  describe.each(ROUTES.filter((r) => r.method === 'POST'))('$method $url ($kind)', (route) => {
    it('a body that is not JSON: the switches and the rate limit still come first', async () => {
      const { spies } = await watched();
      gw.deps.switches.set({ maintenance: true, aiRequestsDisabled: false });
      let res = await send(route, { payload: '{not json' });
      expect([res.statusCode, res.json().error.code]).toEqual([503, 'system_maintenance']);
      spies['rate limit'].mockRejectedValue(overLimit());
      res = await send(route, { payload: '{not json' });
      expect([res.statusCode, res.json().error.code]).toEqual([429, 'rate_limit_exceeded']);
      gw.deps.switches.set({ maintenance: false, aiRequestsDisabled: false });
      res = await send(route, { payload: '{not json' });
      expect([res.statusCode, res.json().error.code]).toEqual([429, 'rate_limit_exceeded']);
      spies['rate limit'].mockReset();
      res = await send(route, { payload: '{not json' });
      expect(wireError(res)).toMatchInlineSnapshot(`
        {
          "body": {
            "error": {
              "code": "invalid_request",
              "message": "The request body is not valid JSON.",
            },
          },
          "retry-after": null,
          "status": 400,
          "x-should-retry": "false",
        }
      `);
    });
  });

  it('a valid text request has its rate limit counted by Authorize, not by a call of its own', async () => {
    const { spies } = await watched();
    const authorize = vi.fn<(req: { checkRateLimit: boolean }) => Promise<never>>(async () => {
      throw new GatewayError('insufficient_balance', 'Not enough credits.');
    });
    Object.assign(gw.deps.money, { authorize });
    const res = await gw.app.inject({ method: 'POST', url: '/v1/chat/completions', headers: bearer(gw.keys.a), payload: { model: 'm', messages: [{ role: 'user', content: 'hi' }] } });
    expect(wireError(res)).toMatchInlineSnapshot(`
      {
        "body": {
          "error": {
            "code": "insufficient_balance",
            "message": "Not enough credits.",
          },
        },
        "retry-after": null,
        "status": 402,
        "x-should-retry": "false",
      }
    `);
    expect(authorize.mock.calls.map(([req]) => req.checkRateLimit)).toEqual([true]);
    // Authorize refused for funds, after counting the request: not counted a second time.
    expect(spies['rate limit']).not.toHaveBeenCalled();
  });
});

describe('metering holds (generation/metering.ts)', () => {
  type Authorize = { checkRateLimit: boolean; requestId: string; clientRequestId: string; text: boolean; worstUnits: bigint; endpoint: string };
  const refuse = () =>
    vi.fn<(req: Authorize) => Promise<never>>(async () => {
      throw new GatewayError('insufficient_balance', 'Not enough credits.');
    });

  it('an image hold is the media job\'s, with the client\'s id beside it; its rate limit was counted before', async () => {
    const { spies } = await watched();
    const authorize = refuse();
    const jobId = `imgjob_${HEX}`;
    Object.assign(gw.deps.money, { authorize });
    Object.assign(gw.deps.media, { beginImageJob: async () => ({ jobId }), abandonImageJob: async () => ({}) });
    const res = await gw.app.inject({ method: 'POST', url: '/v1/images/generations', headers: { ...bearer(gw.keys.a), 'x-request-id': 'client-id-1' }, payload: { model: 'img', prompt: 'a cat', n: 2 } });
    expect([res.statusCode, res.json().error.code, res.headers['x-request-id']]).toEqual([402, 'insufficient_balance', jobId]);
    expect(authorize.mock.calls.map(([req]) => req)).toEqual([
      expect.objectContaining({ checkRateLimit: false, requestId: jobId, clientRequestId: 'client-id-1', text: false, worstUnits: 2n, endpoint: 'images/generations' }),
    ]);
    expect(spies['rate limit']).toHaveBeenCalledTimes(1);
  });

  it('a text hold is the request\'s, of the worst case in tokens', async () => {
    await watched();
    const authorize = refuse();
    Object.assign(gw.deps.money, { authorize });
    const res = await gw.app.inject({ method: 'POST', url: '/v1/chat/completions', headers: bearer(gw.keys.a), payload: { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] } });
    expect(authorize.mock.calls.map(([req]) => req)).toEqual([expect.objectContaining({ requestId: res.headers['x-request-id'], clientRequestId: '', text: true, endpoint: 'chat/completions' })]);
    expect(authorize.mock.calls[0]![0].worstUnits).toBeGreaterThan(10n);
  });
});
