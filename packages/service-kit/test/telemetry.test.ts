import { isSpanContextValid, trace } from '@opentelemetry/api';
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
});
