import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Logger as OrmLogger, LogContext, LoggerNamespace } from '@mikro-orm/core';

const tracer = () => trace.getTracer('@gw/service-kit/db');

/** One statement as a CLIENT span of the active trace: its operation and schema, never its text. */
export function recordStatementSpan(schema: string, sql: string, startMs: number, endMs: number, failed: boolean): void {
  const operation = /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase() ?? 'QUERY';
  const span = tracer().startSpan(`${operation} ${schema}`, {
    kind: SpanKind.CLIENT,
    startTime: startMs,
    attributes: { 'db.system.name': 'postgresql', 'db.namespace': schema, 'db.operation.name': operation },
  });
  if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end(endMs);
}

/**
 * The ORM's logger, turned to telemetry: MikroORM reports every statement it ran (with its
 * duration, in the statement's async context), and each becomes a CLIENT span of the active trace.
 * Spans carry the operation and the schema, never the statement text or parameters (rows hold
 * prompts and key hashes). The ORM's own chatter (discovery, schema) is dropped: services log
 * what they did through their own logger.
 */
export class QuerySpanLogger implements OrmLogger {
  readonly #schema: string;

  constructor(schema: string) {
    this.#schema = schema;
  }

  logQuery(context: LogContext): void {
    if (context.namespace === 'slow-query' || !context.query) return;
    const end = Date.now();
    recordStatementSpan(this.#schema, context.query, end - (context.took ?? 0), end, context.level === 'error');
  }

  log(): void {}
  error(): void {}
  warn(): void {}
  setDebugMode(): void {}
  isEnabled(namespace: LoggerNamespace): boolean {
    return namespace === 'query';
  }
}
