import { GatewayError } from '@gw/errors';
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { ForbiddenError } from '../members/roles.ts';
import { forbiddenPage, messagePage } from '../views/auth.view.ts';
import { BadFormError } from './forms.ts';

/**
 * Errors as pages (or JSON below `/internal/`). A key or account of someone else is `not_found`
 * from billing and reads exactly like a page that does not exist. Unexpected failures are logged
 * with their cause and shown as a generic message without internals.
 */
/** Below `/internal/` (the operator's JSON endpoint), by the route matched, else by the decoded path. */
function isInternal(request: FastifyRequest): boolean {
  const path = request.routeOptions.url ?? safeDecode(request.url.split('?')[0] ?? '');
  return path.startsWith('/internal/');
}

function safeDecode(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

export function registerErrorPages(app: FastifyInstance): void {
  app.setNotFoundHandler(async (request, reply) => {
    if (isInternal(request)) return reply.code(404).send({ error: { code: 'not_found', message: 'No such endpoint.' } });
    return reply.code(404).type('text/html; charset=utf-8').send(messagePage('Not found', 'There is nothing here.').value);
  });

  app.setErrorHandler(async (err: FastifyError | Error, request, reply) => {
    let status = 500;
    let title = 'Something went wrong';
    let text = 'The console could not complete this request. Try again shortly.';
    if (err instanceof GatewayError) {
      if (err.code === 'not_found') {
        status = 404;
        title = 'Not found';
        text = 'There is nothing here.';
      } else if (err.code === 'invalid_request') {
        status = 400;
        title = 'Not accepted';
        text = err.message;
      } else {
        request.log.error({ err }, 'billing or catalog call failed');
        status = 502;
        text = 'A service the console depends on is unavailable. Try again shortly.';
      }
    } else if (err instanceof ForbiddenError) {
      request.log.warn({ err: err.message, member: request.memberSession?.member.memberId }, 'refused: the role does not allow it');
      const role = request.memberSession?.member.role ?? 'none';
      return reply.code(403).type('text/html; charset=utf-8').send(forbiddenPage(role).value);
    } else if (err instanceof BadFormError) {
      status = 400;
      title = 'Not accepted';
      text = 'The form was not filled in as expected.';
    } else if ('statusCode' in err && typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      status = err.statusCode;
      title = 'Not accepted';
      text = 'The request was not understood.';
    } else {
      request.log.error({ err }, 'request failed unexpectedly');
    }
    if (isInternal(request)) {
      const code = status === 404 ? 'not_found' : status < 500 ? 'invalid_request' : 'upstream_error';
      return reply.code(status).send({ error: { code, message: text } });
    }
    return reply.code(status).type('text/html; charset=utf-8').send(messagePage(title, text).value);
  });
}
