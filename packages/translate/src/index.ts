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
import type { Dialect, RequestOptions, ResponseContext, Usage } from './ir.ts';
import { isRecord, type Json } from './json.ts';
import { CODECS } from './codecs.ts';
import { maxOutputTokens } from './estimate.ts';
import { applyPassthroughPolicy } from './passthrough-policy.ts';
import { removeChargedTools } from './hosted-tools.ts';

export type { Dialect, OutputEvent, RequestOptions, ResponseContext, SseEvent, StreamFailure, Usage } from './ir.ts';
export { TranslateError } from './errors.ts';
export { REMOVED_TOOLS_HEADER } from './hosted-tools.ts';
export { applyPassthroughPolicy, PASSTHROUGH_POLICY, PROTOTYPE_KEYS } from './passthrough-policy.ts';
export { createStreamTranslator, type StreamTranslator } from './stream.ts';
export { streamFailureEvents } from './failure.ts';
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
 * `model` and the output cap. `stream` is the provider adapter's to set, as the call it makes is
 * streamed or not. A request that names no cap gets `opts.defaultMaxOutputTokens` in every
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
    return { body: applyPassthroughPolicy(to, out), removedTools };
  }
  const ir = CODECS[from].parseRequest(body);
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

/**
 * `attachService(dialect, data, service)` as JSON text, without the service's value: the caller
 * inserts the serialised `service` object at `at` (a UTF-16 index into `json`). So the text
 * service serialises a usage-bearing event once, and the gateway adds its `service` object after
 * settling without parsing the event again. Filled, it is byte for byte what `JSON.stringify`
 * gives for the whole, but where the upstream sent a `service` field of its own: that one is
 * dropped and ours goes last.
 */
export function serviceSlot(dialect: Dialect, data: Json): { json: string; at: number } {
  if (dialect === 'responses' && typeof data.type === 'string' && isRecord(data.response)) {
    const inner = slotLast(data.response);
    // `response` keeps its place among the event's fields; the slot goes at its end.
    let json = '{';
    let at = -1;
    for (const [key, value] of Object.entries(data)) {
      if (key !== 'response' && !serialisable(value)) continue;
      if (json.length > 1) json += ',';
      json += `${JSON.stringify(key)}:`;
      if (key === 'response') {
        at = json.length + inner.at;
        json += inner.json;
      } else json += JSON.stringify(value);
    }
    return { json: `${json}}`, at };
  }
  return slotLast(data);
}

/** `{...data, service}` as JSON without the service's value, and where that value goes. */
function slotLast(data: Json): { json: string; at: number } {
  const { service: _replaced, ...rest } = data;
  const body = JSON.stringify(rest);
  const head = `${body.slice(0, -1)}${body.length > 2 ? ',' : ''}"service":`;
  return { json: `${head}}`, at: head.length };
}

/** A value `JSON.stringify` writes as an object field (it leaves out the rest). */
const serialisable = (value: unknown): boolean => value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';
