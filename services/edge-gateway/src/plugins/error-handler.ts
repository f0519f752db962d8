import { RpcError } from '@gw/contracts';
import { GatewayError, retryAfterSeconds, shouldRetry } from '@gw/errors';
import { status } from '@grpc/grpc-js';
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { quoteClientValue } from '../http/quote.ts';
import { JSON_BOUND_TEXT, OUT_OF_BOUNDS, PROTO_KEY, type JsonBound } from '../http/json-body.ts';

/**
 * The longest message sent. Messages name every problem of a body and may quote a client's value
 * (cut to a short prefix where quoted, see `quoteClientValue`); a body with thousands of problems
 * is still answered with a bounded message.
 */
export const MAX_MESSAGE_CHARS = 2_000;

/** The error's public body, its message cut to {@link MAX_MESSAGE_CHARS} (by code point). */
function publicBody(err: GatewayError): ReturnType<GatewayError['toBody']> {
  const body = err.toBody();
  if (body.error.message.length > MAX_MESSAGE_CHARS) body.error.message = `${Array.from(body.error.message.slice(0, MAX_MESSAGE_CHARS)).join('')}… (cut)`;
  return body;
}

/** Sends a domain error in the spec's shape with the headers SDK clients act on. */
export function sendError(reply: FastifyReply, err: GatewayError): FastifyReply {
  reply.request.errorCode = err.code;
  if (!shouldRetry(err.code)) reply.header('x-should-retry', 'false');
  const retryAfter = retryAfterSeconds(err);
  if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter));
  // Refused before its body was read (auth, rate limit, no route...): the body will not be read,
  // so the connection cannot carry another request; closed instead of waiting for the rest.
  if (!reply.request.raw.complete) reply.header('connection', 'close');
  return reply.code(err.httpStatus).type('application/json').send(publicBody(err));
}

/**
 * Fastify's own client errors (bad JSON, too large, wrong content type, schema) as `invalid_request`.
 * `bodyLimit` is the refusing route's own limit (media routes raise the default); `help` the
 * route's own words for a body too large or not JSON (media routes cite their image rule).
 */
function clientError(err: FastifyError, bodyLimit: number, help: { tooLarge?: string; notJson?: string } = {}): GatewayError | null {
  if (err.validation) return new GatewayError('invalid_request', `Invalid request: ${err.message}`);
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('invalid_request', help.tooLarge ?? `The request body is larger than ${bodyLimit} bytes, more than any valid request.`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError('invalid_request', help.notJson ?? 'The request body must be JSON (Content-Type: application/json).');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new GatewayError('invalid_request', 'The request body is empty; a JSON object is required.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new GatewayError('invalid_request', 'The request body is not valid JSON.');
    case PROTO_KEY:
      return new GatewayError('invalid_request', 'The request body holds a "__proto__" key, which is not accepted in any field. Remove it.');
    case OUT_OF_BOUNDS:
      return new GatewayError('invalid_request', `The request body ${JSON_BOUND_TEXT[(err as FastifyError & { bound: JsonBound }).bound]}, more than any valid request.`);
  }
  if (err instanceof SyntaxError) return new GatewayError('invalid_request', 'The request body is not valid JSON.');
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    return new GatewayError('invalid_request', 'The request could not be read.');
  }
  return null;
}

/**
 * A check that comes earlier in the order of checks than the failure being answered, and that
 * the route runs later (the deferred rate limit, see route-checks.ts): consulted before any
 * failure is reported, so its error wins.
 */
type EarlierCheck = (request: FastifyRequest) => Promise<void>;

const notFound = (request: FastifyRequest, reply: FastifyReply) =>
  sendError(reply, new GatewayError('not_found', `No route for ${request.method} ${quoteClientValue(request.url.split('?')[0], 128)}.`));

/**
 * Every failure leaves in the spec's `{error:{code,message}}` shape with a code from its closed
 * set: domain errors as they are, client errors as `invalid_request`, unknown routes as
 * `not_found`, and anything unexpected as `upstream_error` with its cause only in the log.
 */
export function registerErrorHandling(app: FastifyInstance, bodyLimit: number, earlierCheck: EarlierCheck = async () => {}): void {
  app.setErrorHandler(async (err: FastifyError, request, reply) => {
    try {
      await earlierCheck(request);
    } catch (earlier) {
      if (earlier instanceof GatewayError) return sendError(reply, earlier);
      request.log.warn({ err: earlier }, 'a check earlier in the order of checks could not run');
    }
    if (err instanceof GatewayError) return sendError(reply, err);
    if (err instanceof RpcError && err.grpcCode === status.DEADLINE_EXCEEDED) {
      // One of our services did not answer before the charge (a settle retries, see metering.ts).
      return sendError(reply, new GatewayError('upstream_timeout', 'The request did not complete in time. Nothing was charged.'));
    }
    const asClient = clientError(err, request.routeOptions.bodyLimit ?? bodyLimit, request.routeOptions.config.bodyHelp);
    if (asClient) return sendError(reply, asClient);
    request.log.error({ err }, 'request failed unexpectedly');
    return sendError(reply, new GatewayError('upstream_error', 'The request could not be completed. It was not charged.'));
  });
  // Answered as soon as the request line is read: a body sent to no route is never read (it was,
  // up to 1 MiB and in no budget, for as long as the client took to send it).
  app.addHook('onRequest', async (request, reply) => {
    if (!request.is404) return;
    reply.header('x-request-id', request.id);
    await notFound(request, reply);
  });
  app.setNotFoundHandler(notFound);
}

/**
 * What reaches no route because the HTTP layer cannot read it as a request (a malformed request
 * line or header, headers past Node's size bound, a request that never finishes): answered on the
 * socket in the spec's shape, `400 invalid_request`, instead of Fastify's own body.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const message =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? 'The request headers are larger than the server accepts.'
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? 'The request was not received in time.'
        : 'The request is not valid HTTP.';
  const body = JSON.stringify(new GatewayError('invalid_request', message).toBody());
  if (socket.writable) {
    // Every response carries a request id (DECISIONS.md), this one too: there was no request to take one from.
    const head = `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${randomUUID()}\r\nConnection: close`;
    socket.write(`${head}\r\n\r\n${body}`);
  }
  socket.destroy(err);
}

/** Errors of Fastify's router (a URL that does not decode), in the spec's shape; no hook ran, so the id is set here. */
export function frameworkErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const message = err.code === 'FST_ERR_BAD_URL' ? 'The request URL could not be decoded.' : 'The request could not be read.';
  reply.header('x-request-id', request.id);
  void sendError(reply, new GatewayError('invalid_request', message));
}
