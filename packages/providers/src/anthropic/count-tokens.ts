import { malformed } from '../errors.ts';
import { isRecord, numberField, pick } from '../json.ts';
import type { JsonRecord } from '../json.ts';
import { deadline, unsupported } from '../provider-context.ts';
import type { ProviderContext } from '../provider-context.ts';
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
  const answer = await ctx.http.json({
    method: 'POST',
    url: ctx.url(ANTHROPIC_PATHS.countTokens),
    json: pick(body, COUNT_TOKENS_FIELDS),
    timeoutMs: deadline(ctx, 'listMs', opts),
    options: opts,
  });
  const tokens = isRecord(answer) ? numberField(answer, 'input_tokens') : undefined;
  if (tokens === undefined) throw malformed(ctx.name, 'the token count has no input_tokens');
  return tokens;
}
