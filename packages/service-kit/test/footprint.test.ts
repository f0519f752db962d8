import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// A process without a database (the edge gateway, the text service) imports the kit but never
// loads the ORM, its SQL builder or the Postgres driver: they cost every such process memory for
// nothing. createOrm loads them when a service declares its database. Nor does a service without
// a trace collector load the trace SDK or the OTLP exporter.
const LIST_LOADED = `
import { registerHooks } from 'node:module';
const loaded = [];
registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
const kit = await import('@gw/service-kit');
if (typeof kit.runGrpcService !== 'function' || typeof kit.createOrm !== 'function') throw new Error('kit incomplete');
console.log(JSON.stringify(loaded));
`;

describe('what importing the service kit loads', () => {
  it('loads no ORM, SQL builder or Postgres driver until a database is opened', () => {
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', LIST_LOADED], {
      cwd: join(import.meta.dirname, '..'),
      encoding: 'utf8',
    });
    const loaded = JSON.parse(out) as string[];
    expect(loaded.some((url) => url.includes('/service-kit/src/runner.ts'))).toBe(true);
    expect(loaded.filter((url) => /\/node_modules\/(@mikro-orm|kysely|pg|pg-pool)\//.test(url))).toEqual([]);
  });

  it('loads no trace SDK or OTLP exporter until a collector is configured, and one copy of each OpenTelemetry package', () => {
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', `${LIST_LOADED.replace('console.log', 'kit.startTelemetry({ serviceName: "footprint", metricsPort: 0 }).shutdown(); console.log')}`], {
      cwd: join(import.meta.dirname, '..'),
      encoding: 'utf8',
    });
    const loaded = JSON.parse(out) as string[];
    expect(loaded.some((url) => url.includes('/@opentelemetry/sdk-metrics/'))).toBe(true);
    expect(loaded.filter((url) => /\/node_modules\/@opentelemetry\/(sdk-trace|exporter-trace-otlp-http|otlp-)/.test(url))).toEqual([]);
    // One copy of each OpenTelemetry package: the kit's versions are those its exporter depends on.
    const versions = new Map<string, Set<string>>();
    for (const url of loaded) {
      const m = /\.pnpm\/(@opentelemetry\+[a-z-]+)@([^_/]+)/.exec(url);
      if (m) versions.set(m[1]!, (versions.get(m[1]!) ?? new Set()).add(m[2]!));
    }
    expect([...versions].filter(([, v]) => v.size > 1).map(([name, v]) => `${name}: ${[...v].join(', ')}`)).toEqual([]);
  });
});
