import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEPLOY, SERVICES, facts, knownEnvNames, read, serviceDirs } from './support.ts';

// deploy/compose.yaml cannot be started here (no Docker daemon): these checks hold its wiring to
// the system's shape. Every service is built from its own Dockerfile target, waits for what it
// needs, gets the addresses and settings it reads, and every schema is migrated once, first.

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string; target: string };
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  profiles?: string[];
  restart?: string;
  read_only?: boolean;
  ports?: string[];
}

const compose = parse(read(DEPLOY, 'compose.yaml'), { merge: true }) as { services: Record<string, ComposeService> };
const services = compose.services;
const svc = (name: string): ComposeService => {
  const s = services[name];
  if (!s) throw new Error(`compose has no service ${name}`);
  return s;
};
const dockerTargets = new Set([...read(DEPLOY, 'Dockerfile').matchAll(/^FROM\s+\S+\s+AS\s+(\S+)$/gim)].map((m) => m[1]!));
const PROVIDER_USERS = ['catalog', 'text', 'media', 'video-jobs'];

describe('deploy/compose.yaml', () => {
  it('runs PostgreSQL 17 and NATS with JetStream, each with a health check', () => {
    expect(svc('postgres').image).toMatch(/^postgres:17(\.|-|$)/);
    expect(svc('postgres').healthcheck?.test).toContain('pg_isready');
    expect(svc('nats').image).toMatch(/^nats:2/);
    expect(svc('nats').command).toContain('-js');
    expect(svc('nats').healthcheck?.test.join(' ')).toContain('js-enabled-only=true');
  });

  it('has every service, built from its own Dockerfile target, with a health check', () => {
    for (const name of new Set([...serviceDirs(), ...SERVICES.map((s) => s.name)])) {
      const s = svc(name);
      expect(s.build?.target, `${name}`).toBe(name);
      expect(s.build?.dockerfile).toBe('deploy/Dockerfile');
      expect(s.build?.context).toBe('..');
      expect(dockerTargets.has(name), `Dockerfile target ${name}`).toBe(true);
      const f = facts(name);
      const test = s.healthcheck?.test ?? [];
      expect(test.slice(0, 3), `${name}`).toEqual(['CMD', 'node', '/opt/gw/healthcheck.ts']);
      expect(test.join(' '), `${name}`).toContain(`127.0.0.1:${f.port}`);
      expect(s.read_only, `${name} runs read-only as in Kubernetes`).toBe(true);
    }
  });

  it('migrates each schema in a one-shot service that the owner waits for', () => {
    const migrators = Object.keys(services).filter((n) => n.startsWith('migrate-'));
    expect(migrators.sort()).toEqual(SERVICES.filter((s) => s.database).map((s) => `migrate-${s.name}`).sort());
    for (const f of SERVICES.filter((s) => s.database)) {
      const m = svc(`migrate-${f.name}`);
      expect(m.command).toEqual(['node', 'dist/migrate.js']);
      expect(m.build?.target).toBe(f.name);
      expect(m.image).toBe(svc(f.name).image);
      expect(m.restart).toBe('no');
      expect(m.depends_on?.postgres?.condition).toBe('service_healthy');
      expect(m.environment?.DATABASE_URL).toBe(svc(f.name).environment?.DATABASE_URL);
      expect(m.profiles).toEqual(svc(f.name).profiles);
      const owner = svc(f.name);
      expect(owner.depends_on?.[`migrate-${f.name}`]?.condition).toBe('service_completed_successfully');
      expect(owner.environment?.MIGRATE_ON_START).toBe('false');
      expect(owner.environment?.DATABASE_URL).toMatch(/^postgres:\/\/[^@]+@postgres:5432\/\w+$/);
    }
  });

  it('binds gRPC services on all interfaces at their port, with NATS', () => {
    for (const f of SERVICES.filter((s) => s.protocol === 'grpc')) {
      const env = svc(f.name).environment ?? {};
      expect(env.GRPC_HOST).toBe('0.0.0.0');
      expect(env.GRPC_PORT).toBe(String(f.port));
      expect(env.NATS_URL).toBe('nats://nats:4222');
      expect(svc(f.name).depends_on?.nats?.condition).toBe('service_healthy');
    }
  });

  it('gives each caller the addresses of the services it calls and waits for them to be healthy', () => {
    for (const f of SERVICES.filter((s) => s.calls.length > 0)) {
      const s = svc(f.name);
      for (const callee of f.calls) {
        const variable = `${callee.toUpperCase().replaceAll('-', '_')}_ADDR`;
        expect(s.environment?.[variable], `${f.name} ${variable}`).toBe(`${callee}:${facts(callee).port}`);
        expect(s.depends_on?.[callee]?.condition, `${f.name} waits for ${callee}`).toBe('service_healthy');
      }
    }
    const gateway = svc('edge-gateway');
    expect(gateway.environment?.GATEWAY_HOST).toBe('0.0.0.0');
    expect(gateway.environment?.GATEWAY_PORT).toBe('8080');
    expect(gateway.ports).toEqual(['${GATEWAY_PUBLISH:-127.0.0.1:8080}:8080']);
  });

  it('points every provider-calling service at the simulator', () => {
    for (const name of PROVIDER_USERS) {
      const providers = JSON.parse(svc(name).environment?.PROVIDERS ?? 'null') as Array<{ name: string; kind: string; baseUrl: string; apiKey: string }>;
      expect(providers.map((p) => p.kind).sort()).toEqual(['anthropic', 'compat', 'google', 'openai']);
      for (const p of providers) expect(p.baseUrl).toMatch(/^http:\/\/provider-simulator:8090\//);
      expect(svc(name).depends_on?.['provider-simulator']?.condition).toBe('service_healthy');
    }
  });

  it('keeps the console behind its profile', () => {
    expect(svc('console').profiles).toEqual(['console']);
    const edges = Object.entries(services).flatMap(([name, s]) => Object.keys(s.depends_on ?? {}).map((dep) => ({ name, s, dep })));
    expect(edges.filter((e) => !services[e.dep]).map((e) => `${e.name} -> ${e.dep}`)).toEqual([]);
    // A service outside a profile must not wait for one inside it.
    expect(edges.filter((e) => !e.s.profiles && services[e.dep]?.profiles).map((e) => `${e.name} -> ${e.dep}`)).toEqual([]);
  });

  it('sets only environment variables that the services read', () => {
    const known = knownEnvNames();
    const consoleOnly = new Set(['CONSOLE_HOST', 'CONSOLE_PORT', 'SESSION_SECRET']);
    const unknown: string[] = [];
    for (const [name, s] of Object.entries(services)) {
      if (name === 'postgres' || name === 'nats') continue;
      for (const variable of Object.keys(s.environment ?? {})) {
        if (name === 'console' && consoleOnly.has(variable) && !serviceDirs().includes('console')) continue;
        if (!new RegExp(`\\b${variable}\\b`).test(known)) unknown.push(`${name}: ${variable}`);
      }
    }
    expect(unknown).toEqual([]);
  });
});
