/**
 * The public error codes: exactly the closed set of spec section 7.2, each with its HTTP status and
 * the gRPC status a service uses to carry it. No other `code` value is ever sent to a client.
 */
export const ERROR_TABLE = {
  invalid_request: { http: 400, grpc: 3 /* INVALID_ARGUMENT */ },
  unknown_model: { http: 400, grpc: 5 /* NOT_FOUND */ },
  capability_not_supported: { http: 400, grpc: 9 /* FAILED_PRECONDITION */ },
  auth_missing_or_malformed: { http: 401, grpc: 16 /* UNAUTHENTICATED */ },
  auth_invalid: { http: 401, grpc: 16 },
  auth_revoked: { http: 401, grpc: 16 },
  auth_expired: { http: 401, grpc: 16 },
  insufficient_balance: { http: 402, grpc: 9 },
  not_found: { http: 404, grpc: 5 },
  duplicate_request: { http: 409, grpc: 6 /* ALREADY_EXISTS */ },
  api_key_limit_exceeded: { http: 429, grpc: 8 /* RESOURCE_EXHAUSTED */ },
  rate_limit_exceeded: { http: 429, grpc: 8 },
  upstream_rate_limited: { http: 429, grpc: 8 },
  upstream_error: { http: 502, grpc: 14 /* UNAVAILABLE */ },
  pricing_not_configured: { http: 503, grpc: 9 },
  model_disabled: { http: 503, grpc: 9 },
  model_temporarily_unavailable: { http: 503, grpc: 14 },
  api_key_quota_reconciliation_required: { http: 503, grpc: 9 },
  system_maintenance: { http: 503, grpc: 14 },
  ai_requests_disabled: { http: 503, grpc: 14 },
  provider_catalog_stale: { http: 503, grpc: 14 },
  model_catalog_disabled: { http: 503, grpc: 14 },
  upstream_timeout: { http: 504, grpc: 4 /* DEADLINE_EXCEEDED */ },
} as const satisfies Record<string, { http: number; grpc: number }>;

export type ErrorCode = keyof typeof ERROR_TABLE;

export const ERROR_CODES = Object.keys(ERROR_TABLE) as ErrorCode[];

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_TABLE, value);
}

/** Extra fields the spec names on some errors; they appear beside `code` and `message`. */
export interface ErrorDetails {
  limit_type?: string;
  period?: string;
  retry_after_seconds?: number;
  job_id?: string;
  /** The imitated protocol's own `error.details`, where its SDK looks (e.g. `error_code`). */
  details?: Record<string, unknown>;
}

/**
 * A domain error with a public code. Thrown anywhere in a service; the gRPC adapter carries it
 * across as a status plus metadata and the gateway renders it as `{error:{code,message,...}}`.
 */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}) {
    super(message);
    this.name = 'GatewayError';
    this.code = code;
    this.details = details;
  }

  get httpStatus(): number {
    return ERROR_TABLE[this.code].http;
  }

  /** The public body: `{error:{code,message}}` plus the extra fields this error carries. */
  toBody(): { error: { code: ErrorCode; message: string } & ErrorDetails } {
    return { error: { code: this.code, message: this.message, ...this.details } };
  }
}

/** Errors a client must not retry even though an SDK would (DECISIONS.md: `x-should-retry: false`). */
export function shouldRetry(code: ErrorCode): boolean {
  const status = ERROR_TABLE[code].http;
  if (code === 'api_key_limit_exceeded' || code === 'insufficient_balance') return false;
  if (code === 'api_key_quota_reconciliation_required') return false;
  return status === 429 || status >= 500;
}

/**
 * Seconds a client should wait before retrying a temporary 503 (sent as `Retry-After`): the
 * operator switches, a stale catalog and a model not served right now pass on their own. The
 * 503s that need someone to act (a price, a disabled model, a reconciliation) have none.
 */
const TEMPORARY_RETRY_AFTER: Partial<Record<ErrorCode, number>> = {
  system_maintenance: 60,
  ai_requests_disabled: 60,
  provider_catalog_stale: 120,
  model_temporarily_unavailable: 30,
  model_catalog_disabled: 60,
};

/** The `Retry-After` of an error: its own `retry_after_seconds`, else its code's default, else none. */
export function retryAfterSeconds(err: GatewayError): number | undefined {
  return err.details.retry_after_seconds ?? TEMPORARY_RETRY_AFTER[err.code];
}
