import { billingV1 } from '@gw/contracts';
import { describe, expect, it } from 'vitest';
import { removedTools } from '../src/generation/removed-tools.ts';
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

const codex = { model: 'm', input: 'hi', tools: [{ type: 'function', name: 'shell' }, { type: 'web_search' }, { type: 'mcp', server_label: 'docs' }] };

describe('removedTools: what the response header names', () => {
  it('names the charged hosted tools a same-dialect provider is not sent, and only those', () => {
    expect(removedTools('responses', codex, model(['chat', 'responses']))).toEqual(['web_search']);
    expect(removedTools('responses', { model: 'm', input: 'hi', tools: [{ type: 'function', name: 'f' }] }, model(['chat', 'responses']))).toEqual([]);
  });

  it('names every hosted tool for a provider of another dialect', () => {
    expect(removedTools('responses', codex, model(['messages']))).toEqual(['web_search', 'mcp']);
  });

  it("names what any of a model's routes drops when they speak different dialects", () => {
    expect(removedTools('responses', codex, model(['chat', 'responses'], ['messages']))).toEqual(['web_search', 'mcp']);
  });

  it('names nothing for a body no route can be sent (refused elsewhere) or a route the catalog did not describe', () => {
    expect(removedTools('responses', { ...codex, previous_response_id: 'resp_1' }, model(['messages']))).toEqual([]);
    expect(removedTools('responses', codex, model([]))).toEqual([]);
  });
});
