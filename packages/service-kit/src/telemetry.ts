import { context, metrics, propagation, trace, type Meter } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { createRequire } from 'node:module';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-node';
import { TraceContextTracerProvider } from './trace-context-tracer.ts';

// The trace SDK and the OTLP exporter are loaded only when a collector is configured: without one
// a service does not hold their code, nor the second copy of the semantic conventions (CommonJS)
// that the trace SDK's build loads beside the ES one of the metrics SDK.
const require = createRequire(import.meta.url);
const traceSdk = () => require('@opentelemetry/sdk-trace-node') as typeof import('@opentelemetry/sdk-trace-node');

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
    const { BatchSpanProcessor } = traceSdk();
    const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
    processors.push(new BatchSpanProcessor(new OTLPTraceExporter({ url: `${opts.otlpEndpoint.replace(/\/$/, '')}/v1/traces` })));
  }
  const resource = resourceFromAttributes({ 'service.name': opts.serviceName });
  // Async-local context and W3C propagation (traceparent, baggage), as the SDK's register() sets them.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }));
  // Spans that nothing exports are not recorded: without a collector, spans still carry the trace
  // context (across services and into logs) but cost no timing, attributes or processing.
  const tracerProvider = processors.length > 0 ? new (traceSdk().NodeTracerProvider)({ resource, spanProcessors: processors }) : undefined;
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
