import { pick } from '../json.ts';
import type { JsonRecord } from '../json.ts';
import { unsupported } from '../provider-context.ts';
import type { ProviderContext } from '../provider-context.ts';
import { postTokenCount } from '../token-count.ts';
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
  return postTokenCount(ctx, OPENAI_PATHS.responsesInputTokens, build(body), 'input_tokens', opts);
}
