import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEPLOY, ROOT } from './support.ts';

interface Panel {
  title: string;
  datasource: { uid: string };
  targets: Array<{ expr: string; datasource: { uid: string } }>;
}

const dashboard = JSON.parse(readFileSync(join(DEPLOY, 'grafana', 'generation-gateway.json'), 'utf8')) as {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string }> };
};

/** Every `*.ts` under services/*\/src and packages/*\/src. */
function sources(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory() && e.name !== 'node_modules' && e.name !== 'gen') walk(join(dir, e.name));
      else if (e.isFile() && e.name.endsWith('.ts')) out.push(join(dir, e.name));
    }
  };
  for (const top of ['services', 'packages']) for (const name of readdirSync(join(ROOT, top))) walk(join(ROOT, top, name, 'src'));
  return out;
}

/**
 * The Prometheus names of the instruments in the sources: their OpenTelemetry names (dotted string
 * literals) with dots as underscores; a `${kind}` in a name stands for client and server.
 */
function instrumentNames(): Set<string> {
  const names = new Set<string>();
  for (const file of sources()) {
    for (const [, name] of readFileSync(file, 'utf8').matchAll(/['`]([a-z][a-z0-9_]*(?:\.(?:[a-z0-9_]+|\$\{kind\}))+)['`]/g)) {
      for (const kind of ['client', 'server']) names.add(name!.replaceAll('${kind}', kind).replaceAll('.', '_'));
    }
  }
  return names;
}

describe('the Grafana dashboard (deploy/grafana/generation-gateway.json)', () => {
  it('charts the main series, each panel on the Prometheus picked when importing it', () => {
    expect(dashboard.uid).toBe('generation-gateway');
    expect(dashboard.templating.list.map((v) => [v.name, v.type])).toEqual([
      ['datasource', 'datasource'],
      ['job', 'query'],
    ]);
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr)).join('\n');
    for (const series of ['http_server_request_duration', 'gen_ai_client_operation_duration', 'gen_ai_client_token_usage', 'billing_credits_charged', 'billing_holds_open', 'outbox_oldest_pending_age', 'rpc_server_call_duration']) {
      expect(exprs).toContain(series);
    }
    for (const p of dashboard.panels) {
      expect({ title: p.title, uid: p.datasource.uid, targets: p.targets.length > 0 }).toEqual({ title: p.title, uid: '${datasource}', targets: true });
    }
  });

  it('names only metrics the services export', () => {
    const known = instrumentNames();
    const used = new Set<string>();
    for (const p of dashboard.panels) {
      for (const t of p.targets) for (const [, name] of t.expr.matchAll(/\b([a-z][a-z0-9_]*)\{/g)) used.add(name!.replace(/_(bucket|count|sum|total)$/, ''));
    }
    expect(used.size).toBeGreaterThan(8);
    expect([...used].filter((m) => !known.has(m))).toEqual([]);
  });
});
