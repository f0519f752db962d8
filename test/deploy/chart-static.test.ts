import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CHART, DEPLOY, SERVICES, facts, knownEnvNames, read, serviceDirs, sourceHasDatabase } from './support.ts';

// The chart, checked without helm (helm is not installable on every machine; chart-helm.test.ts
// renders it where it is). Go templates are not YAML, so these checks read the templates as
// text: each `define` body is cut out by name, and the component table of _helpers.tpl (plain
// flow YAML) is parsed as YAML.

const TEMPLATES = join(CHART, 'templates');
const helpers = ['_helpers.tpl', '_config.tpl', '_workload.tpl', '_network.tpl'].map((f) => read(TEMPLATES, f)).join('\n');

/** The body of `{{- define "<name>" -}} ... {{- end -}}` (nested actions balanced). */
function define(name: string): string {
  const start = helpers.indexOf(`{{- define "${name}" -}}`);
  if (start < 0) throw new Error(`no define ${name}`);
  const open = /\{\{-?\s*(if|range|with|define)\b/g;
  const close = /\{\{-?\s*end\s*-?\}\}/g;
  let depth = 0;
  const tokens: Array<[number, 1 | -1]> = [];
  for (const m of helpers.slice(start).matchAll(open)) tokens.push([m.index, 1]);
  for (const m of helpers.slice(start).matchAll(close)) tokens.push([m.index, -1]);
  tokens.sort((a, b) => a[0] - b[0]);
  for (const [at, d] of tokens) {
    depth += d;
    if (depth === 0) return helpers.slice(start, start + at);
  }
  throw new Error(`define ${name} is not closed`);
}

interface ChartComponent {
  name: string;
  port: number;
  protocol: string;
  database: boolean;
  nats: boolean;
  providers: boolean;
  metrics: boolean;
  calls: string[];
  optional?: boolean;
}

const components = parse(
  define('gg.components')
    .split('\n')
    .filter((l) => !l.includes('{{'))
    .join('\n'),
) as Record<string, ChartComponent>;
const values = parse(read(CHART, 'values.yaml')) as Record<string, Record<string, unknown>>;

describe('chart templates (static)', () => {
  it('knows every service of the tree, with the port and database its sources have', () => {
    for (const dir of serviceDirs()) expect(components[facts(dir).key]?.name, `component for services/${dir}`).toBe(dir);
    // A service whose sources gained a database must have a migration hook and a migrate-* service.
    expect(serviceDirs().filter((dir) => sourceHasDatabase(dir) && !facts(dir).database)).toEqual([]);
    for (const f of SERVICES) {
      const c = components[f.key]!;
      expect(c, `${f.key}`).toBeDefined();
      expect({ name: c.name, port: c.port, protocol: c.protocol, database: c.database, optional: c.optional ?? false }).toEqual({
        name: f.name,
        port: f.port,
        protocol: f.protocol,
        database: f.database,
        optional: f.optional,
      });
      expect(c.calls.map((k) => components[k]!.name)).toEqual(f.calls);
    }
    expect(Object.keys(components).sort()).toEqual(SERVICES.map((s) => s.key).sort());
  });

  it.each(SERVICES.map((s) => [s.name, s.key] as const))('templates/services/%s.yaml installs the whole %s workload', (name, key) => {
    const file = join(TEMPLATES, 'services', `${name}.yaml`);
    expect(existsSync(file), `${file}`).toBe(true);
    const text = read(file);
    expect(text).toContain(`{{- $c := dict "root" $ "key" "${key}" }}`);
    const includes = [...text.matchAll(/\(include "([\w.]+)" \$c\)/g)].map((m) => m[1]);
    const f = facts(name);
    const expected = ['gg.configmap', 'gg.deployment', 'gg.service', 'gg.networkPolicy'];
    // gRPC services also get a headless Service: their callers balance over the pods (grpc.clientLoadBalancing).
    if (f.protocol === 'grpc') expected.push('gg.headlessService');
    if (name !== 'provider-simulator') expected.push('gg.hpa', 'gg.pdb', 'gg.serviceMonitor');
    if (f.database) expected.push('gg.migrationJob');
    expect(includes.sort()).toEqual(expected.sort());
    // Optional services are wrapped in their `enabled` switch; the others never are.
    expect(new RegExp(`^\\{\\{- if \\.Values\\.${key}\\.enabled \\}\\}$`, 'm').test(text)).toBe(f.optional);
    expect(text.includes('.enabled }}')).toBe(f.optional);
  });

  it('every Deployment has startup, readiness and liveness probes, resources and the hardened pod', () => {
    const deployment = define('gg.deployment');
    for (const piece of [
      'kind: Deployment',
      'include "gg.probes" .',
      'include "gg.lifecycle" $root',
      'include "gg.podCommon" .',
      'resources:\n            {{- toYaml $v.resources',
      'securityContext:\n            {{- toYaml $root.Values.containerSecurityContext',
      'terminationGracePeriodSeconds: {{ add (int $root.Values.shutdown.preStopSleepSeconds) $shutdownSeconds 10 }}',
      'mountPath: /tmp',
      'checksum/config:',
    ]) {
      expect(deployment, `${piece}`).toContain(piece);
    }
    const probes = define('gg.probes');
    for (const probe of ['startupProbe:', 'readinessProbe:', 'livenessProbe:']) expect(probes).toContain(probe);
    expect(probes).toContain('dict "grpc" (dict "port" (int $c.port))');
    expect(probes).toContain('dict "path" "/healthz" "port" "http"');
    expect(probes).toContain('dict "path" "/readyz" "port" "http"');
    const pod = define('gg.podCommon');
    for (const piece of ['automountServiceAccountToken: false', 'enableServiceLinks: false', 'toYaml $root.Values.podSecurityContext', 'emptyDir:']) expect(pod).toContain(piece);
    expect(define('gg.lifecycle')).toMatch(/preStop:[\s\S]*sleep:[\s\S]*seconds:[\s\S]*command: \["sleep"/);
  });

  it('the hardening and probe settings are on by default', () => {
    expect(values.podSecurityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(values.containerSecurityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    const probes = values.probes as Record<string, { periodSeconds: number; failureThreshold: number }>;
    expect(Object.keys(probes).sort()).toEqual(['liveness', 'readiness', 'startup']);
    expect((values.shutdown as { preStopSleepSeconds: number }).preStopSleepSeconds).toBeGreaterThan(0);
  });

  it.each(SERVICES.map((s) => s.key))('%s has resource requests and a memory limit', (key) => {
    const resources = values[key]!.resources as { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
    expect(resources.requests).toHaveProperty('cpu');
    expect(resources.requests).toHaveProperty('memory');
    expect(resources.limits).toHaveProperty('memory');
  });

  it('services holding long requests drain for longer than the longest one (360 s image requests, streams)', () => {
    for (const key of ['gateway', 'text', 'media']) {
      expect(values[key]!.shutdownTimeoutSeconds as number, `${key}`).toBeGreaterThanOrEqual(370);
    }
    expect(define('gg.configEnv')).toContain('set $env "SHUTDOWN_TIMEOUT_MS" (toString (mul (int $v.shutdownTimeoutSeconds) 1000))');
  });

  it('every service with a database gets a pre-install/pre-upgrade migration hook Job', () => {
    const job = define('gg.migrationJob');
    for (const piece of [
      'kind: Job',
      'helm.sh/hook: pre-install,pre-upgrade',
      'helm.sh/hook-weight: {{ $root.Values.migrations.hookWeight | quote }}',
      'helm.sh/hook-delete-policy: {{ $root.Values.migrations.hookDeletePolicy }}',
      'command: ["node", "dist/migrate.js"]',
      'restartPolicy: Never',
      'name: DATABASE_URL',
      'include "gg.podCommon" .',
    ]) {
      expect(job, `${piece}`).toContain(piece);
    }
    // Hooks run before the chart's ConfigMaps exist on a first install: the Job must not need one.
    expect(job).not.toContain('configMapRef');
    expect(define('gg.migrationJob.enabled')).toContain('$c.database');
    for (const f of SERVICES.filter((s) => s.database)) {
      expect((values.database as { keys: Record<string, string> }).keys[f.key], `database key for ${f.key}`).toMatch(/^[A-Z_]+$/);
    }
  });

  it('sets only environment variables that the services read', () => {
    const config = define('gg.configEnv');
    const names = [...config.matchAll(/set \$env "([A-Z_]+)"/g)].map((m) => m[1]!);
    names.push(...SERVICES.flatMap((s) => s.calls).map((c) => `${c.toUpperCase().replaceAll('-', '_')}_ADDR`));
    names.push(...[...define('gg.secretEnv').matchAll(/- name: ([A-Z_]+)/g)].map((m) => m[1]!));
    const known = knownEnvNames();
    const consoleOnly = new Set(['CONSOLE_HOST', 'CONSOLE_PORT', 'SESSION_SECRET']);
    const present = serviceDirs().includes('console');
    expect(new Set(names).size).toBeGreaterThan(20);
    expect([...new Set(names)].filter((n) => !(consoleOnly.has(n) && !present) && !new RegExp(`\\b${n}\\b`).test(known))).toEqual([]);
  });

  it('network policies deny by default and admit each gRPC service only from its callers', () => {
    const deny = read(TEMPLATES, 'networkpolicy.yaml');
    expect(deny).toMatch(/podSelector:\s*\n\s*matchLabels:\s*\n\s*\{\{- include "gg.instanceLabels" \. \| nindent 6 \}\}\s*\n\s*policyTypes: \[Ingress, Egress\]\s*(\n\{\{-|$)/);
    const policy = define('gg.networkPolicy');
    expect(policy).toContain('has $key $facts.calls');
    expect(policy).toContain('(eq $key "gateway") (eq $key "console")');
    // Callers as the brief has them: billing <- gateway, video-jobs, console; catalog <- gateway, console, text (which routes live models use).
    const callers = (target: string) => Object.values(components).filter((c) => c.calls.includes(target)).map((c) => c.name).sort();
    expect(callers('billing')).toEqual(['console', 'edge-gateway', 'video-jobs']);
    expect(callers('catalog')).toEqual(['console', 'edge-gateway', 'text']);
    for (const key of ['text', 'media', 'videoJobs']) expect(callers(key)).toEqual(['edge-gateway']);
    // Egress to PostgreSQL, NATS and providers only where needed.
    expect(Object.entries(components).filter(([, c]) => c.providers).map(([k]) => k).sort()).toEqual(['catalog', 'media', 'text', 'videoJobs']);
    expect(Object.entries(components).filter(([, c]) => c.nats).map(([k]) => k).sort()).toEqual(['billing', 'catalog', 'gateway', 'media', 'text', 'videoJobs']);
  });

  it('declares no chart dependencies (a fresh clone lints and renders offline); console and simulator off by default', () => {
    const chart = parse(read(CHART, 'Chart.yaml')) as { apiVersion: string; dependencies?: unknown[] };
    expect(chart.apiVersion).toBe('v2');
    expect(chart.dependencies).toBeUndefined();
    expect(values.console!.enabled).toBe(false);
    expect(values.simulator!.enabled).toBe(false);
  });

  it("points the operator guides' CONSOLE_URL at the console's operator port, never its pages' port", () => {
    const adminPort = values.console!.adminPort as number;
    expect(adminPort).not.toBe(facts('console').port);
    const guide = read(DEPLOY, 'README.md');
    const urls = [...guide.matchAll(/CONSOLE_URL=http:\/\/[a-z0-9-]+-console:(\d+)/g)].map((m) => Number(m[1]));
    expect(urls.length).toBeGreaterThan(0);
    expect(urls.every((port) => port === adminPort), `${urls.join(', ')}`).toBe(true);
    // Day 1 names both hosts' DNS: the API's and the console's own.
    expect(guide).toMatch(/DNS and certificates for two hosts/);
    expect(guide).toContain('console.ingress.host');
  });
});
