import { billingV1 } from '@gw/contracts';
import { describe, expect, it } from 'vitest';
import { assertTranslatable } from '../src/generation/text-request.ts';
import type { ResolvedModel } from '../src/state/catalog-cache.ts';

/** A text model whose routes' providers speak these dialects. */
function model(...speaks: string[][]): ResolvedModel {
  return {
    id: 'm',
    requested: 'm',
    kind: 'TEXT',
    unit: billingV1.BillingUnit.MILLION_TOKENS,
    price: 1n,
    routes: speaks.map((textDialects, i) => ({ provider: `p${i}`, upstreamModel: 'u', priority: i, weight: 1, textDialects })),
    limits: { maxOutputTokens: 64, imageSizes: [], videoFirstFrame: false, videoLastFrame: false },
  };
}

const threaded = { model: 'm', max_tokens: 8, thread: { id: 't' }, messages: [{ role: 'user', content: 'hi' }] };
const plain = { model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };

describe('assertTranslatable: a body no route of its model can be sent is refused before the hold', () => {
  it('refuses what every route would refuse, with the refusal the text service would give', () => {
    expect(() => assertTranslatable('messages', threaded, model(['chat', 'responses'], ['gemini']))).toThrow(
      expect.objectContaining({ code: 'invalid_request', details: { details: { error_code: 'thread_unsupported_request', unsupported: ['thread'] } } }),
    );
  });

  it('lets through what a route takes as it is, what some route can carry, and what it cannot judge', () => {
    expect(() => assertTranslatable('messages', threaded, model(['messages']))).not.toThrow(); // the provider's to judge
    expect(() => assertTranslatable('messages', plain, model(['chat', 'responses'], ['gemini']))).not.toThrow();
    expect(() => assertTranslatable('messages', threaded, model(['chat'], []))).not.toThrow(); // a provider the catalog did not describe
  });
});
