import type { FastifyInstance, FastifyRequest } from 'fastify';
import { checkAuth } from './auth.ts';
import type { Sim } from './context.ts';
import { asString } from './json.ts';
import { MultipartForm } from './multipart.ts';
import type { Provider } from './types.ts';

const requestInfo = new WeakMap<FastifyRequest, { provider: Provider; model: string | null }>();

/** Provider and model of a request, for the access log line. */
export function requestInfoOf(request: FastifyRequest): { provider: Provider; model: string | null } | undefined {
  return requestInfo.get(request);
}

/** The URL with any `key=` credential (Gemini's query-string API key) removed. */
export function redactedUrl(url: string): string {
  return url.includes('key=') ? url.replace(/([?&])key=[^&]*/g, '$1key=REDACTED') : url;
}

function bodyModel(body: unknown): string | undefined {
  if (body instanceof MultipartForm) return body.text('model');
  return typeof body === 'object' && body !== null ? asString((body as Record<string, unknown>).model) : undefined;
}

const LOGGED_HEADERS = [
  'x-request-id',
  'anthropic-version',
  'anthropic-beta',
  'openai-beta',
  'idempotency-key',
  'content-type',
  'range',
];

function loggedHeaders(request: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of LOGGED_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}

/**
 * Hooks every route of one provider: records the request in the simulator's log (before auth, so
 * refused calls show up too), then checks the provider's credential.
 */
export function guardProvider(
  scope: FastifyInstance,
  sim: Sim,
  provider: Provider,
  opts: { auth: boolean; modelOf?: (request: FastifyRequest) => string | undefined },
): void {
  scope.addHook('preHandler', async (request, reply) => {
    const model = opts.modelOf?.(request) ?? bodyModel(request.body) ?? null;
    requestInfo.set(request, { provider, model });
    const bytes = Number(request.headers['content-length'] ?? 0);
    sim.state.log.record(
      { provider, method: request.method, path: redactedUrl(request.url), model, headers: loggedHeaders(request) },
      request.body,
      Number.isFinite(bytes) ? bytes : 0,
    );
    if (opts.auth) {
      const refused = checkAuth(provider, sim.config.apiKeys[provider], request, reply);
      if (refused) return refused;
    }
    return undefined;
  });
}
