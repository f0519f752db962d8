import { chatCompletions } from '../openai/chat-completions.ts';
import { listModels } from '../openai/models.ts';
import { createContext, unsupported } from '../provider-context.ts';
import type { ProviderAdapter, ProviderConfig, TextDialect } from '../types.ts';
import type { JsonRecord } from '../json.ts';
import { compatAuthHeaders } from './api.ts';

/**
 * The output cap under the name every OpenAI-compatible server honours: many know only the legacy
 * `max_tokens` and ignore `max_completion_tokens` (which the chat dialect writes, as OpenAI's own
 * reasoning models refuse `max_tokens`). The cap the hold assumed (`max_completion_tokens` first,
 * as the gateway reads it) must bind, or an answer could outgrow its hold.
 */
function withLegacyCap(body: JsonRecord): JsonRecord {
  if (body.max_completion_tokens === undefined) return body;
  const { max_completion_tokens: cap, ...rest } = body;
  return { ...rest, max_tokens: cap };
}

/**
 * An OpenAI-compatible endpoint: chat completions and models, reusing the OpenAI wire code. There is
 * deliberately no `countTokens`: its absence tells callers this provider has no counter.
 */
export function createCompatAdapter(config: ProviderConfig, imageHosts: readonly string[]): ProviderAdapter {
  const ctx = createContext(config, compatAuthHeaders(config.apiKey));
  return {
    name: config.name,
    kind: 'compat',
    textDialects: ['chat'] satisfies TextDialect[],
    imageHosts,
    listModels: (opts) => listModels(ctx, opts),
    text: async (dialect, body, opts) => {
      if (dialect !== 'chat') throw unsupported(ctx, `${dialect} bodies`);
      return chatCompletions(ctx, withLegacyCap(body), opts);
    },
    close: () => ctx.http.close(),
  };
}
