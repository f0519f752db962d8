import { malformed } from '../errors.ts';
import { isRecord, numberField, pick } from '../json.ts';
import type { JsonRecord } from '../json.ts';
import { deadline, unsupported } from '../provider-context.ts';
import type { ProviderContext } from '../provider-context.ts';
import type { CallOptions, TextDialect } from '../types.ts';
import { OPENAI_PATHS } from './api.ts';
import { chatAsInputTokensBody } from './chat-as-input.ts';

/** Fields `/responses/input_tokens` accepts; generation-only ones (stream, max_output_tokens…) are dropped. */
const INPUT_TOKENS_FIELDS = [
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'reasoning',
  'text',
  'previous_response_id',
  'conversation',
  'truncation',
] as const;

const BODY_BUILDERS: Partial<Record<TextDialect, (body: JsonRecord) => JsonRecord>> = {
  responses: (body) => pick(body, INPUT_TOKENS_FIELDS),
  chat: chatAsInputTokensBody,
};

/** `POST {base}/responses/input_tokens` → `{input_tokens}`, for a `responses` or `chat` body. */
export async function countTokens(
  ctx: ProviderContext,
  dialect: TextDialect,
  body: JsonRecord,
  opts?: CallOptions,
): Promise<number> {
  const build = BODY_BUILDERS[dialect];
  if (build === undefined) throw unsupported(ctx, `token counting for ${dialect} bodies`);
  const answer = await ctx.http.json({
    method: 'POST',
    url: ctx.url(OPENAI_PATHS.responsesInputTokens),
    json: build(body),
    timeoutMs: deadline(ctx, 'listMs', opts),
    options: opts,
  });
  const tokens = isRecord(answer) ? numberField(answer, 'input_tokens') : undefined;
  if (tokens === undefined) throw malformed(ctx.name, 'the token count has no input_tokens');
  return tokens;
}
