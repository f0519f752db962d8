import { pick } from '../json.ts';
import type { JsonRecord } from '../json.ts';
import { requireModel, unsupported } from '../provider-context.ts';
import type { ProviderContext } from '../provider-context.ts';
import { postTokenCount } from '../token-count.ts';
import type { CallOptions, TextDialect } from '../types.ts';
import { GOOGLE_PATHS } from './api.ts';

/** Request fields that cost input tokens beside `contents`; countTokens takes them only wrapped. */
const STEERING_FIELDS = ['systemInstruction', 'tools', 'toolConfig', 'cachedContent'] as const;

/**
 * countTokens takes either bare `contents` or a whole `generateContentRequest` (with `model`), never
 * both; the wrapped form is needed as soon as a system instruction or tools are present.
 */
export function countTokensBody(model: string, body: JsonRecord): JsonRecord {
  const steering = pick(body, STEERING_FIELDS);
  if (Object.keys(steering).length === 0) return { contents: body['contents'] ?? [] };
  return {
    generateContentRequest: { model: GOOGLE_PATHS.modelName(model), contents: body['contents'] ?? [], ...steering },
  };
}

/** `POST {base}/models/{model}:countTokens` → `totalTokens`, for a `gemini` body. */
export async function countTokens(
  ctx: ProviderContext,
  dialect: TextDialect,
  body: JsonRecord,
  opts?: CallOptions,
): Promise<number> {
  if (dialect !== 'gemini') throw unsupported(ctx, `token counting for ${dialect} bodies`);
  const model = requireModel(ctx, body);
  return postTokenCount(ctx, GOOGLE_PATHS.countTokens(model), countTokensBody(model, body), 'totalTokens', opts);
}
