import type { JsonRecord } from '../json.ts';
import type { ProviderContext } from '../provider-context.ts';
import { sendText } from '../text-call.ts';
import type { CallOptions, TextResult } from '../types.ts';
import { ANTHROPIC_PATHS } from './api.ts';

/** `POST {base}/v1/messages`. */
export function messages(
  ctx: ProviderContext,
  body: JsonRecord,
  opts: CallOptions & { stream: boolean },
): Promise<TextResult> {
  return sendText(ctx, 'messages', ctx.url(ANTHROPIC_PATHS.messages), { ...body, stream: opts.stream }, opts);
}
