/**
 * @gw/translate: translation of text requests, responses and streams between the four wire
 * dialects (`chat` = OpenAI chat completions, `messages` = Anthropic messages, `responses` = OpenAI
 * responses, `gemini` = Google generateContent), through one neutral representation (`ir.ts`).
 * Pure: no I/O, clock or randomness; ids and timestamps come in through `ResponseContext`.
 *
 * Cross-dialect requests that cannot be expressed throw {@link TranslateError} (answer 400).
 *
 * Streams: every stream translator marks exactly one output event `carriesUsage: true` when the
 * stream finishes normally: chat's usage chunk (empty `choices`, just before `[DONE]`), messages'
 * `message_delta`, responses' `response.completed` / `response.incomplete`, gemini's last chunk. Hold
 * it, read `translator.usage()` (the upstream's usage; undefined = success without usage), then add
 * billing with {@link attachService} and send it and whatever follows.
 */
import type { Dialect, OutputEvent, RequestOptions, ResponseContext, StreamFailure, Usage } from './ir.ts';
import { isRecord, num, rec, str, type Json } from './json.ts';
import { CODECS } from './codecs.ts';
import { maxOutputTokens } from './estimate.ts';
import { applyPassthroughPolicy } from './passthrough-policy.ts';
import { removeChargedTools } from './hosted-tools.ts';

export type { Dialect, OutputEvent, RequestOptions, ResponseContext, SseEvent, StreamFailure, Usage } from './ir.ts';
export { TranslateError } from './errors.ts';
export { REMOVED_TOOLS_HEADER } from './hosted-tools.ts';
export { applyPassthroughPolicy, PASSTHROUGH_POLICY, PROTOTYPE_KEYS } from './passthrough-policy.ts';
export { createStreamTranslator, type StreamTranslator } from './stream.ts';
export { validateRequest, withoutNullFields } from './validate.ts';
export { estimateInputTokensUpperBound, maxOutputTokens, IMAGE_TOKEN_ALLOWANCE, REQUEST_TOKEN_ALLOWANCE } from './estimate.ts';

/**
 * The dialect to speak to a provider that speaks `speaks` (preferred first): the client's own when
 * the provider speaks it (the request and answer then pass through without loss), else the
 * provider's preferred one; undefined when it speaks none.
 */
export function upstreamDialect(speaks: readonly Dialect[], client: Dialect): Dialect | undefined {
  return speaks.includes(client) ? client : speaks[0];
}

/** chat and responses share these fields unchanged; the other pairs have no common uninterpreted field. */
const OPENAI_SHARED_FIELDS = ['user', 'metadata', 'store', 'service_tier', 'prompt_cache_key', 'safety_identifier'];

/**
 * A request body in `from` → a body for an upstream speaking `to`, naming `opts.upstreamModel`
 * (gemini bodies carry no model: it goes in the URL). Same dialect: the body unchanged but for
 * `model`, `stream` set to `opts.stream`, chat streams asking for usage (`stream_options`) and
 * the output cap. A request that names no cap gets `opts.defaultMaxOutputTokens` in every
 * dialect: the hold assumes that cap, so the provider must not write past it.
 */
export function translateRequest(from: Dialect, to: Dialect, body: Json, opts: RequestOptions): Json {
  return prepareRequest(from, to, body, opts).body;
}

/** A request as sent upstream, and the client's tools that were left out of it. */
export interface PreparedRequest {
  body: Json;
  /** Tools not sent, by the name or type the client gave them (docs/hosted-tools.md); empty when none. */
  removedTools: string[];
}

/**
 * {@link translateRequest}, also saying which of the client's tools were not sent: hosted tools
 * a provider of another dialect cannot run, and hosted tools a provider of the same dialect
 * charges for per call (the catalog prices tokens only). Fields the gateway does not read pass
 * through unchanged to a provider of the same dialect (new fields and betas keep working).
 */
export function prepareRequest(from: Dialect, to: Dialect, body: Json, opts: RequestOptions): PreparedRequest {
  if (from === to) {
    const out = withOutputCap(to, { ...body }, opts.defaultMaxOutputTokens);
    const removedTools = removeChargedTools(to, out);
    if (to === 'gemini') {
      delete out.model;
      return { body: applyPassthroughPolicy(to, out), removedTools };
    }
    out.model = opts.upstreamModel;
    if (opts.stream) out.stream = true;
    else if ('stream' in out) out.stream = false;
    if (to === 'chat' && opts.stream) out.stream_options = { ...(isRecord(body.stream_options) ? body.stream_options : {}), include_usage: true };
    return { body: applyPassthroughPolicy(to, out), removedTools };
  }
  const ir = CODECS[from].parseRequest(body);
  ir.stream = opts.stream;
  ir.maxOutputTokens ??= opts.defaultMaxOutputTokens;
  const out = CODECS[to].emitRequest(ir, opts);
  const openaiPair = (from === 'chat' && to === 'responses') || (from === 'responses' && to === 'chat');
  if (openaiPair) for (const field of OPENAI_SHARED_FIELDS) if (body[field] !== undefined) out[field] = body[field];
  return { body: applyPassthroughPolicy(to, out), removedTools: ir.removedTools ?? [] };
}

/** `body` (a copy the caller owns) with `cap` in the dialect's own field when it names none. */
function withOutputCap(dialect: Dialect, body: Json, cap: number | undefined): Json {
  if (cap === undefined || maxOutputTokens(dialect, body) !== undefined) return body;
  switch (dialect) {
    case 'chat':
      body.max_completion_tokens = cap;
      break;
    case 'messages':
      body.max_tokens = cap;
      break;
    case 'responses':
      body.max_output_tokens = cap;
      break;
    case 'gemini':
      body.generationConfig = { ...(isRecord(body.generationConfig) ? body.generationConfig : {}), maxOutputTokens: cap };
      break;
  }
  return body;
}

/**
 * A non-streaming upstream response body in `from` → the client's dialect `to`, showing `ctx.model`,
 * `ctx.id` and `ctx.created`. Same dialect: unchanged but for the model.
 */
export function translateResponse(from: Dialect, to: Dialect, body: Json, ctx: ResponseContext): Json {
  if (from === to) return to === 'gemini' ? { ...body, modelVersion: ctx.model } : { ...body, model: ctx.model };
  return CODECS[to].emitResponse(CODECS[from].parseResponse(body, ctx), ctx);
}

/**
 * The client dialect's error event(s) for a stream that broke after its events were forwarded as
 * they came, `first` and `last` being the first and last of them (parsed; none if none went out).
 * Responses events continue the stream: the next sequence number, the response it created.
 */
export function streamFailureEvents(dialect: Dialect, failure: StreamFailure, first?: unknown, last?: unknown): OutputEvent[] {
  const created = rec(rec(first).response);
  // A created response echoes the request's settings under the request's own field names.
  const ctx: ResponseContext = { id: str(created.id) ?? '', model: str(created.model) ?? '', created: num(created.created_at) ?? 0, request: created };
  const sequence = num(rec(last).sequence_number);
  return CODECS[dialect].errorEvents(failure, ctx, sequence === undefined ? 0 : sequence + 1);
}

/** Usage of a non-streaming response body; undefined when it reports none. */
export function extractUsage(dialect: Dialect, body: Json): Usage | undefined {
  return CODECS[dialect].readUsage(body);
}

/**
 * Adds the gateway's `service` object to a client-facing body: a non-streaming response, or the
 * stream event marked `carriesUsage`. It goes at the top level, except in responses stream events,
 * where it goes into `response` so that the streamed response equals the non-streaming one.
 */
export function attachService(dialect: Dialect, data: Json, service: Json): Json {
  if (dialect === 'responses' && typeof data.type === 'string' && isRecord(data.response)) {
    return { ...data, response: { ...data.response, service } };
  }
  return { ...data, service };
}
