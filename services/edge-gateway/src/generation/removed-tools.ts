import { prepareRequest, TranslateError, upstreamDialect, type Dialect } from '@gw/translate';
import type { ResolvedModel } from '../state/catalog-cache.ts';

const DIALECTS = new Set<string>(['chat', 'messages', 'responses', 'gemini']);

/**
 * The client's tools that are not sent to the model's providers (docs/hosted-tools.md): hosted
 * tools a provider of another dialect cannot run, and hosted tools a provider charges for per
 * call. Worked out by the same translation the text service applies, for every dialect the model's
 * routes speak; a model whose routes speak different dialects names the tools any of them drops.
 */
export function removedTools(dialect: Dialect, body: Record<string, unknown>, model: ResolvedModel): string[] {
  const removed = new Set<string>();
  const targets = new Set<Dialect>();
  for (const route of model.routes) {
    const to = upstreamDialect(route.textDialects.filter((d): d is Dialect => DIALECTS.has(d)), dialect);
    if (to !== undefined) targets.add(to);
  }
  for (const to of targets) {
    try {
      for (const tool of prepareRequest(dialect, to, body, { upstreamModel: '', stream: body.stream === true }).removedTools) removed.add(tool);
    } catch (err) {
      // A dialect the body cannot be translated to is refused elsewhere (or by the text service).
      if (!(err instanceof TranslateError)) throw err;
    }
  }
  return [...removed];
}
