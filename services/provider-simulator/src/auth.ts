import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from './errors.ts';
import type { Provider } from './types.ts';

export const DEFAULT_API_KEYS: Record<Provider, string> = {
  openai: 'sim-openai-key',
  anthropic: 'sim-anthropic-key',
  google: 'sim-google-key',
  compat: 'sim-compat-key',
};

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function bearer(request: FastifyRequest): string | undefined {
  const value = header(request, 'authorization');
  const m = value === undefined ? null : /^Bearer\s+(.+)$/i.exec(value.trim());
  return m ? m[1] : undefined;
}

/**
 * Checks the provider's own credential header. Returns the sent reply when the request is refused,
 * undefined when it may proceed.
 */
export function checkAuth(
  provider: Provider,
  expected: string,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply | undefined {
  switch (provider) {
    case 'openai':
    case 'compat': {
      const key = bearer(request);
      if (key === undefined) {
        return sendError(reply, provider, 401, "You didn't provide an API key. Send it in the Authorization header as Bearer.", {
          code: null,
        });
      }
      if (key !== expected) return sendError(reply, provider, 401, 'Incorrect API key provided.');
      return undefined;
    }
    case 'anthropic': {
      // `x-api-key` is the documented header; recent SDKs send the key as a Bearer token instead.
      const key = header(request, 'x-api-key') ?? bearer(request);
      if (key === undefined) return sendError(reply, provider, 401, 'x-api-key header is required');
      if (key !== expected) return sendError(reply, provider, 401, 'invalid x-api-key');
      if (header(request, 'anthropic-version') === undefined) {
        return sendError(reply, provider, 400, 'anthropic-version: header is required');
      }
      return undefined;
    }
    case 'google': {
      const query = request.query as Record<string, string | undefined>;
      const key = header(request, 'x-goog-api-key') ?? query.key;
      if (key !== expected) {
        return sendError(reply, provider, 401, 'API key not valid. Please pass a valid API key.');
      }
      return undefined;
    }
  }
}
