import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEPLOY, ROOT, bundleImports, dockerBuildCommand, dockerRuntime, facts, manifest, serviceDirs, workspaceClosure } from './support.ts';

// What the images run, minus Docker: each service's /app is built by the very RUN lines of its
// Dockerfile stage (`pnpm deploy --prod` with the hoisted linker, then `scripts/build.ts` bundling
// it into dist/), and started FROM THAT OUTPUT with Node: JavaScript only, no TypeScript, no
// sources. The services with a database are migrated first by their own `dist/migrate.js` into a
// fresh database (as the chart's hook Jobs do), then started with MIGRATE_ON_START=false; each
// must report ready, answer its health check (deploy/healthcheck.ts, the images' HEALTHCHECK),
// stop on SIGTERM with exit code 0, and have written nothing into its own folder (the images' root
// filesystem is read-only). Billing reads its .sql functions from dist/ when it migrates, the
// console serves its stylesheet and scripts from there, and the simulator its video fixtures.

const run = promisify(execFile);
const GRPC = serviceDirs().filter((d) => facts(d).protocol === 'grpc');
const HEALTHCHECK = join(DEPLOY, 'healthcheck.ts');
const PROVIDERS = JSON.stringify([{ name: 'openai', kind: 'openai', baseUrl: 'http://127.0.0.1:9/openai/v1', apiKey: 'x' }]);

let work = '';
let databaseUrl = '';
let adminUrl = '';
let databaseName = '';
const outputs = new Map<string, string>();
const running = new Map<string, { child: ChildProcess; address: string; log: string }>();
const filesBefore = new Map<string, string[]>();

const out = (name: string) => outputs.get(name)!;

/** Every path below `dir`, without following links (the deployed tree is full of them). */
function listTree(dir: string, prefix = ''): string[] {
  const paths: string[] = [];
  for (const entry of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    paths.push(rel);
    if (entry.isDirectory() && !entry.isSymbolicLink()) paths.push(...listTree(dir, rel));
  }
  return paths;
}

/** The child's environment: only what a container would get, never the test runner's. */
function serviceEnv(name: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    NATS_URL: inject('natsUrl'),
    // A namespace of their own: services of other test files run at the same time with the run's
    // namespace, and shared durable consumers would hand their events to these processes. The
    // run's teardown still deletes these streams (their names start with the run's prefix).
    EVENTS_NAMESPACE: `${inject('eventsNamespace')}_deploy`,
    SHUTDOWN_TIMEOUT_MS: '10000',
    READY_FILE: join(work, `${name}.ready`),
    ...extra,
  };
}

function logTail(log: string): string {
  return existsSync(log) ? readFileSync(log, 'utf8').slice(-3000) : '(no log)';
}

/**
 * Starts a deployed output as its image does (the target's CMD and ENV, the test's `extra` on top:
 * loopback addresses, free ports) and waits for its ready file.
 */
async function start(name: string, extra: Record<string, string>): Promise<string> {
  const log = join(work, `${name}.log`);
  const fd = openSync(log, 'a');
  const image = dockerRuntime(name);
  const child = spawn(process.execPath, image.cmd.slice(1), { cwd: out(name), env: serviceEnv(name, { ...image.env, ...extra }), stdio: ['ignore', fd, fd] });
  const readyFile = join(work, `${name}.ready`);
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${name} exited during start-up (${child.exitCode ?? child.signalCode}):\n${logTail(log)}`);
    }
    if (existsSync(readyFile)) {
      const address = readFileSync(readyFile, 'utf8').trim();
      if (address) {
        running.set(name, { child, address, log });
        return address;
      }
    }
    await sleep(50);
  }
  child.kill('SIGKILL');
  throw new Error(`${name} was not ready within 30 s:\n${logTail(log)}`);
}

/** SIGTERM, then the exit code (SIGKILL and a failure after 20 s). */
function stop(name: string): Promise<number | string> {
  const { child } = running.get(name)!;
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode ?? child.signalCode!);
  return new Promise((done) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      done(code ?? signal!);
    });
    child.kill('SIGTERM');
  });
}

/** A gRPC service's settings: loopback, any port, the test database, the addresses it calls. */
function grpcEnv(name: string): Record<string, string> {
  const extra: Record<string, string> = { GRPC_HOST: '127.0.0.1', GRPC_PORT: '0', DATABASE_URL: databaseUrl, MIGRATE_ON_START: 'false', PROVIDERS };
  for (const callee of facts(name).calls) extra[`${callee.toUpperCase().replaceAll('-', '_')}_ADDR`] = running.get(callee)!.address;
  return extra;
}

async function healthcheck(...args: string[]): Promise<number> {
  try {
    await run(process.execPath, [HEALTHCHECK, ...args], { timeout: 10_000 });
    return 0;
  } catch (err) {
    return (err as { code?: number }).code ?? -1;
  }
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'gw-deploy-'));
  // A database of this file's own on the run's server: the migrations run from nothing, and no
  // other test file migrating the same schemas at the same time can race them.
  const runUrl = new URL(inject('databaseUrl'));
  databaseName = `${runUrl.pathname.slice(1)}_deploy`;
  const admin = new URL(runUrl);
  admin.pathname = '/postgres';
  adminUrl = admin.toString();
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  await client.query(`CREATE DATABASE ${databaseName}`);
  await client.end();
  runUrl.pathname = `/${databaseName}`;
  databaseUrl = runUrl.toString();

  // Every output at once (each takes a few seconds, mostly linking from the store; the bundle, well under one).
  await Promise.all(
    serviceDirs().map(async (name) => {
      const dir = join(work, 'out', name);
      await run('sh', ['-c', dockerBuildCommand(name, dir)], { cwd: ROOT, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 });
      outputs.set(name, dir);
      filesBefore.set(name, listTree(dir));
    }),
  );
}, 180_000);

afterAll(async () => {
  for (const { child } of running.values()) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  if (databaseName) {
    const client = new Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`);
    await client.end();
  }
  if (work) rmSync(work, { recursive: true, force: true });
}, 60_000);

describe('production outputs (pnpm deploy --prod), started from the output', () => {
  it('every service output is its manifest, its bundle and its production dependencies: no TypeScript, no tests, no tooling', () => {
    for (const name of serviceDirs()) {
      const dir = out(name);
      expect(readdirSync(dir).filter((f) => !/^readme/i.test(f)).sort(), `${name}`).toEqual(['dist', 'node_modules', 'package.json']);
      expect(existsSync(join(dir, 'dist', 'main.js')), `${name}/dist/main.js`).toBe(true);
      expect(existsSync(join(dir, 'dist', 'migrate.js')), `${name}/dist/migrate.js`).toBe(existsSync(join(ROOT, 'services', name, 'src', 'migrate.ts')));
      expect(listTree(join(dir, 'dist')).filter((p) => p.endsWith('.ts')), `${name}: TypeScript in dist`).toEqual([]);
      // Our workspace packages are inside the bundle, not installed beside it.
      expect(existsSync(join(dir, 'node_modules', '@gw')), `${name} has node_modules/@gw`).toBe(false);
      for (const dev of ['vitest', 'typescript', 'oxlint', 'rolldown', '@bufbuild/buf']) {
        expect(existsSync(join(dir, 'node_modules', dev)), `${name} has ${dev}`).toBe(false);
      }
    }
  });

  it('every package a bundle loads is installed at the top of its node_modules, in the version the workspace resolves', () => {
    const problems: string[] = [];
    for (const name of serviceDirs()) {
      const dir = out(name);
      const closure = [...workspaceClosure(`@gw/${name}`)];
      const loaded = new Set<string>();
      for (const file of readdirSync(join(dir, 'dist')).filter((f) => f.endsWith('.js'))) {
        for (const pkg of bundleImports(readFileSync(join(dir, 'dist', file), 'utf8'))) loaded.add(pkg);
      }
      expect(loaded.size, `${name} loads third-party packages`).toBeGreaterThan(0);
      for (const pkg of loaded) {
        // The workspace packages that declare it, and the version each resolves in the workspace.
        const declaring = closure.filter((p) => manifest(p).dependencies?.[pkg] !== undefined);
        if (declaring.length === 0) {
          problems.push(`${name}: the bundle loads ${pkg}, which none of its workspace packages declares`);
          continue;
        }
        const wanted = new Set(declaring.map((p) => manifest(join(p, 'node_modules', pkg)).version));
        const installed = join(dir, 'node_modules', pkg, 'package.json');
        const version = existsSync(installed) ? (JSON.parse(readFileSync(installed, 'utf8')) as { version: string }).version : 'missing';
        if (wanted.size !== 1 || !wanted.has(version)) problems.push(`${name}: ${pkg} ${version}, the workspace resolves ${[...wanted].join(' and ')}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('migrates every schema from the outputs (node dist/migrate.js, as the hook Jobs do)', async () => {
    const migrators = serviceDirs().filter((name) => existsSync(join(out(name), 'dist', 'migrate.js')));
    // The chart's hook Jobs and compose's migrate-* services run this command for each of them.
    expect(migrators).toEqual(serviceDirs().filter((name) => facts(name).database));
    for (const name of migrators) {
      const { stdout } = await run(process.execPath, ['dist/migrate.js'], { cwd: out(name), env: serviceEnv(name, { DATABASE_URL: databaseUrl }), timeout: 60_000 });
      expect(stdout, `${name}`).toContain('migrations applied');
    }
    const client = new Client({ connectionString: databaseUrl });
    await client.connect();
    const { rows } = await client.query<{ schema_name: string }>('select schema_name from information_schema.schemata');
    await client.end();
    const schemas = rows.map((r) => r.schema_name);
    expect(schemas).toEqual(expect.arrayContaining(migrators.map((name) => name.replaceAll('-', '_'))));
  }, 120_000);

  it('starts every gRPC service from its output; each answers the gRPC health check SERVING', async () => {
    // Callees first (billing, catalog), then the services that call them.
    const callees = GRPC.filter((name) => GRPC.some((other) => facts(other).calls.includes(name)) || name === 'catalog');
    await Promise.all(callees.map((name) => start(name, grpcEnv(name))));
    await Promise.all(GRPC.filter((name) => !callees.includes(name)).map((name) => start(name, grpcEnv(name))));
    for (const name of GRPC) {
      const { address } = running.get(name)!;
      expect(address, `${name}`).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(await healthcheck('grpc', address), `${name} health`).toBe(0);
    }
  }, 90_000);

  it('starts the gateway from its output against those services; /healthz and /readyz answer 200', async () => {
    const addr = (name: string) => running.get(name)?.address ?? '127.0.0.1:9';
    const baseUrl = await start('edge-gateway', {
      GATEWAY_HOST: '127.0.0.1',
      GATEWAY_PORT: '0',
      BILLING_ADDR: addr('billing'),
      CATALOG_ADDR: addr('catalog'),
      TEXT_ADDR: addr('text'),
      MEDIA_ADDR: addr('media'),
      VIDEO_JOBS_ADDR: addr('video-jobs'),
    });
    expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const origin = new URL(baseUrl).origin;
    expect((await fetch(`${origin}/healthz`)).status).toBe(200);
    let ready = 0;
    for (let i = 0; i < 50 && ready !== 200; i++) {
      ready = (await fetch(`${origin}/readyz`)).status;
      if (ready !== 200) await sleep(100);
    }
    expect(ready, `${logTail(running.get('edge-gateway')!.log)}`).toBe(200);
    expect(await healthcheck('http', `${origin}/healthz`)).toBe(0);
    expect(await healthcheck('http', `${origin}/nowhere`), 'a 404 is unhealthy').toBe(1);
  }, 60_000);

  it('starts the provider simulator from its output', async () => {
    const url = await start('provider-simulator', { SIM_HOST: '127.0.0.1', SIM_PORT: '0' });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await healthcheck('tcp', new URL(url).host)).toBe(0);
  }, 60_000);

  it('starts the console from its output; it serves its stylesheet and scripts from dist/ and Pico from node_modules', async () => {
    const url = await start('console', {
      CONSOLE_HOST: '127.0.0.1',
      CONSOLE_PORT: '0',
      DATABASE_URL: databaseUrl,
      MIGRATE_ON_START: 'false',
      BILLING_ADDR: running.get('billing')!.address,
      CATALOG_ADDR: running.get('catalog')!.address,
      SESSION_SECRET: 'deploy-output-test-session-secret-0123456789',
      CONSOLE_INSECURE_COOKIES: 'true',
    });
    const origin = new URL(url).origin;
    expect(await healthcheck('http', `${origin}/healthz`)).toBe(0);
    for (const file of ['console.css', 'console.js', 'passkeys.js']) {
      const res = await fetch(`${origin}/assets/${file}`);
      expect(res.status, `${file}`).toBe(200);
      expect(await res.text(), `${file}`).toBe(readFileSync(join(ROOT, 'services', 'console', 'src', 'public', file), 'utf8'));
    }
    const pico = await fetch(`${origin}/assets/pico.min.css`);
    expect(pico.status).toBe(200);
    expect(await pico.text()).toContain('Pico CSS');
  }, 60_000);

  it('the health check reports a stopped service as unhealthy', async () => {
    // Port 1 on loopback: nothing listens there.
    expect(await healthcheck('grpc', '127.0.0.1:1')).toBe(1);
    expect(await healthcheck('tcp', '127.0.0.1:1')).toBe(1);
    expect(await healthcheck('bogus', running.get('billing')!.address)).toBe(2);
  });

  it('stops every service on SIGTERM with exit code 0, the gateway first', async () => {
    const order = ['edge-gateway', 'console', 'provider-simulator', ...GRPC.filter((n) => n !== 'billing' && n !== 'catalog'), 'catalog', 'billing'];
    expect(new Set(order)).toEqual(new Set(running.keys()));
    const codes: Record<string, number | string> = {};
    for (const name of order) codes[name] = await stop(name);
    expect(codes).toEqual(Object.fromEntries(order.map((n) => [n, 0])));
  }, 120_000);

  it('no service wrote into its deployed folder (the images run with a read-only root filesystem)', () => {
    for (const name of serviceDirs()) {
      const before = new Set(filesBefore.get(name));
      expect(listTree(out(name)).filter((p) => !before.has(p)), `${name}`).toEqual([]);
      expect(lstatSync(out(name)).isDirectory()).toBe(true);
    }
  });
});
