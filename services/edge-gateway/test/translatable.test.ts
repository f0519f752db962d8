import { billingV1, textV1 } from '@gw/contracts';
import { translateRequest } from '@gw/translate';
import { describe, expect, it } from 'vitest';
import { translateForRoutes } from '../src/generation/text-request.ts';
import type { ResolvedModel } from '../src/state/catalog-cache.ts';

/** A text model whose routes' providers speak these dialects (each route to upstream model `u<i>` unless named). */
function model(...speaks: Array<string[] | { dialects: string[]; upstreamModel: string }>): ResolvedModel {
  return {
    id: 'm',
    requested: 'm',
    kind: 'TEXT',
    unit: billingV1.BillingUnit.MILLION_TOKENS,
    price: 1n,
    routes: speaks.map((s, i) => {
      const { dialects, upstreamModel } = Array.isArray(s) ? { dialects: s, upstreamModel: `u${i}` } : s;
      return { provider: `p${i}`, upstreamModel, priority: i, weight: 1, textDialects: dialects };
    }),
    limits: { maxOutputTokens: 64, imageSizes: [], videoFirstFrame: false, videoLastFrame: false },
  };
}

const threaded = { model: 'm', max_tokens: 8, thread: { id: 't' }, messages: [{ role: 'user', content: 'hi' }] };
const plain = { model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };
const codex = { model: 'm', input: 'hi', tools: [{ type: 'function', name: 'shell' }, { type: 'web_search' }, { type: 'mcp', server_label: 'docs' }] };

const bodyOf = (u: { body?: Uint8Array }) => JSON.parse(Buffer.from(u.body!).toString('utf8')) as Record<string, unknown>;

describe('translateForRoutes: a body no route of its model can be sent is refused before the hold', () => {
  it('refuses what every route would refuse, with the refusal the text service would give', () => {
    expect(() => translateForRoutes('messages', threaded, model(['chat', 'responses'], ['gemini']))).toThrow(
      expect.objectContaining({ code: 'invalid_request', details: { details: { error_code: 'thread_unsupported_request', unsupported: ['thread'] } } }),
    );
  });

  it('lets through what a route takes as it is, what some route can carry, and what it cannot judge', () => {
    expect(() => translateForRoutes('messages', threaded, model(['messages']))).not.toThrow(); // the provider's to judge
    expect(() => translateForRoutes('messages', plain, model(['chat', 'responses'], ['gemini']))).not.toThrow();
    expect(() => translateForRoutes('messages', threaded, model(['chat'], []))).not.toThrow(); // a provider the catalog did not describe
  });

  it('refuses a reference to provider-side state for every route (the pass-through policy)', () => {
    expect(() => translateForRoutes('responses', { ...codex, previous_response_id: 'resp_1' }, model(['responses']))).toThrow(expect.objectContaining({ code: 'invalid_request' }));
  });
});

describe('translateForRoutes: the translation the text service sends as it is', () => {
  it("is translateRequest's, once per dialect the routes speak, with the model's output cap and no stream fields", () => {
    const streamed = { ...plain, stream: true };
    const t = translateForRoutes('messages', streamed, model(['chat', 'responses'], ['chat'], ['messages']));
    expect(t.upstream.map((u) => u.dialect)).toEqual([textV1.Dialect.CHAT, textV1.Dialect.MESSAGES]);
    expect(t.upstream.map((u) => u.upstreamModel)).toEqual(['', '']);
    expect(bodyOf(t.upstream[0]!)).toEqual(translateRequest('messages', 'chat', streamed, { upstreamModel: 'u0', defaultMaxOutputTokens: 64 }));
    expect(bodyOf(t.upstream[0]!)).not.toHaveProperty('stream');
    // The same dialect: the client's body but for the model (the provider adapter sets `stream`).
    expect(bodyOf(t.upstream[1]!)).toEqual({ ...streamed, model: 'u2' });
    expect(t.needsClientBody).toBe(false);
  });

  it('makes a Gemini translation per upstream model (its thought signatures depend on it)', () => {
    const t = translateForRoutes('chat', { model: 'm', messages: [{ role: 'user', content: 'hi' }] }, model({ dialects: ['gemini'], upstreamModel: 'gemini-3-pro' }, { dialects: ['gemini'], upstreamModel: 'gemini-2.5-flash' }, ['gemini']));
    expect(t.upstream.map((u) => [u.dialect, u.upstreamModel])).toEqual([
      [textV1.Dialect.GEMINI, 'gemini-3-pro'],
      [textV1.Dialect.GEMINI, 'gemini-2.5-flash'],
      [textV1.Dialect.GEMINI, 'u2'],
    ]);
  });

  it('asks for the client body where the text service translates or echoes it', () => {
    expect(translateForRoutes('messages', plain, model(['chat'], [])).needsClientBody).toBe(true); // a route the catalog did not describe
    expect(translateForRoutes('messages', threaded, model(['messages'], ['chat'])).needsClientBody).toBe(true); // chat refused it: that route is refused there
    expect(translateForRoutes('responses', { model: 'm', input: 'hi' }, model(['responses'])).needsClientBody).toBe(true); // answers echo the request's settings
  });
});

describe('translateForRoutes: removed tools, which the response header names', () => {
  it('names the charged hosted tools a same-dialect provider is not sent, and only those', () => {
    expect(translateForRoutes('responses', codex, model(['chat', 'responses'])).removedTools).toEqual(['web_search']);
    expect(translateForRoutes('responses', { model: 'm', input: 'hi', tools: [{ type: 'function', name: 'f' }] }, model(['chat', 'responses'])).removedTools).toEqual([]);
  });

  it('names every hosted tool for a provider of another dialect', () => {
    expect(translateForRoutes('responses', codex, model(['messages'])).removedTools).toEqual(['web_search', 'mcp']);
  });

  it("names what any of a model's routes drops when they speak different dialects", () => {
    expect(translateForRoutes('responses', codex, model(['chat', 'responses'], ['messages'])).removedTools).toEqual(['web_search', 'mcp']);
  });

  it('names nothing for a route the catalog did not describe', () => {
    expect(translateForRoutes('responses', codex, model([])).removedTools).toEqual([]);
  });
});
