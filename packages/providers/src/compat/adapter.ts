import { chatCompletions } from '../openai/chat-completions.ts';
import { listModels } from '../openai/models.ts';
import { createContext, unsupported } from '../provider-context.ts';
import type { ProviderAdapter, ProviderConfig, TextDialect } from '../types.ts';
import { compatAuthHeaders } from './api.ts';

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
      return chatCompletions(ctx, body, opts);
    },
    close: () => ctx.http.close(),
  };
}
