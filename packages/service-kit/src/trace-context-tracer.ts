import {
  context,
  isSpanContextValid,
  trace,
  TraceFlags,
  type Context,
  type Span,
  type SpanOptions,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';

/**
 * Random ids as the SDK's RandomIdGenerator makes them (Math.random, never all zeros), without
 * loading the trace SDK into a service that exports no spans.
 */
const ID_BUFFER = Buffer.allocUnsafe(16);
function randomId(bytes: 8 | 16): string {
  for (let i = 0; i < bytes / 4; i++) ID_BUFFER.writeUInt32BE((Math.random() * 2 ** 32) >>> 0, i * 4);
  for (let i = 0; i < bytes; i++) {
    if (ID_BUFFER[i]! > 0) break;
    if (i === bytes - 1) ID_BUFFER[bytes - 1] = 1;
  }
  return ID_BUFFER.toString('hex', 0, bytes);
}

/**
 * The tracer of a service that exports no spans. Its spans record nothing, as the SDK's with an
 * always-off sampler would, but they cost only two random ids: no sampler, attribute copies or
 * span-count metrics on every span of every request. They still carry a valid trace context, a
 * new span id under the parent's trace (or a new trace), so it travels across services in the W3C
 * header and into log lines.
 */
class TraceContextTracer implements Tracer {
  startSpan(_name: string, options: SpanOptions = {}, ctx: Context = context.active()): Span {
    const parent = options.root ? undefined : trace.getSpanContext(ctx);
    const child = parent !== undefined && isSpanContextValid(parent);
    return trace.wrapSpanContext({
      traceId: child ? parent.traceId : randomId(16),
      spanId: randomId(8),
      traceFlags: TraceFlags.NONE,
      ...(child && parent.traceState ? { traceState: parent.traceState } : {}),
    });
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, ctx: Context, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, ...rest: [F] | [SpanOptions, F] | [SpanOptions, Context, F]): ReturnType<F> {
    const fn = rest[rest.length - 1] as F;
    const options = rest.length > 1 ? (rest[0] as SpanOptions) : {};
    const parent = rest.length > 2 ? (rest[1] as Context) : context.active();
    const span = this.startSpan(name, options, parent);
    return context.with(trace.setSpan(parent, span), () => fn(span) as ReturnType<F>);
  }
}

export class TraceContextTracerProvider implements TracerProvider {
  readonly #tracer = new TraceContextTracer();

  getTracer(): Tracer {
    return this.#tracer;
  }
}
