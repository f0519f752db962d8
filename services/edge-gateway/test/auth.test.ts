import { generateApiKey } from '@gw/api-keys';
import { afterEach, describe, expect, it } from 'vitest';
import { AUTH_MESSAGES } from '../src/auth/authenticate.ts';
import { bearer, fakeGateway, wireError, type FakeGateway } from './support/fake-gateway.ts';

let gw: FakeGateway;
afterEach(() => gw?.app.close());

/** Raw header lines, as a client sends them (a header given twice stays twice). */
const headers = (...lines: Array<[string, string]>) => lines;

async function send(method: string, url: string, lines: Array<[string, string]>, payload?: unknown) {
  // light-my-request passes a header whose value is a list as that many header lines.
  const grouped: Record<string, string | string[]> = {};
  for (const [name, value] of lines) {
    const had = grouped[name];
    grouped[name] = had === undefined ? value : [...(Array.isArray(had) ? had : [had]), value];
  }
  const body = payload === undefined ? {} : { payload: JSON.stringify(payload), headers: { ...grouped, 'content-type': 'application/json' } };
  return gw.app.inject({ method: method as 'GET', url, headers: grouped, ...body });
}

describe('credentials (issue 20 finding 6, issue 21 item 7)', () => {
  it('two Authorization headers are 401 auth_missing_or_malformed, even two valid keys', async () => {
    gw = await fakeGateway();
    const res = await send('GET', '/v1/models', headers(['authorization', `Bearer ${gw.keys.a}`], ['authorization', `Bearer ${gw.keys.b}`]));
    expect(res.statusCode).toBe(401);
    expect(res.json().error).toEqual({ code: 'auth_missing_or_malformed', message: AUTH_MESSAGES.repeated });
    expect(gw.lookups()).toBe(0);
  });

  it('x-api-key without Authorization is 401 auth_missing_or_malformed naming the fix', async () => {
    gw = await fakeGateway();
    for (const url of ['/v1/messages', '/v1/messages/count_tokens', '/v1/chat/completions']) {
      const res = await send('POST', url, headers(['x-api-key', gw.keys.a], ['anthropic-version', '2023-06-01']), { model: 'm', max_tokens: 8, messages: [] });
      expect(res.statusCode).toBe(401);
      const { error } = res.json();
      expect(error.code).toBe('auth_missing_or_malformed');
      expect(error.message).toContain('ANTHROPIC_AUTH_TOKEN instead of ANTHROPIC_API_KEY');
      expect(error.message).toContain('authToken');
    }
  });

  it('x-api-key beside a valid Authorization is ignored', async () => {
    gw = await fakeGateway();
    const res = await send('GET', '/v1/models', headers(['x-api-key', 'sk-ant-whatever'], ['authorization', `Bearer ${gw.keys.a}`]));
    expect(res.statusCode).toBe(200);
  });

  it('no header, Basic, a bare key, an OpenAI or Anthropic key: 401 auth_missing_or_malformed, each with its own message', async () => {
    gw = await fakeGateway();
    const cases: Record<string, Array<[string, string]>> = {
      'no header': [],
      Basic: [['authorization', 'Basic dXNlcjpwYXNz']],
      'a bare key': [['authorization', generateApiKey()]],
      'an OpenAI key': [['authorization', 'Bearer sk-proj-abc123']],
      'an Anthropic key': [['authorization', 'Bearer sk-ant-api03-xyz']],
      'x-api-key only (an Anthropic client)': [['x-api-key', gw.keys.a]],
    };
    // One line a case: the status, the retry header and the body as sent.
    const answers: Record<string, string> = {};
    for (const [name, lines] of Object.entries(cases)) {
      const res = await send('GET', '/v1/models', lines);
      answers[name] = `${res.statusCode} x-should-retry=${res.headers['x-should-retry']} ${res.body}`;
    }
    expect(answers).toMatchInlineSnapshot(`
      {
        "Basic": "401 x-should-retry=false {"error":{"code":"auth_missing_or_malformed","message":"Send the API key as \`Authorization: Bearer <API_KEY>\`."}}",
        "a bare key": "401 x-should-retry=false {"error":{"code":"auth_missing_or_malformed","message":"Send the API key as \`Authorization: Bearer <API_KEY>\`."}}",
        "an Anthropic key": "401 x-should-retry=false {"error":{"code":"auth_missing_or_malformed","message":"The bearer token is not an API key of this gateway (its keys begin with \`gwk_\`). Send the API key as \`Authorization: Bearer <API_KEY>\`."}}",
        "an OpenAI key": "401 x-should-retry=false {"error":{"code":"auth_missing_or_malformed","message":"The bearer token is not an API key of this gateway (its keys begin with \`gwk_\`). Send the API key as \`Authorization: Bearer <API_KEY>\`."}}",
        "no header": "401 x-should-retry=false {"error":{"code":"auth_missing_or_malformed","message":"Send the API key as \`Authorization: Bearer <API_KEY>\`."}}",
        "x-api-key only (an Anthropic client)": "401 x-should-retry=false {"error":{"code":"auth_missing_or_malformed","message":"This gateway reads the API key from \`Authorization: Bearer <API_KEY>\`, not from \`x-api-key\`. Claude Code: set ANTHROPIC_AUTH_TOKEN instead of ANTHROPIC_API_KEY. Anthropic SDKs (and the AI SDK, LangChain): pass the key as \`authToken\` instead of \`apiKey\`."}}",
      }
    `);
    expect(gw.lookups()).toBe(0);
  });

  it('the foreign-key message says it is not a key of this gateway', () => {
    expect(AUTH_MESSAGES.foreign).toMatch(/not an API key of this gateway \(its keys begin with `gwk_`\)/);
  });
});

describe('Idempotency-Key (issue 20 finding 6)', () => {
  // Valid on both routes: the header is read after the body's schema.
  const image = { model: 'img', prompt: 'a cat', duration_seconds: 4 };
  it.each(['/v1/images/generations', '/v1/videos/generations'])('two Idempotency-Key headers on %s are 400 invalid_request, not one key "a1, a2"', async (url) => {
    gw = await fakeGateway();
    const res = await send('POST', url, headers(['authorization', `Bearer ${gw.keys.a}`], ['idempotency-key', 'a1'], ['idempotency-key', 'a2']), image);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toEqual({ code: 'invalid_request', message: expect.stringContaining('sent once') });
  });

  it.each([
    ['/v1/images/generations', image],
    ['/v1/videos/generations', { model: 'vid', prompt: 'a cat', duration_seconds: 4 }],
  ])('a body with a lone surrogate under an Idempotency-Key on %s is 400 invalid_request (it has no RFC 8785 form)', async (url, body) => {
    gw = await fakeGateway();
    const res = await send('POST', url, headers(['authorization', `Bearer ${gw.keys.a}`], ['idempotency-key', 'a1']), { ...body, prompt: 'a \ud800 cat' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toEqual({ code: 'invalid_request', message: expect.stringContaining('unpaired surrogate') });
  });

  it('one Idempotency-Key goes on to the next step (here billing refusing for funds)', async () => {
    gw = await fakeGateway();
    const res = await send('POST', '/v1/images/generations', headers(['authorization', `Bearer ${gw.keys.a}`], ['idempotency-key', 'a1']), image);
    expect(res.json().error.code).toBe('insufficient_balance');
  });
});

describe('failed key lookups (issue 20 finding 9)', () => {
  it('an unknown key is looked up once in its negative TTL, and one address may cause only so many lookups a minute', async () => {
    gw = await fakeGateway();
    expect((await gw.app.inject({ method: 'GET', url: '/v1/models', headers: bearer(gw.keys.a) })).statusCode).toBe(200);
    const unknown = generateApiKey();
    for (let i = 0; i < 5; i++) {
      const res = await gw.app.inject({ method: 'GET', url: '/v1/models', headers: bearer(unknown) });
      expect(res.json().error.code).toBe('auth_invalid');
    }
    expect(gw.lookups()).toBe(2); // key a, then the unknown key once
    // 29 more random keys: each a lookup (30 failures a minute by default).
    for (let i = 0; i < 29; i++) await gw.app.inject({ method: 'GET', url: '/v1/models', headers: bearer(generateApiKey()) });
    const lookupsBefore = gw.lookups();
    const throttled = await gw.app.inject({ method: 'GET', url: '/v1/models', headers: bearer(generateApiKey()) });
    // Retry-After counts down to the end of the minute; the body says the same number.
    const retryAfter = Number(throttled.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(throttled.json().error.retry_after_seconds).toBe(retryAfter);
    // The seconds left (in the header, the body and its message) shown as <n>: they count down.
    const answer = wireError(throttled) as { 'retry-after': unknown; body: { error: { message: string; retry_after_seconds: unknown } } };
    expect(answer['retry-after']).toBe(String(retryAfter));
    answer['retry-after'] = '<n>';
    answer.body.error.retry_after_seconds = '<n>';
    answer.body.error.message = answer.body.error.message.replace(`retry in ${retryAfter} s.`, 'retry in <n> s.');
    expect(answer).toMatchInlineSnapshot(`
      {
        "body": {
          "error": {
            "code": "rate_limit_exceeded",
            "limit_type": "failed_authentications",
            "message": "Too many requests with API keys that do not exist came from this address. Check the key; retry in <n> s.",
            "retry_after_seconds": "<n>",
          },
        },
        "retry-after": "<n>",
        "status": 429,
        "x-should-retry": null,
      }
    `);
    expect(gw.lookups()).toBe(lookupsBefore);
    // Another address is not throttled; a valid key already cached still works from this one.
    const other = await gw.app.inject({ method: 'GET', url: '/v1/models', headers: bearer(generateApiKey()), remoteAddress: '10.0.0.9' });
    expect(other.json().error.code).toBe('auth_invalid');
    expect((await gw.app.inject({ method: 'GET', url: '/v1/models', headers: bearer(gw.keys.a) })).statusCode).toBe(200);
  });
});

const from = (client: string) => ({ ...bearer(generateApiKey()), 'x-forwarded-for': client });

describe('client address behind a proxy (GATEWAY_TRUST_PROXY)', () => {
  it('failed lookups are counted per forwarded client, not per proxy, when the proxy is trusted', async () => {
    gw = await fakeGateway({ deps: { trustProxy: ['127.0.0.1'] }, keyCache: { failuresPerMinute: 2 } });
    for (let i = 0; i < 2; i++) await gw.app.inject({ method: 'GET', url: '/v1/models', headers: from('203.0.113.7'), remoteAddress: '127.0.0.1' });
    const third = await gw.app.inject({ method: 'GET', url: '/v1/models', headers: from('203.0.113.7'), remoteAddress: '127.0.0.1' });
    expect(third.json().error.code).toBe('rate_limit_exceeded');
    const other = await gw.app.inject({ method: 'GET', url: '/v1/models', headers: from('198.51.100.4'), remoteAddress: '127.0.0.1' });
    expect(other.json().error.code).toBe('auth_invalid');
    // An untrusted peer's X-Forwarded-For is not believed: it counts as itself.
    const direct = await gw.app.inject({ method: 'GET', url: '/v1/models', headers: from('198.51.100.4'), remoteAddress: '10.9.9.9' });
    expect(direct.json().error.code).toBe('auth_invalid');
  });
});
