/**
 * The provider-neutral intermediate representation. Every dialect parses into these types and emits
 * from them, so N dialects need N codecs rather than N×N translators.
 */

import type { Json } from './json.ts';

export type Dialect = 'chat' | 'messages' | 'responses' | 'gemini';

/** One server-sent event: `data` is parsed JSON, or the literal string `[DONE]`. */
export interface SseEvent {
  event?: string;
  data: unknown;
  /** `data`'s JSON text as received, when it came on one line (see `OutputEvent.text`). */
  text?: string;
}

/**
 * Token usage in one shape for all dialects. `inputTokens` counts every input token, including the
 * ones written to or read from a prompt cache (`cacheCreationTokens` and `cacheReadTokens` are
 * breakdowns of it, not additions). `totalBillable` is what the gateway bills: all input + output,
 * or the provider's reported total when that is larger (it may count categories we do not map).
 */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheCreationTokens: number;
  cacheReadTokens: number;
  totalBillable: number;
  /** Output tokens spent thinking, a breakdown of `outputTokens`; absent when the provider reports none. */
  reasoningTokens?: number;
}

export type ImageSource =
  | { kind: 'base64'; mediaType: string; data: string }
  | { kind: 'url'; url: string; mediaType?: string };

export interface TextPart {
  type: 'text';
  text: string;
}

export interface ImagePart {
  type: 'image';
  source: ImageSource;
  /** OpenAI's `detail` hint (`low` | `high` | `auto`); other dialects have no equivalent. */
  detail?: string;
}

export interface ToolCallPart {
  type: 'tool_call';
  id: string;
  name: string;
  /** Arguments as a JSON text, as chat and responses carry them; object dialects parse/stringify. */
  arguments: string;
}

export interface ToolResultPart {
  type: 'tool_result';
  callId: string;
  /** Known when the source names it (gemini); emitters otherwise look it up from the call. */
  name?: string;
  content: Array<TextPart | ImagePart>;
  isError?: boolean;
}

/**
 * The model's reasoning in an assistant turn: its readable text (thinking, or a summary of it) and
 * the provider's opaque proof of it, which goes back only to a provider of `source` (reasoning.ts).
 */
export interface ReasoningPart {
  type: 'reasoning';
  text: string;
  /** The provider's own value: an Anthropic signature (or redacted data), a Gemini thoughtSignature. */
  signature?: string;
  /** The dialect of the provider that made `signature`. */
  source?: Dialect;
  /** Anthropic's redacted thinking: `signature` holds its encrypted `data`, there is no text. */
  redacted?: true;
}

export type Part = TextPart | ImagePart | ToolCallPart | ToolResultPart | ReasoningPart;

/**
 * Tool results travel in `user` messages, as in the messages and gemini dialects. A `system`
 * message is an instruction given in the middle of the conversation (a messages turn with role
 * `system`, as current clients send): text only, kept in its place by dialects that can say so.
 */
export interface Message {
  role: 'user' | 'assistant' | 'system';
  parts: Part[];
}

export interface Tool {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object. */
  parameters?: Json;
  strict?: boolean;
}

export type ToolChoice =
  | { type: 'auto' }
  | { type: 'none' }
  | { type: 'required' }
  | { type: 'tool'; name: string };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: Json; strict?: boolean; description?: string };

export interface IrRequest {
  /** System prompt segments, in order (chat system/developer messages, messages system blocks…). */
  system: string[];
  messages: Message[];
  tools: Tool[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  maxOutputTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  stop?: string[];
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  responseFormat?: ResponseFormat;
  /** OpenAI's reasoning effort (chat `reasoning_effort`, responses `reasoning.effort`). */
  reasoningEffort?: string;
  /**
   * Tools of the request that were not sent (hosted tools the target cannot run, or that would
   * cost the gateway money it does not bill), by the name or type the client gave them.
   */
  removedTools?: string[];
}

/**
 * Why generation ended. `stop_sequence` is kept apart from `end` only so the messages dialect can
 * say so; the others fold it into their normal stop.
 */
export type StopReason = 'end' | 'stop_sequence' | 'max_tokens' | 'tool_use' | 'content_filter';

export interface IrResponse {
  parts: Array<TextPart | ToolCallPart | ReasoningPart>;
  stopReason: StopReason;
  usage?: Usage;
}

export type BlockStart = { type: 'text' } | { type: 'tool_call'; id: string; name: string } | { type: 'reasoning' };

/**
 * Stream events. Blocks are numbered by `index` in output order and never interleave: a parser
 * stops one block before it starts the next. `finish` comes once, after the last block, with the
 * final usage when the upstream reported any.
 */
export type StreamEvent =
  | { type: 'start' }
  | { type: 'block_start'; index: number; block: BlockStart }
  | { type: 'text_delta'; index: number; text: string }
  | { type: 'tool_args_delta'; index: number; json: string }
  | { type: 'reasoning_delta'; index: number; text: string }
  /** The provider's proof of a reasoning block (see {@link ReasoningPart}), before its `block_stop`. */
  | { type: 'reasoning_signature'; index: number; signature: string; source: Dialect; redacted?: true }
  | { type: 'block_stop'; index: number }
  | { type: 'finish'; stopReason: StopReason; usage?: Usage }
  | ({ type: 'error' } & StreamFailure);

/** Public facts a client-facing body shows: our model id, our response id, our clock. */
export interface ResponseContext {
  model: string;
  id: string;
  /** Unix seconds. */
  created: number;
  /** The client's request body: a responses body echoes its settings (tools, temperature…). */
  request?: Json;
  /**
   * The request's input tokens as the provider's own counter gave them before the answer, for the
   * protocol that reports them up front (messages' `message_start`); never an estimate. Absent:
   * `message_start` says 0, and the real count comes with `message_delta`.
   */
  inputTokens?: number;
}

/**
 * How a request is translated. Whether it streams is not among them: the provider adapter that
 * makes the call sets `stream` (and chat's `stream_options.include_usage`, which billing needs).
 */
export interface RequestOptions {
  upstreamModel: string;
  /**
   * The output cap sent when the request names none (the caller's hold assumes it); without it,
   * only the messages dialect, which requires a cap, gets its default.
   */
  defaultMaxOutputTokens?: number;
}

export interface StreamParser {
  push(event: SseEvent): StreamEvent[];
  /** The upstream stream ended; flushes what a dialect only knows at its end (gemini's finish). */
  end(): StreamEvent[];
  /** The latest usage the upstream reported so far. */
  usage(): Usage | undefined;
}

export interface StreamEmitter {
  push(event: StreamEvent): OutputEvent[];
  end(): OutputEvent[];
}

/** An emitted event; `carriesUsage` marks the one event that reports the final usage. */
export interface OutputEvent extends SseEvent {
  carriesUsage?: true;
  /**
   * The JSON text of `data`, when it is the upstream event's own, unchanged: the caller sends it
   * as it is instead of serialising `data` again (a passthrough stream's frames, but those whose
   * model it renames). Absent: serialise `data`.
   */
  text?: string;
}

/** A stream failure to render as the target protocol's error event. */
export interface StreamFailure {
  message: string;
  /** Public error code (spec section 7.2), e.g. `upstream_error`. */
  code?: string;
}

/** What one dialect module provides. */
export interface Codec {
  parseRequest(body: Json): IrRequest;
  emitRequest(req: IrRequest, opts: RequestOptions): Json;
  parseResponse(body: Json, ctx: ResponseContext): IrResponse;
  emitResponse(res: IrResponse, ctx: ResponseContext): Json;
  readUsage(body: Json): Usage | undefined;
  createStreamParser(ctx: ResponseContext): StreamParser;
  createStreamEmitter(ctx: ResponseContext): StreamEmitter;
  /** The protocol's error event(s); `sequence` numbers them where the protocol does (responses). */
  errorEvents(failure: StreamFailure, ctx: ResponseContext, sequence: number): OutputEvent[];
}
