/**
 * What the access log reads of a finished HTTP request. Fastify's request and reply have these
 * members; they are named here rather than imported because packages do not depend on Fastify
 * (only the HTTP services do, see the boundary rules).
 */
export interface AccessLogRequest {
  method: string;
  routeOptions: { url?: string | undefined };
  log: { info(fields: object, message: string): void };
}
export interface AccessLogReply {
  statusCode: number;
  /** Milliseconds since the request arrived. */
  elapsedTime: number;
}

/**
 * The `onResponse` hook of an HTTP service's access log: one `request` line per request, with the
 * route's pattern, never its URL (a URL may carry a token in its query), the status and the time
 * taken, plus the service's own fields (`extra`: who asked, in that service's terms). Services
 * disable Fastify's own request logging (two lines per request, with the URL) and register this:
 * `app.addHook('onResponse', accessLog<FastifyRequest, FastifyReply>((request) => ({...})))`.
 */
export function accessLog<Req extends AccessLogRequest, Rep extends AccessLogReply>(extra: (request: Req) => Record<string, unknown> = () => ({})): (request: Req, reply: Rep) => Promise<void> {
  return async (request, reply) => {
    request.log.info(
      {
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
