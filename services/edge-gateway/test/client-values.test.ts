import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quoteClientValue } from '../src/http/quote.ts';
import { MAX_MESSAGE_CHARS } from '../src/plugins/error-handler.ts';
import { bearer, fakeGateway, type FakeGateway } from './support/fake-gateway.ts';

let gw: FakeGateway;
beforeAll(async () => {
  gw = await fakeGateway();
});
afterAll(() => gw.app.close());

const post = (url: string, payload: unknown) => gw.app.inject({ method: 'POST', url, headers: bearer(gw.keys.a), payload: payload as object });

describe('client values in messages (issue 20 finding 7)', () => {
  it('quoteClientValue keeps 64 characters, counted by code point, then …', () => {
    expect(quoteClientValue('gpt-4o')).toBe('"gpt-4o"');
    expect(quoteClientValue('x'.repeat(64))).toBe(`"${'x'.repeat(64)}"`);
    expect(quoteClientValue('x'.repeat(100_000))).toBe(`"${'x'.repeat(64)}…"`);
    expect(quoteClientValue('🐱'.repeat(70))).toBe(`"${'🐱'.repeat(64)}…"`);
    expect(quoteClientValue('a\nb')).toBe('"a\\nb"');
  });

  it.each(['/v1/chat/completions', '/v1/messages', '/v1/responses', '/v1/chat', '/v1/messages/count_tokens'])('unknown_model on %s quotes a 100 KB model name as a short prefix', async (url) => {
    const res = await post(url, { model: 'y'.repeat(100_000), max_tokens: 8, messages: [{ role: 'user', content: 'hi' }], input: 'hi' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toEqual({ code: 'unknown_model', message: `The model "${'y'.repeat(64)}…" does not exist.` });
  });

  it('a body with thousands of problems gets a message of bounded length', async () => {
    const messages = Array.from({ length: 5_000 }, () => ({ role: 'wizard', content: 7 }));
    const res = await post('/v1/chat', { model: 'm', messages });
    expect(res.statusCode).toBe(400);
    const { message } = res.json().error;
    expect(message.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS + 10);
    expect(message).toMatch(/^Invalid request: messages\[0\]\.role must be one of/);
    expect(message).toMatch(/… \(cut\)$/);
  });
});

describe('prototype keys (issue 20 finding 8)', () => {
  it.each(['{"model":"m","__proto__":{"x":1},"messages":[{"role":"user","content":"hi"}]}', '{"model":"m","messages":[{"role":"user","content":"hi","__proto__":{}}]}'])(
    'a "__proto__" key anywhere is 400 invalid_request naming it: %s',
    async (payload) => {
      const res = await gw.app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...bearer(gw.keys.a), 'content-type': 'application/json' }, payload });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toEqual({ code: 'invalid_request', message: 'The request body holds a "__proto__" key, which is not accepted in any field. Remove it.' });
    },
  );

  it('a "constructor" key goes on (the pass-through policy drops it before the provider)', async () => {
    const payload = '{"model":"m","constructor":{"prototype":{}},"messages":[{"role":"user","content":"hi"}]}';
    const res = await gw.app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...bearer(gw.keys.a), 'content-type': 'application/json' }, payload });
    expect(res.json().error.code).toBe('insufficient_balance'); // reached billing (the fake refuses every hold)
  });
});

describe('client values in headers', () => {
  it('headerList keeps visible ASCII, percent-encodes the rest, and bounds each value and the list', async () => {
    const { headerList } = await import('../src/http/quote.ts');
    expect(headerList(['web_search', 'file_search'])).toBe('web_search, file_search');
    expect(headerList(['ns 工具\n', 'a,b%'])).toBe('ns%20%E5%B7%A5%E5%85%B7%0A, a%2Cb%25');
    expect(headerList(['x'.repeat(1_000)])).toBe(`${'x'.repeat(64)}%E2%80%A6`);
    expect(headerList(Array.from({ length: 100 }, () => 'y'.repeat(60))).length).toBeLessThanOrEqual(1_024 + 9);
  });
});

describe('pass-through policy at the edge (order of checks step 4)', () => {
  it.each([
    ['/v1/responses', { model: 'm', input: 'hi', previous_response_id: 'resp_1' }, /previous_response_id is not supported/],
    ['/v1/responses', { model: 'm', input: 'hi', prompt: { id: 'pmpt_1' } }, /stored prompt template/],
    ['/v1/messages', { model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }], container: 'c_1' }, /container is not supported/],
  ])('%s with provider-side state is 400 before the hold', async (url, payload, message) => {
    const res = await post(url, payload);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toEqual({ code: 'invalid_request', message: expect.stringMatching(message) });
  });

  it('dropped fields do not refuse: the request goes on to the hold', async () => {
    const res = await post('/v1/responses', { model: 'm', input: 'hi', store: true, metadata: { a: 'b' }, user: 'u', safety_identifier: 's' });
    expect(res.json().error.code).toBe('insufficient_balance');
  });
});
