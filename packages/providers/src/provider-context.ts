import { ProviderError } from './errors.ts';
import { HttpClient } from './transport.ts';
import { DEFAULT_TIMEOUTS } from './types.ts';
import type { CallOptions, ProviderConfig, Timeouts } from './types.ts';

/** What every capability function of a provider needs: its name, its HTTP client, its deadlines. */
export interface ProviderContext {
  readonly name: string;
  readonly http: HttpClient;
  readonly timeouts: Timeouts;
  /** Values to scrub from messages built here (the API key). */
  readonly secrets: readonly string[];
  /** Absolute URL of a path under the configured base URL. */
  url(path: string): string;
}

export function resolveTimeouts(overrides: Partial<Timeouts> | undefined): Timeouts {
  return { ...DEFAULT_TIMEOUTS, ...overrides };
}

/** The per-call deadline: the caller's override, else the capability's default. */
export function deadline(ctx: ProviderContext, capability: keyof Timeouts, opts: CallOptions | undefined): number {
  return opts?.timeoutMs ?? ctx.timeouts[capability];
}

export function createContext(config: ProviderConfig, authHeaders: Record<string, string>): ProviderContext {
  const timeouts = resolveTimeouts(config.timeouts);
  const base = config.baseUrl.replace(/\/+$/, '');
  return {
    name: config.name,
    timeouts,
    secrets: [config.apiKey],
    http: new HttpClient({
      provider: config.name,
      baseUrl: base,
      authHeaders,
      connectMs: timeouts.connectMs,
      secrets: [config.apiKey],
    }),
    url: (path) => `${base}${path.startsWith('/') ? path : `/${path}`}`,
  };
}

/** The caller asked for something this provider cannot do; another route may, this one never will. */
export function unsupported(ctx: ProviderContext, what: string): ProviderError {
  return new ProviderError('capability_not_supported', `Provider ${ctx.name} does not support ${what}`, {
    provider: ctx.name,
    retryable: false,
  });
}

/** A request that cannot be sent as is; the request's own fault. */
export function invalidRequest(ctx: ProviderContext, why: string): ProviderError {
  return new ProviderError('invalid_request', why, { provider: ctx.name, retryable: false });
}

/** The `model` of a text body, which every dialect requires. */
export function requireModel(ctx: ProviderContext, body: Record<string, unknown>): string {
  const model = body['model'];
  if (typeof model !== 'string' || model === '') throw invalidRequest(ctx, 'The request body names no model');
  return model;
}
