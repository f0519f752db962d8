import { errorFromStreamEvent, malformed } from './errors.ts';
import { isRecord } from './json.ts';
import type { JsonRecord } from './json.ts';
import type { ProviderContext } from './provider-context.ts';
import { STREAM_RULES } from './stream-rules.ts';
import type { CallOptions, TextDialect, TextResult } from './types.ts';

/** The least a 2xx answer of each dialect must have to be an answer at all. */
const ANSWER_SHAPES: Record<TextDialect, (body: JsonRecord) => boolean> = {
  chat: (body) => Array.isArray(body['choices']),
  messages: (body) => Array.isArray(body['content']),
  responses: (body) => Array.isArray(body['output']),
  // A blocked prompt answers with `promptFeedback` and no candidates.
  gemini: (body) => Array.isArray(body['candidates']) || isRecord(body['promptFeedback']),
};

/** A 2xx text answer, checked; an error inside a 2xx (some compatible servers) is mapped as one. */
function textAnswer(ctx: ProviderContext, dialect: TextDialect, answer: unknown): JsonRecord {
  if (isRecord(answer) && ANSWER_SHAPES[dialect](answer)) return answer;
  if (isRecord(answer) && isRecord(answer['error'])) throw errorFromStreamEvent(ctx.name, answer, ctx.secrets);
  throw malformed(ctx.name, `not a ${dialect} answer`);
}

/**
 * Posts a text body and returns the JSON answer or the event stream. `timeoutMs` overrides the
 * deadline that decides fallback for a whole answer; for a stream it bounds the first event, as
 * does the provider's own `textFirstByteMs` (the tighter wins).
 */
export async function sendText(
  ctx: ProviderContext,
  dialect: TextDialect,
  url: string,
  body: JsonRecord,
  opts: CallOptions & { stream: boolean },
): Promise<TextResult> {
  if (opts.stream) {
    // The tighter of the caller's (a model's first-byte deadline) and the provider's own.
    const firstEventMs = Math.min(opts.timeoutMs ?? Infinity, ctx.timeouts.textFirstByteMs, ctx.timeouts.textTotalMs);
    const events = await ctx.http.stream({
      method: 'POST',
      url,
      json: body,
      timeoutMs: firstEventMs,
      totalMs: Math.max(firstEventMs, ctx.timeouts.textTotalMs),
      rules: STREAM_RULES[dialect],
      options: opts,
    });
    return { kind: 'stream', events };
  }
  const answer = await ctx.http.json({
    method: 'POST',
    url,
    json: body,
    timeoutMs: opts.timeoutMs ?? ctx.timeouts.textTotalMs,
    options: opts,
  });
  return { kind: 'json', body: textAnswer(ctx, dialect, answer) };
}
