import { GatewayError } from '@gw/errors';
import type { ErrorCode } from '@gw/errors';

/**
 * An upstream failure, already mapped to a public code. `retryable` means another route may be
 * tried: nothing reached the client yet and the fault is the provider's (429, 5xx, timeout,
 * connection, our own credentials refused), not the request's.
 */
export class ProviderError extends GatewayError {
  readonly retryable: boolean;
  /** Configured provider name (never its key). */
  readonly provider: string;
  /** Upstream HTTP status when there was one. */
  readonly upstreamStatus: number | undefined;
  /** How long the provider asked to be left alone (its `Retry-After` on a 429 or 503), in ms. */
  readonly retryAfterMs: number | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { provider: string; retryable: boolean; upstreamStatus?: number; retryAfterMs?: number; cause?: unknown },
  ) {
    super(code, message);
    this.name = 'ProviderError';
    this.retryable = opts.retryable;
    this.provider = opts.provider;
    this.upstreamStatus = opts.upstreamStatus;
    this.retryAfterMs = opts.retryAfterMs;
    if (opts.cause !== undefined) this.cause = opts.cause;
  }

  /** The same error, marked not retryable (used once a stream has delivered its first event). */
  committed(): ProviderError {
    if (!this.retryable) return this;
    return new ProviderError(this.code, this.message, {
      provider: this.provider,
      retryable: false,
      ...(this.upstreamStatus === undefined ? {} : { upstreamStatus: this.upstreamStatus }),
      ...(this.retryAfterMs === undefined ? {} : { retryAfterMs: this.retryAfterMs }),
      cause: this.cause,
    });
  }
}

export function isProviderError(err: unknown): err is ProviderError {
  return err instanceof ProviderError;
}

const MAX_MESSAGE = 500;

/**
 * Makes a provider's text safe to show: removes anything that looks like a credential (our own key
 * first, then common key shapes and auth headers) and bounds the length.
 */
export function sanitize(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join('[redacted]');
  }
  out = out
    .replace(/\b(Bearer|Basic)\s+[\w.~+/=-]+/gi, '$1 [redacted]')
    .replace(/\b(sk|pk|rk)-[\w-]{6,}/g, '[redacted]')
    .replace(/\bAIza[\w-]{10,}/g, '[redacted]')
    .replace(/([?&](?:key|api_key|apikey|access_token)=)[^&\s"']+/gi, '$1[redacted]')
    .replace(/\s+/g, ' ')
    .trim();
  return out.length > MAX_MESSAGE ? `${out.slice(0, MAX_MESSAGE)}…` : out;
}

/** Pulls the human message out of the usual error bodies (OpenAI, Anthropic, Gemini). */
export function upstreamMessage(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const record = body as Record<string, unknown>;
  const error = record['error'];
  if (typeof error === 'string') return error;
  if (typeof error === 'object' && error !== null) {
    const message = (error as Record<string, unknown>)['message'];
    if (typeof message === 'string') return message;
  }
  const message = record['message'];
  return typeof message === 'string' ? message : undefined;
}

/**
 * A `Retry-After` header (delta seconds or an HTTP date) or OpenAI's `retry-after-ms`, in ms;
 * undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, valueMs: string | undefined, now: number = Date.now()): number | undefined {
  const ms = Number(valueMs);
  if (valueMs !== undefined && Number.isFinite(ms) && ms >= 0) return Math.round(ms);
  if (value === undefined || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.round(seconds * 1000) : undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Maps a non-2xx upstream answer. `bodyText` is the (bounded) raw body. */
export function errorFromStatus(
  provider: string,
  status: number,
  bodyText: string,
  secrets: readonly string[],
  retryAfterMs?: number,
): ProviderError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    parsed = undefined;
  }
  const detail = upstreamMessage(parsed);
  // Only a 429 or a 503 asks for a rest; elsewhere the header means nothing to route health.
  const rest = retryAfterMs !== undefined && (status === 429 || status === 503) ? { retryAfterMs } : {};
  const base = { provider, upstreamStatus: status, ...rest };
  if (status === 429) {
    return new ProviderError('upstream_rate_limited', `The upstream provider is rate limiting requests`, {
      ...base,
      retryable: true,
    });
  }
  if (status === 401 || status === 403) {
    // Our credentials for this provider were refused: the caller's request is not at fault, and
    // another route (another key or provider) may well work.
    return new ProviderError('upstream_error', `The upstream provider refused the gateway's credentials`, {
      ...base,
      retryable: true,
    });
  }
  if (status === 408) {
    return new ProviderError('upstream_timeout', `The upstream provider timed out`, { ...base, retryable: true });
  }
  if (status === 404) {
    // The provider does not know the model (or endpoint) this route names: the route is stale,
    // not the client's request wrong, and another route may serve it.
    return new ProviderError('upstream_error', `The upstream provider does not serve this model or endpoint`, { ...base, retryable: true });
  }
  if (status >= 400 && status < 500) {
    const why = detail === undefined ? `status ${status}` : sanitize(detail, secrets);
    return new ProviderError('invalid_request', `The upstream provider rejected the request: ${why}`, {
      ...base,
      retryable: false,
    });
  }
  return new ProviderError('upstream_error', `The upstream provider failed (status ${status})`, {
    ...base,
    retryable: true,
  });
}

/** A 2xx answer we cannot understand. Retryable: nothing has been shown to the client. */
export function malformed(provider: string, what: string, cause?: unknown): ProviderError {
  return new ProviderError('upstream_error', `The upstream provider sent a malformed answer: ${what}`, {
    provider,
    retryable: true,
    cause,
  });
}

/**
 * Maps an error event inside a stream (OpenAI `{error:{...}}`, Anthropic `event: error`, responses
 * `error`/`response.failed`, Gemini `{error:{code,...}}`). Rate limiting keeps its own code.
 */
export function errorFromStreamEvent(provider: string, payload: unknown, secrets: readonly string[]): ProviderError {
  const record = typeof payload === 'object' && payload !== null ? (payload as Record<string, unknown>) : {};
  const inner = record['error'];
  const err = typeof inner === 'object' && inner !== null ? (inner as Record<string, unknown>) : record;
  const kind = [err['type'], err['code'], err['status'], record['code']]
    .filter((v) => typeof v === 'string' || typeof v === 'number')
    .join(' ');
  const rateLimited = /rate_limit|429|RESOURCE_EXHAUSTED/i.test(kind);
  const detail = upstreamMessage(payload);
  const suffix = detail === undefined ? '' : `: ${sanitize(detail, secrets)}`;
  return new ProviderError(
    rateLimited ? 'upstream_rate_limited' : 'upstream_error',
    `The upstream provider stream failed${suffix}`,
    { provider, retryable: true },
  );
}
