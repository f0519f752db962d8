import { context, metrics, propagation, trace, type Meter } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor, NodeTracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace-node';
import { TraceContextTracerProvider } from './trace-context-tracer.ts';

export interface TelemetryOptions {
  serviceName: string;
  /** OTLP/HTTP collector base URL (e.g. http://otel-collector:4318); traces are kept local without it. */
  otlpEndpoint?: string | undefined;
  /** Port of the Prometheus scrape endpoint (`/metrics`); no endpoint without it. */
  metricsPort?: number | undefined;
  /** Extra span processors (tests use an in-memory exporter). */
  spanProcessors?: SpanProcessor[];
}

export interface Telemetry {
  meter: Meter;
  shutdown(): Promise<void>;
}

/**
 * Starts tracing (W3C trace context, async-local context propagation, OTLP export when
 * configured) and metrics (Prometheus scrape endpoint when configured). Called first thing in a
 * service's main, before the app is built.
 */
export function startTelemetry(opts: TelemetryOptions): Telemetry {
  const processors: SpanProcessor[] = [...(opts.spanProcessors ?? [])];
  if (opts.otlpEndpoint) {
    processors.push(new BatchSpanProcessor(new OTLPTraceExporter({ url: `${opts.otlpEndpoint.replace(/\/$/, '')}/v1/traces` })));
  }
  const resource = resourceFromAttributes({ 'service.name': opts.serviceName });
  // Async-local context and W3C propagation (traceparent, baggage), as the SDK's register() sets them.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }));
  // Spans that nothing exports are not recorded: without a collector, spans still carry the trace
  // context (across services and into logs) but cost no timing, attributes or processing.
  const tracerProvider = processors.length > 0 ? new NodeTracerProvider({ resource, spanProcessors: processors }) : undefined;
  trace.setGlobalTracerProvider(tracerProvider ?? new TraceContextTracerProvider());

  const readers = opts.metricsPort === undefined ? [] : [new PrometheusExporter({ port: opts.metricsPort, host: '0.0.0.0' })];
  const meterProvider = new MeterProvider({ resource, readers });
  metrics.setGlobalMeterProvider(meterProvider);

  return {
    meter: metrics.getMeter(opts.serviceName),
    async shutdown() {
      await Promise.allSettled([tracerProvider?.shutdown(), meterProvider.shutdown()]);
    },
  };
}
