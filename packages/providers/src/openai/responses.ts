import type { JsonRecord } from '../json.ts';
import type { ProviderContext } from '../provider-context.ts';
import { sendText } from '../text-call.ts';
import type { CallOptions, TextResult } from '../types.ts';
import { OPENAI_PATHS } from './api.ts';

/** `POST {base}/responses`. */
export function responses(
  ctx: ProviderContext,
  body: JsonRecord,
  opts: CallOptions & { stream: boolean },
): Promise<TextResult> {
  return sendText(ctx, 'responses', ctx.url(OPENAI_PATHS.responses), { ...body, stream: opts.stream }, opts);
}
