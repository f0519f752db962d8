import type { Meter } from '@opentelemetry/api';
import type { MikroORM } from '@mikro-orm/postgresql';

export interface QueryGauge {
  name: string;
  description: string;
  unit?: string;
  /** One row per series: `value`, plus string columns that become the series' attributes. */
  sql: string;
}

/**
 * Gauges read from the service's own tables when metrics are collected (a Prometheus scrape), not
 * on any request path. A failing query skips that collection rather than failing the scrape.
 */
export function observeQueries(meter: Meter, orm: MikroORM, gauges: QueryGauge[]): void {
  for (const g of gauges) {
    const gauge = meter.createObservableGauge(g.name, { description: g.description, ...(g.unit ? { unit: g.unit } : {}) });
    gauge.addCallback(async (result) => {
      const rows = await orm.em.fork().execute<Array<Record<string, unknown>>>(g.sql).catch(() => []);
      for (const { value, ...labels } of rows) {
        result.observe(Number(value ?? 0), Object.fromEntries(Object.entries(labels).map(([k, v]) => [k, String(v)])));
      }
    });
  }
}

/** Outbox lag: events not yet published and the age of the oldest. */
export const OUTBOX_GAUGES: QueryGauge[] = [
  { name: 'outbox.pending_events', description: 'Events committed but not yet published to NATS', sql: 'select count(*) as value from outbox_event where published_at is null' },
  {
    name: 'outbox.oldest_pending_age',
    unit: 's',
    description: 'Age of the oldest event not yet published',
    sql: 'select coalesce(extract(epoch from now() - min(created_at)), 0) as value from outbox_event where published_at is null',
  },
];
