/**
 * What the access log reads of a finished HTTP request. Fastify's request and reply have these
 * members; they are named here rather than imported because packages do not depend on Fastify
 * (only the HTTP services do, see the boundary rules).
 */
export interface AccessLogRequest {
  id: string;
  method: string;
  routeOptions: { url?: string | undefined };
  server: { log: { child(bindings: object, options: { redact: string[] }): LineLogger } };
}
export interface AccessLogReply {
  statusCode: number;
  /** Milliseconds since the request arrived. */
  elapsedTime: number;
}
interface LineLogger {
  info(fields: object, message: string): void;
}

/**
 * The `onResponse` hook of an HTTP service's access log: one `request` line per request, with the
 * request's id, the route's pattern, never its URL (a URL may carry a token in its query), the
 * status and the time taken, plus the service's own fields (`extra`: who asked, in that service's
 * terms: ids, never secrets or content). Services disable Fastify's own request logging (two lines
 * per request, with the URL) and register this:
 * `app.addHook('onResponse', accessLog<FastifyRequest, FastifyReply>((request) => ({...})))`.
 *
 * Its lines skip the logger's redaction, because every field is one of these: the redaction's
 * wildcard paths put each field of a line through the redactor, which cost the edge about 3% of
 * its CPU for this one line per request. Written through a child of the service's logger (same
 * destination, level, trace ids), made once; so what a route binds to `request.log` is not on
 * this line, and a field the access line must carry goes in `extra`.
 */
export function accessLog<Req extends AccessLogRequest, Rep extends AccessLogReply>(extra: (request: Req) => Record<string, unknown> = () => ({})): (request: Req, reply: Rep) => Promise<void> {
  let lines: LineLogger | undefined;
  return async (request, reply) => {
    lines ??= request.server.log.child({}, { redact: [] });
    lines.info(
      {
        reqId: request.id,
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
        ...extra(request),
      },
      'request',
    );
  };
}
