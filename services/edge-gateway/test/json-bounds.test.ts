import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JSON_BOUNDS } from '../src/http/json-body.ts';
import { bearer, fakeGateway, type FakeGateway } from './support/fake-gateway.ts';

let gw: FakeGateway;
beforeAll(async () => {
  gw = await fakeGateway();
});
afterAll(() => gw.app.close());

const chat = (extra: Record<string, unknown>) => ({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...extra });
const post = (url: string, payload: unknown) =>
  gw.app.inject({ method: 'POST', url, headers: { ...bearer(gw.keys.a), 'content-type': 'application/json' }, payload: JSON.stringify(payload) });

describe('bounded client JSON (issue 20 finding 3)', () => {
  it('an array of 200,000 numbers in a text body is 400 invalid_request naming the bound, not 502', async () => {
    const res = await post('/v1/chat/completions', chat({ metadata: { n: Array.from({ length: 200_000 }, (_, i) => i) } }));
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toEqual({
      code: 'invalid_request',
      message: `The request body has an array or object of more than ${JSON_BOUNDS.items} elements or members, more than any valid request.`,
    });
  });

  const TEXT = ['/v1/chat/completions', '/v1/messages', '/v1/responses', '/v1/chat', '/v1/messages/count_tokens'];
  const ALL = [...TEXT, '/v1/images/generations', '/v1/images/edits', '/v1/videos/generations'];
  it.each([
    ['values', TEXT, { parts: Array.from({ length: 11 }, () => Array.from({ length: 49_000 }, () => 1)) }, /more than 500000 JSON values/],
    ['containers', TEXT, { parts: Array.from({ length: 3 }, () => Array.from({ length: 40_000 }, () => ({}))) }, /more than 100000 JSON objects and arrays/],
    ['depth', ALL, { deep: JSON.parse(`${'['.repeat(300)}${']'.repeat(300)}`) as unknown }, /nests JSON deeper than 256 levels/],
  ])('a body past the %s bound is 400', async (_bound, urls, extra, message) => {
    for (const url of urls) {
      const res = await post(url, chat(extra));
      expect({ url, status: res.statusCode, message: res.json().error.message }).toEqual({ url, status: 400, message: expect.stringMatching(message) });
    }
  });

  it('a wide body within the bounds is walked whole (hold estimate included) and reaches billing', async () => {
    // The fake billing refuses every hold with 402: the request got past validation and the estimate.
    const res = await post('/v1/chat/completions', chat({ metadata: { n: Array.from({ length: JSON_BOUNDS.items }, (_, i) => i) } }));
    expect(res.json().error.code).toBe('insufficient_balance');
  });
});
