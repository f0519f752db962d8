import { pick } from '../json.ts';
import type { JsonRecord } from '../json.ts';
import { unsupported } from '../provider-context.ts';
import type { ProviderContext } from '../provider-context.ts';
import { postTokenCount } from '../token-count.ts';
import type { CallOptions, TextDialect } from '../types.ts';
import { ANTHROPIC_PATHS } from './api.ts';

/** Fields count_tokens accepts; it refuses generation-only ones such as `max_tokens` or `stream`. */
const COUNT_TOKENS_FIELDS = ['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking', 'mcp_servers'] as const;

/** `POST {base}/v1/messages/count_tokens` → `{input_tokens}`, for a `messages` body. */
export async function countTokens(
  ctx: ProviderContext,
  dialect: TextDialect,
  body: JsonRecord,
  opts?: CallOptions,
): Promise<number> {
  if (dialect !== 'messages') throw unsupported(ctx, `token counting for ${dialect} bodies`);
  return postTokenCount(ctx, ANTHROPIC_PATHS.countTokens, pick(body, COUNT_TOKENS_FIELDS), 'input_tokens', opts);
}
