import { createContext, unsupported } from '../provider-context.ts';
import type { ProviderAdapter, ProviderConfig, TextDialect } from '../types.ts';
import { anthropicAuthHeaders } from './api.ts';
import { countTokens } from './count-tokens.ts';
import { messages } from './messages.ts';
import { listModels } from './models.ts';

/** Anthropic: messages, token counting and the model list. */
export function createAnthropicAdapter(config: ProviderConfig, imageHosts: readonly string[]): ProviderAdapter {
  const ctx = createContext(config, anthropicAuthHeaders(config.apiKey));
  return {
    name: config.name,
    kind: 'anthropic',
    textDialects: ['messages'] satisfies TextDialect[],
    imageHosts,
    listModels: (opts) => listModels(ctx, opts),
    text: async (dialect, body, opts) => {
      if (dialect !== 'messages') throw unsupported(ctx, `${dialect} bodies`);
      return messages(ctx, body, opts);
    },
    countTokens: (dialect, body, opts) => countTokens(ctx, dialect, body, opts),
    close: () => ctx.http.close(),
  };
}
