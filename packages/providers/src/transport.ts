import { Agent, request } from 'undici';
import type { Dispatcher, FormData } from 'undici';
import { ERROR_BODY_LIMIT, JSON_BODY_LIMIT, discard, readBounded, readErrorText } from './body.ts';
import type { ResponseBody } from './body.ts';
import { CallSignal } from './call-signal.ts';
import { ProviderError, errorFromStatus, errorFromStreamEvent, malformed, parseRetryAfter } from './errors.ts';
import { isRecord } from './json.ts';
import { SseFormatError, parseSse } from './sse.ts';
import type { StreamRules } from './stream-rules.ts';
import type { CallOptions, SseEvent, VideoDownload } from './types.ts';

export interface HttpClientOptions {
  /** Configured provider name; names the provider in errors. */
  provider: string;
  /** Requests to this URL's origin carry `authHeaders`; requests anywhere else never do. */
  baseUrl?: string;
  authHeaders?: Record<string, string>;
  connectMs: number;
  /** Values scrubbed from every error message (the API key). */
  secrets?: readonly string[];
}

export interface HttpCall {
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  /** JSON request body. */
  json?: unknown;
  /** Multipart request body (file uploads). */
  form?: FormData;
  headers?: Record<string, string>;
  /** The call's deadline: the whole call, or for streams the first event, for downloads the headers. */
  timeoutMs: number;
  options?: CallOptions | undefined;
}

export interface StreamCall extends HttpCall {
  /** Deadline for the whole stream, end included. */
  totalMs: number;
  rules: StreamRules;
}

export interface DownloadCall extends HttpCall {
  /** Longest pause between two body chunks. */
  idleMs: number;
}

/** How long we keep reading after a stream's last event, hoping to reuse the connection. */
const DRAIN_GRACE_MS = 1_000;
const MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** Request ids go into a header: only a conservative alphabet, so nothing can be injected. */
const REQUEST_ID = /^[\w.:-]{1,128}$/;
const DOWNLOAD_HEADERS = ['content-type', 'content-length', 'content-range', 'accept-ranges', 'etag', 'last-modified'];

type ResponseHeaders = Dispatcher.ResponseData['headers'];

function header(headers: ResponseHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The error's `code` (undici and Node put network failures there), looking through causes. */
function errorCode(err: unknown): string | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const { code, cause } = current as { code?: unknown; cause?: unknown };
    if (typeof code === 'string' && /^[A-Z0-9_]+$/.test(code)) return code;
    current = cause;
  }
  return undefined;
}

/**
 * The one HTTP client of a provider: a keep-alive connection pool, per-call deadlines composed with
 * the caller's signal, bounded bodies, SSE, and the mapping of every failure to a `ProviderError`
 * (or the caller's own abort, passed on untouched).
 */
export class HttpClient {
  readonly provider: string;
  readonly #agent: Agent;
  readonly #authOrigin: string | undefined;
  readonly #authHeaders: Record<string, string>;
  readonly #secrets: readonly string[];

  constructor(opts: HttpClientOptions) {
    this.provider = opts.provider;
    this.#authOrigin = opts.baseUrl === undefined ? undefined : new URL(opts.baseUrl).origin;
    this.#authHeaders = opts.authHeaders ?? {};
    this.#secrets = opts.secrets ?? [];
    this.#agent = new Agent({
      connect: { timeout: opts.connectMs },
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 600_000,
      // Our own per-capability deadlines govern; undici's fixed 300 s ones would cut long calls.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  }

  /** Sends the call and parses a 2xx JSON answer; anything else becomes a `ProviderError`. */
  async json(call: HttpCall): Promise<unknown> {
    const signal = new CallSignal(call.options?.signal);
    signal.arm(call.timeoutMs, 'answer');
    try {
      const res = await this.#send(call, call.url, signal.signal);
      await this.#ensureOk(res);
      const { bytes, truncated } = await readBounded(res.body, JSON_BODY_LIMIT);
      if (truncated) throw malformed(this.provider, 'the answer exceeded the size limit');
      return this.#parseJson(bytes);
    } catch (err) {
      throw this.#failure(err, signal);
    } finally {
      signal.dispose();
    }
  }

  /** Like `json`, for binary answers; the body is bounded by `maxBytes`. */
  async bytes(call: HttpCall, maxBytes: number): Promise<{ bytes: Buffer; contentType: string | undefined }> {
    const signal = new CallSignal(call.options?.signal);
    signal.arm(call.timeoutMs, 'answer');
    try {
      const res = await this.#send(call, call.url, signal.signal);
      await this.#ensureOk(res);
      const declared = Number(header(res.headers, 'content-length'));
      if (declared > maxBytes) {
        discard(res.body);
        throw malformed(this.provider, 'the file exceeded the size limit');
      }
      const { bytes, truncated } = await readBounded(res.body, maxBytes);
      if (truncated) throw malformed(this.provider, 'the file exceeded the size limit');
      return { bytes, contentType: header(res.headers, 'content-type') };
    } catch (err) {
      throw this.#failure(err, signal);
    } finally {
      signal.dispose();
    }
  }

  /**
   * Opens an SSE stream and resolves once its first event is in hand, so anything that fails before
   * a byte could reach the client is thrown here, retryable. The events then throw (committed,
   * no longer retryable) on an error event, a broken connection, bad data or an early end.
   */
  async stream(call: StreamCall): Promise<AsyncIterable<SseEvent>> {
    const signal = new CallSignal(call.options?.signal);
    const disarmFirst = signal.arm(call.timeoutMs, 'first event');
    signal.arm(call.totalMs, 'stream');
    let body: ResponseBody | undefined;
    try {
      const res = await this.#send({ ...call, headers: { accept: 'text/event-stream', ...call.headers } }, call.url, signal.signal);
      body = res.body;
      await this.#ensureOk(res);
      if (!(header(res.headers, 'content-type') ?? '').includes('text/event-stream')) {
        throw await this.#notAStream(res.body);
      }
      const events = this.#events(res.body, call.rules, signal);
      const first = await events.next();
      if (first.done === true) throw malformed(this.provider, 'the stream ended before its first event');
      disarmFirst();
      return this.#committed(first.value, events, res.body, signal);
    } catch (err) {
      signal.dispose();
      if (body !== undefined) discard(body);
      throw this.#failure(err, signal);
    }
  }

  /**
   * Starts a download (following redirects; auth headers never leave the provider's origin). The
   * body stream throws a committed `ProviderError` when the connection breaks or stalls.
   */
  async download(call: DownloadCall): Promise<VideoDownload> {
    const signal = new CallSignal(call.options?.signal);
    const disarmHeaders = signal.arm(call.timeoutMs, 'download headers');
    try {
      const res = await this.#followRedirects(call, signal);
      await this.#ensureOk(res);
      disarmHeaders();
      const headers: Record<string, string> = {};
      for (const name of DOWNLOAD_HEADERS) {
        const value = header(res.headers, name);
        if (value !== undefined) headers[name] = value;
      }
      return { status: res.statusCode, headers, body: this.#idleGuarded(res.body, signal, call.idleMs) };
    } catch (err) {
      signal.dispose();
      throw this.#failure(err, signal);
    }
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }

  async #send(call: HttpCall, url: string, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
    const headers: Record<string, string> = { accept: 'application/json', ...call.options?.nativeHeaders, ...call.headers };
    if (call.json !== undefined) headers['content-type'] = 'application/json';
    const requestId = call.options?.requestId;
    if (requestId !== undefined && REQUEST_ID.test(requestId)) headers['x-request-id'] = requestId;
    if (this.#authOrigin !== undefined && new URL(url).origin === this.#authOrigin) {
      Object.assign(headers, this.#authHeaders);
    }
    const body = call.form ?? (call.json === undefined ? undefined : JSON.stringify(call.json));
    return request(url, { method: call.method, headers, body, signal, dispatcher: this.#agent });
  }

  async #followRedirects(call: HttpCall, signal: CallSignal): Promise<Dispatcher.ResponseData> {
    let url = call.url;
    for (let hop = 0; ; hop++) {
      const res = await this.#send(call, url, signal.signal);
      const location = header(res.headers, 'location');
      if (!REDIRECT_STATUSES.has(res.statusCode) || location === undefined) return res;
      discard(res.body);
      const next = new URL(location, url);
      if (hop >= MAX_REDIRECTS || (next.protocol !== 'https:' && next.protocol !== 'http:')) {
        throw malformed(this.provider, 'the download redirected too often or to an unusable address');
      }
      url = next.toString();
    }
  }

  async #ensureOk(res: Dispatcher.ResponseData): Promise<void> {
    if (res.statusCode >= 200 && res.statusCode < 300) return;
    const text = await readErrorText(res.body);
    const retryAfterMs = parseRetryAfter(header(res.headers, 'retry-after'), header(res.headers, 'retry-after-ms'));
    throw errorFromStatus(this.provider, res.statusCode, text, this.#secrets, retryAfterMs);
  }

  #parseJson(bytes: Buffer): unknown {
    try {
      return JSON.parse(bytes.toString('utf8'));
    } catch {
      // No cause attached: a JSON SyntaxError quotes the body, which must not reach logs unscrubbed.
      throw malformed(this.provider, 'the answer was not JSON');
    }
  }

  /** A 2xx answer to a stream request that is not a stream: an error in JSON, or nonsense. */
  async #notAStream(body: ResponseBody): Promise<ProviderError> {
    const { bytes } = await readBounded(body, ERROR_BODY_LIMIT);
    let parsed: unknown;
    try {
      parsed = JSON.parse(bytes.toString('utf8'));
    } catch {
      parsed = undefined;
    }
    if (isRecord(parsed) && parsed['error'] !== undefined) {
      return errorFromStreamEvent(this.provider, parsed, this.#secrets);
    }
    return malformed(this.provider, 'expected an event stream');
  }

  async *#events(body: ResponseBody, rules: StreamRules, signal: CallSignal): AsyncGenerator<SseEvent> {
    let ending: 'last' | 'complete' | undefined;
    try {
      for await (const event of parseSse(body)) {
        if (ending === 'last') continue;
        const error = rules.errorIn(event);
        if (error !== undefined) throw errorFromStreamEvent(this.provider, error, this.#secrets);
        const now = rules.ending(event);
        if (now === 'last') signal.arm(DRAIN_GRACE_MS, 'drain');
        ending = now ?? ending;
        yield event;
      }
    } catch (err) {
      // Once the answer is whole (its last event, or its stop reason), a slow or broken close is
      // not a failure: what was read stands, and is billed by the usage it carried (a Gemini
      // stream's final chunk carries both). Failing it would hand the client a complete answer as
      // an error, and charge nothing for it.
      if (ending !== undefined && !signal.callerAborted) return;
      throw err;
    }
    if (ending === undefined) throw malformed(this.provider, 'the stream ended before the answer was complete');
  }

  async *#committed(
    first: SseEvent,
    rest: AsyncGenerator<SseEvent>,
    body: ResponseBody,
    signal: CallSignal,
  ): AsyncGenerator<SseEvent> {
    try {
      yield first;
      yield* rest;
    } catch (err) {
      const mapped = this.#failure(err, signal);
      throw mapped instanceof ProviderError ? mapped.committed() : mapped;
    } finally {
      signal.dispose();
      discard(body);
    }
  }

  async *#idleGuarded(body: ResponseBody, signal: CallSignal, idleMs: number): AsyncGenerator<Uint8Array> {
    // Armed before the first pull, so a body nobody reads is not held open forever.
    let disarm = signal.arm(idleMs, 'download idle');
    try {
      for await (const chunk of body) {
        disarm();
        yield chunk;
        disarm = signal.arm(idleMs, 'download idle');
      }
    } catch (err) {
      const mapped = this.#failure(err, signal);
      throw mapped instanceof ProviderError ? mapped.committed() : mapped;
    } finally {
      signal.dispose();
      discard(body);
    }
  }

  /** Maps anything a call threw: the caller's abort as is, everything else to a `ProviderError`. */
  #failure(err: unknown, signal: CallSignal): unknown {
    if (signal.callerAborted) return signal.callerReason;
    if (err instanceof ProviderError) return err;
    if (err instanceof SseFormatError) return malformed(this.provider, err.message);
    const code = errorCode(err);
    if (signal.expired !== undefined || code === 'UND_ERR_CONNECT_TIMEOUT') {
      return new ProviderError('upstream_timeout', 'The upstream provider did not answer in time', {
        provider: this.provider,
        retryable: true,
      });
    }
    return new ProviderError(
      'upstream_error',
      `The upstream provider could not be reached${code === undefined ? '' : ` (${code})`}`,
      { provider: this.provider, retryable: true, cause: err },
    );
  }
}
