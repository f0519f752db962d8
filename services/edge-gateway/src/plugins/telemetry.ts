import { context, metrics, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Histogram } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's trace context: its SERVER span, child of the caller's `traceparent`. */
    otel: Context;
    /** Public error code of the answer, when it is an error (for metrics). */
    errorCode: string | undefined;
  }
}

/**
 * Looked up at each use: `@opentelemetry/api` is loaded both as ESM (here) and as CommonJS (by the
 * SDK), and a tracer taken at module load, before the service registers the SDK, stays a no-op.
 */
const tracer = () => trace.getTracer('@gw/edge-gateway');
let duration: Histogram | undefined;

/**
 * One SERVER span and one `http.server.request.duration` sample per request, by route, method,
 * status and public error code (request rate, errors by code and latency all come from it). The
 * span's context is active in the auth hook and the route handler, so every gRPC call, log line
 * and provider call of the request joins the same trace. Streams are measured to their end.
 */
export function registerTelemetry(app: FastifyInstance): void {
  app.decorateRequest('otel', null as unknown as Context);
  app.decorateRequest('errorCode', undefined);
  app.addHook('onRequest', async (request, reply) => {
    const parent = propagation.extract(ROOT_CONTEXT, request.headers);
    const route = request.routeOptions.url ?? 'unmatched';
    const span = tracer().startSpan(
      `${request.method} ${route}`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method, 'http.route': route, 'url.path': request.url.split('?')[0] } },
      parent,
    );
    request.otel = trace.setSpan(parent, span);
    const started = performance.now();
    reply.raw.once('close', () => finish(request, reply, started));
  });
  // Route handlers run inside the request's span.
  app.addHook('onRoute', (route) => {
    const handler = route.handler;
    route.handler = function tracedHandler(this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      return context.with(request.otel, () => handler.call(this, request, reply));
    };
  });
}

function finish(request: FastifyRequest, reply: FastifyReply, started: number): void {
  const span = trace.getSpan(request.otel);
  const status = reply.raw.statusCode;
  const attrs: Record<string, string | number> = {
    'http.request.method': request.method,
    'http.route': request.routeOptions.url ?? 'unmatched',
    'http.response.status_code': status,
  };
  if (request.errorCode) attrs['error.type'] = request.errorCode;
  if (!reply.raw.writableFinished) attrs['gw.client_aborted'] = 'true';
  duration ??= metrics.getMeter('@gw/edge-gateway').createHistogram('http.server.request.duration', {
    unit: 's',
    description: 'Duration of public API requests (streams to their end)',
    advice: { explicitBucketBoundaries: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180, 360] },
  });
  duration.record((performance.now() - started) / 1000, attrs);
  if (span) {
    span.setAttributes(attrs);
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: request.errorCode ?? String(status) });
    span.end();
  }
}
