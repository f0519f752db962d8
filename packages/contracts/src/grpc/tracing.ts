import { context, metrics, propagation, SpanKind, SpanStatusCode, trace, type Context, type Histogram, type Span } from '@opentelemetry/api';
import type { Metadata } from '@grpc/grpc-js';

/**
 * Looked up at each use: `@opentelemetry/api` is loaded both as ESM (here) and as CommonJS (by the
 * SDK), and a tracer taken at module load, before the service registers the SDK, stays a no-op.
 */
const tracer = () => trace.getTracer('@gw/contracts/grpc');
const durations: Partial<Record<'client' | 'server', Histogram>> = {};

/** `rpc.{client,server}.call.duration`, created on first use (after the service set up metrics). */
function durationOf(kind: 'client' | 'server'): Histogram {
  durations[kind] ??= metrics.getMeter('@gw/contracts/grpc').createHistogram(`rpc.${kind}.call.duration`, {
    unit: 's',
    description: `Duration of gRPC calls (${kind} side)`,
    advice: { explicitBucketBoundaries: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60, 600] },
  });
  return durations[kind];
}

/** W3C trace context travels in gRPC metadata. */
export function injectTrace(metadata: Metadata, ctx: Context = context.active()): void {
  propagation.inject(ctx, metadata, { set: (carrier, key, value) => carrier.set(key, value) });
}

export function extractTrace(metadata: Metadata): Context {
  return propagation.extract(context.active(), metadata, {
    get: (carrier, key) => {
      const v = carrier.get(key)[0];
      return typeof v === 'string' ? v : undefined;
    },
    keys: (carrier) => Object.keys(carrier.getMap()),
  });
}

/** Runs `fn` in an RPC span named `<package.Service>/<Method>`, per the OTel RPC conventions. */
export function withRpcSpan<T>(
  kind: 'client' | 'server',
  service: string,
  method: string,
  parent: Context,
  fn: (span: Span, ctx: Context) => Promise<T>,
): Promise<T> {
  const span = tracer().startSpan(
    `${service}/${method}`,
    {
      kind: kind === 'client' ? SpanKind.CLIENT : SpanKind.SERVER,
      attributes: { 'rpc.system': 'grpc', 'rpc.service': service, 'rpc.method': method },
    },
    parent,
  );
  const ctx = trace.setSpan(parent, span);
  const started = performance.now();
  const record = (status: string) =>
    durationOf(kind).record((performance.now() - started) / 1000, { 'rpc.system': 'grpc', 'rpc.service': service, 'rpc.method': method, 'rpc.response.status_code': status });
  return context.with(ctx, () => fn(span, ctx)).then(
    (value) => {
      record('OK');
      span.end();
      return value;
    },
    (err: unknown) => {
      // Domain errors keep their public code; anything else is its class name.
      const code = err instanceof Error ? ((err as { code?: unknown }).code as string | undefined) ?? err.name : 'error';
      record(typeof code === 'string' ? code : 'error');
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : 'error' });
      span.end();
      throw err;
    },
  );
}
