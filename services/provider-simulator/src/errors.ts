import type { FastifyReply } from 'fastify';
import type { Provider } from './types.ts';

/** Optional overrides of the provider-specific error type/code derived from the status. */
export interface ErrorDetail {
  type?: string;
  code?: string | null;
  param?: string | null;
}

const DEFAULT_MESSAGES: Record<number, string> = {
  400: 'Invalid request.',
  401: 'Invalid authentication credentials.',
  403: 'Permission denied.',
  404: 'Not found.',
  408: 'Request timed out.',
  413: 'Request too large.',
  429: 'Rate limit reached for requests. Please try again later. (simulated)',
  500: 'The server had an error while processing your request. (simulated)',
  502: 'Bad gateway. (simulated)',
  503: 'The service is temporarily overloaded. Please try again later. (simulated)',
  504: 'The request timed out upstream. (simulated)',
  529: 'Overloaded. (simulated)',
};

export function defaultMessage(status: number): string {
  return DEFAULT_MESSAGES[status] ?? `Simulated error with status ${status}.`;
}

function openaiError(status: number, message: string, detail: ErrorDetail): unknown {
  let type = 'invalid_request_error';
  let code: string | null = null;
  if (status === 401) code = 'invalid_api_key';
  else if (status === 404) code = 'model_not_found';
  else if (status === 429) {
    type = 'requests';
    code = 'rate_limit_exceeded';
  } else if (status >= 500) type = 'server_error';
  return {
    error: {
      message,
      type: detail.type ?? type,
      param: detail.param ?? null,
      code: detail.code === undefined ? code : detail.code,
    },
  };
}

const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  503: 'overloaded_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

function anthropicError(status: number, message: string, detail: ErrorDetail, requestId: string): unknown {
  const type = detail.type ?? ANTHROPIC_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  return { type: 'error', error: { type, message }, request_id: requestId };
}

const GOOGLE_STATUSES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ALREADY_EXISTS',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

function googleError(status: number, message: string, detail: ErrorDetail): unknown {
  const code = detail.type ?? GOOGLE_STATUSES[status] ?? (status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION');
  return { error: { code: status, message, status: code } };
}

/** The provider's own error body for a status. */
export function errorBody(
  provider: Provider,
  status: number,
  message: string,
  detail: ErrorDetail = {},
  requestId = '',
): unknown {
  switch (provider) {
    case 'anthropic':
      return anthropicError(status, message, detail, requestId);
    case 'google':
      return googleError(status, message, detail);
    case 'openai':
    case 'compat':
      return openaiError(status, message, detail);
  }
}

export function sendError(
  reply: FastifyReply,
  provider: Provider,
  status: number,
  message = defaultMessage(status),
  detail: ErrorDetail = {},
): FastifyReply {
  if (status === 429 || status === 503 || status === 529) reply.header('retry-after', '1');
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send(errorBody(provider, status, message, detail, String(reply.request.id)));
}

/** The "no such model" answer each provider gives. */
export function sendModelNotFound(reply: FastifyReply, provider: Provider, model: string): FastifyReply {
  switch (provider) {
    case 'anthropic':
      return sendError(reply, provider, 404, `model: ${model}`);
    case 'google':
      return sendError(reply, provider, 404, `models/${model} is not found for API version v1beta, or is not supported.`);
    case 'openai':
    case 'compat':
      return sendError(reply, provider, 404, `The model \`${model}\` does not exist or you do not have access to it.`, {
        code: 'model_not_found',
      });
  }
}
