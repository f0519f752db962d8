import { context, propagation, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import type { Metadata } from '@grpc/grpc-js';

const tracer = trace.getTracer('@gw/contracts/grpc');

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
  const span = tracer.startSpan(
    `${service}/${method}`,
    {
      kind: kind === 'client' ? SpanKind.CLIENT : SpanKind.SERVER,
      attributes: { 'rpc.system': 'grpc', 'rpc.service': service, 'rpc.method': method },
    },
    parent,
  );
  const ctx = trace.setSpan(parent, span);
  return context.with(ctx, () => fn(span, ctx)).then(
    (value) => {
      span.end();
      return value;
    },
    (err: unknown) => {
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : 'error' });
      span.end();
      throw err;
    },
  );
}
