import { context, isSpanContextValid, propagation, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { afterAll, describe, expect, it } from 'vitest';
import { startTelemetry } from '../src/telemetry.ts';

// Without a collector, recording spans would cost every request time and memory for nothing.
// They are not recorded then, but they still carry a valid trace context: across services (the
// W3C header) and into log lines (the logger reads the active span's ids).
describe('telemetry without a collector', () => {
  const telemetry = startTelemetry({ serviceName: 'telemetry-test' });
  afterAll(() => telemetry.shutdown());

  it('creates non-recording spans whose trace context is valid and active', () => {
    const tracer = trace.getTracer('telemetry-test');
    tracer.startActiveSpan('outer', (outer) => {
      expect(outer.isRecording()).toBe(false);
      expect(isSpanContextValid(outer.spanContext())).toBe(true);
      // What the logger's mixin reads for `trace_id` / `span_id`.
      expect(trace.getActiveSpan()?.spanContext().traceId).toBe(outer.spanContext().traceId);
      tracer.startActiveSpan('inner', (inner) => {
        expect(inner.spanContext().traceId).toBe(outer.spanContext().traceId);
        expect(inner.spanContext().spanId).not.toBe(outer.spanContext().spanId);
        inner.end();
      });
      outer.end();
    });
  });

  it('continues an incoming W3C trace, keeps its trace state, and starts a new trace for a root span', () => {
    const tracer = trace.getTracer('telemetry-test');
    const incoming = propagation.extract(ROOT_CONTEXT, {
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      tracestate: 'vendor=opaque',
    });
    const span = tracer.startSpan('server', {}, incoming);
    expect(span.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(span.spanContext().spanId).not.toBe('b7ad6b7169203331');
    expect(span.spanContext().traceState?.serialize()).toBe('vendor=opaque');
    // What the next hop receives.
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(context.active(), span), carrier);
    expect(carrier.traceparent).toMatch(new RegExp(`^00-0af7651916cd43dd8448eb211c80319c-${span.spanContext().spanId}-0[01]$`));

    const root = tracer.startSpan('root', { root: true }, trace.setSpan(incoming, span));
    expect(isSpanContextValid(root.spanContext())).toBe(true);
    expect(root.spanContext().traceId).not.toBe('0af7651916cd43dd8448eb211c80319c');
  });
});
