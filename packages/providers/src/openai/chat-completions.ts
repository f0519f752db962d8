import { omit } from '../json.ts';
import type { JsonRecord } from '../json.ts';
import type { ProviderContext } from '../provider-context.ts';
import { sendText } from '../text-call.ts';
import type { CallOptions, TextResult } from '../types.ts';
import { OPENAI_PATHS } from './api.ts';

/**
 * The body as sent: `stream` follows the call, and a stream always asks for its usage chunk, which
 * billing needs. `stream_options` is refused by OpenAI on non-streaming calls, so it goes there.
 */
export function chatCompletionsBody(body: JsonRecord, stream: boolean): JsonRecord {
  if (!stream) return { ...omit(body, ['stream_options']), stream: false };
  const streamOptions = body['stream_options'];
  const existing = typeof streamOptions === 'object' && streamOptions !== null ? streamOptions : {};
  return { ...body, stream: true, stream_options: { ...existing, include_usage: true } };
}

/** `POST {base}/chat/completions` (OpenAI and every compatible server). */
export function chatCompletions(
  ctx: ProviderContext,
  body: JsonRecord,
  opts: CallOptions & { stream: boolean },
): Promise<TextResult> {
  return sendText(ctx, 'chat', ctx.url(OPENAI_PATHS.chatCompletions), chatCompletionsBody(body, opts.stream), opts);
}
