import { omit } from '../json.ts';
import type { JsonRecord } from '../json.ts';
import { requireModel } from '../provider-context.ts';
import type { ProviderContext } from '../provider-context.ts';
import { sendText } from '../text-call.ts';
import type { CallOptions, TextResult } from '../types.ts';
import { GOOGLE_PATHS } from './api.ts';

/**
 * `POST {base}/models/{model}:generateContent`, or `:streamGenerateContent?alt=sse` for a stream.
 * The model lives in the path, so `model` (and our `stream` flag) leave the body.
 */
export function generateContent(
  ctx: ProviderContext,
  body: JsonRecord,
  opts: CallOptions & { stream: boolean },
): Promise<TextResult> {
  const model = requireModel(ctx, body);
  const path = opts.stream ? GOOGLE_PATHS.streamGenerateContent(model) : GOOGLE_PATHS.generateContent(model);
  return sendText(ctx, 'gemini', ctx.url(path), omit(body, ['model', 'stream']), opts);
}
