/** Which wire family a provider speaks; selects the adapter implementation. */
export type ProviderKind = 'openai' | 'anthropic' | 'google' | 'compat';

/**
 * A text wire dialect. Bodies handed to {@link ProviderAdapter.text} are already in this dialect:
 * `chat` = OpenAI chat completions, `messages` = Anthropic messages, `responses` = OpenAI responses,
 * `gemini` = Gemini generateContent.
 */
export type TextDialect = 'chat' | 'messages' | 'responses' | 'gemini';

/** One configured upstream provider (e.g. one entry of the `PROVIDERS` JSON env var). */
export interface ProviderConfig {
  /** Unique name the routes refer to, e.g. `openai-main`. */
  name: string;
  kind: ProviderKind;
  /**
   * SDK-style base URL: OpenAI `https://api.openai.com/v1`, Anthropic `https://api.anthropic.com`,
   * Gemini `https://generativelanguage.googleapis.com/v1beta`, compat `<host>/v1`.
   */
  baseUrl: string;
  /** Secret; only ever sent in the provider's auth header, never logged or put in messages. */
  apiKey: string;
  timeouts?: Partial<Timeouts>;
  /**
   * Extra hosts this provider's image URLs may come from (e.g. a blob store), beside the base URL's
   * own host; `*.example.com` matches subdomains. Used with `fetchProviderImage`.
   */
  imageHosts?: string[];
}

/** Deadlines in milliseconds; each capability has its own because their latencies differ by orders. */
export interface Timeouts {
  /** TCP/TLS connect. */
  connectMs: number;
  /** Text: until the response headers and, when streaming, the first event arrive. */
  textFirstByteMs: number;
  /** Text: the whole call including a stream's end. */
  textTotalMs: number;
  /** One image generation or edit call. */
  imageMs: number;
  /** One video create/poll call and the idle gap of a download. */
  videoMs: number;
  /** Model listing, token counting and other small calls. */
  listMs: number;
}

export interface CallOptions {
  /** Caller's cancellation (e.g. the client went away). Its abort is rethrown as is, not mapped. */
  signal?: AbortSignal;
  /** Overrides the capability's default deadline for this call. */
  timeoutMs?: number;
  /** Our request id; sent upstream as `x-request-id` for correlation. */
  requestId?: string;
  /**
   * Headers of the client's request in the provider's own protocol (Anthropic's `anthropic-beta`),
   * sent with the call; only for a request that passes through unchanged. Never auth headers:
   * the provider's own credentials are set after them.
   */
  nativeHeaders?: Record<string, string>;
  /**
   * Token usage of the answer, for telemetry: called with the JSON body of a whole answer, or with
   * no argument when a stream has ended. The caller knows the dialect's usage shape.
   */
  usage?: (body?: Record<string, unknown>) => TokenUsage | undefined;
}

/** Tokens an answer used, as reported by the provider. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/** One server-sent event: `data` is parsed JSON, or the literal string `[DONE]`. */
export interface SseEvent {
  event?: string;
  data: unknown;
  /**
   * `data`'s JSON text as the provider sent it, where it came on one line: a frame relayed
   * unchanged is sent as this text, not serialised again.
   */
  text?: string;
}

/**
 * A text call's result. A stream's iterator throws a `ProviderError` on an upstream error event, a
 * broken connection, malformed data or an early end; it never ends silently on failure.
 */
export type TextResult =
  | { kind: 'json'; body: Record<string, unknown> }
  | { kind: 'stream'; events: AsyncIterable<SseEvent> };

/** One produced image: base64 bytes, or a provider URL to fetch with `fetchProviderImage`. */
export interface GeneratedImage {
  b64?: string;
  url?: string;
  mimeType: string;
}

/** Provider-neutral state of a video job. */
export interface VideoStatus {
  state: 'queued' | 'running' | 'completed' | 'failed';
  failure?: { reason: 'provider_failed' | 'safety' | 'not_found'; message: string };
  actualDurationSeconds?: number;
  /** Provider handle of the finished file (Gemini: the file URI); pass it to `downloadVideo`. */
  contentRef?: string;
}

export interface ImageBytes {
  bytes: Uint8Array;
  mimeType: string;
}

/** Image formats a provider can be asked for. */
export type ImageMimeType = 'image/png' | 'image/jpeg' | 'image/webp';

export interface ImageRequest {
  model: string;
  prompt: string;
  n: number;
  size?: string;
  /** Asks the provider for this encoding where it lets the caller choose (OpenAI `output_format`). */
  outputMimeType?: ImageMimeType;
}

export interface ImageEditRequest {
  model: string;
  prompt: string;
  n: number;
  image: ImageBytes;
  size?: string;
  outputMimeType?: ImageMimeType;
}

export interface VideoRequest {
  model: string;
  prompt: string;
  durationSeconds: number;
  aspectRatio: '16:9' | '9:16';
  image?: ImageBytes;
  lastFrame?: ImageBytes;
}

export interface VideoDownload {
  /** Upstream status: 200, or 206 for a satisfied `range`. */
  status: number;
  /** Pass-through subset: content-type, content-length, content-range, accept-ranges, etag, last-modified. */
  headers: Record<string, string>;
  body: AsyncIterable<Uint8Array>;
}

/** The one interface the rest of the system uses to talk to a provider. */
export interface ProviderAdapter {
  readonly name: string;
  readonly kind: ProviderKind;
  /** Dialects this provider speaks natively, preferred first. */
  readonly textDialects: readonly TextDialect[];
  /** Hosts this provider's image URLs may come from; pass to `fetchProviderImage`. */
  readonly imageHosts?: readonly string[];
  /** Upstream model ids the provider currently serves. */
  listModels(opts?: CallOptions): Promise<string[]>;
  /**
   * Sends a text body (already in `dialect`, `model` included). With `stream: true` it resolves
   * only once the first event is in hand, so a failure before anything could reach the client is
   * thrown here (and is `retryable`), never from the iterator.
   */
  text(
    dialect: TextDialect,
    body: Record<string, unknown>,
    opts: CallOptions & { stream: boolean },
  ): Promise<TextResult>;
  /** Input-token count from the provider's own counter; undefined when the provider has none (compat). */
  countTokens?(dialect: TextDialect, body: Record<string, unknown>, opts?: CallOptions): Promise<number>;
  generateImages?(req: ImageRequest, opts?: CallOptions): Promise<GeneratedImage[]>;
  editImage?(req: ImageEditRequest, opts?: CallOptions): Promise<GeneratedImage[]>;
  createVideo?(req: VideoRequest, opts?: CallOptions): Promise<{ providerJobId: string }>;
  getVideo?(providerJobId: string, opts?: CallOptions): Promise<VideoStatus>;
  /** Asks the provider to stop a job we gave up on; a job it no longer knows is already stopped. */
  cancelVideo?(providerJobId: string, opts?: CallOptions): Promise<void>;
  /** Streams the MP4; `range` is passed through (e.g. 'bytes=0-99'). */
  downloadVideo?(
    providerJobId: string,
    contentRef: string | undefined,
    range: string | undefined,
    opts?: CallOptions,
  ): Promise<VideoDownload>;
  /** Closes the provider's connection pool (at shutdown). */
  close?(): Promise<void>;
}

export const DEFAULT_TIMEOUTS: Timeouts = {
  connectMs: 5_000,
  textFirstByteMs: 60_000,
  textTotalMs: 600_000,
  imageMs: 360_000,
  videoMs: 60_000,
  listMs: 15_000,
};
