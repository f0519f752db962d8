import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { ROOT, startSystem, stopChild, waitForReadyFile, type RunningSystem } from '../../scripts/system.ts';
import { billingClient, seedDemoModels } from '../support/clients.ts';

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/** User + system CPU of a process so far, in ms (Linux: /proc, in clock ticks). */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

/** Benchmarks run in a database of their own, dropped at the end. */
export async function scratchDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const admin = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  admin.pathname = '/postgres';
  const name = `gw_bench_${randomBytes(4).toString('hex')}`;
  const c = new Client({ connectionString: admin.toString() });
  await c.connect();
  await c.query(`create database ${name}`);
  await c.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const d = new Client({ connectionString: admin.toString() });
      await d.connect();
      await d.query(`drop database if exists ${name} with (force)`);
      await d.end();
    },
  };
}

/** Starts one service as a process on a free port; resolves with its address and a stop function. */
export async function startService(name: string, env: Record<string, string>): Promise<{ address: string; child: ChildProcess; stop: () => Promise<void> }> {
  const ready = join(mkdtempSync(join(tmpdir(), 'gw-bench-')), `${name}.ready`);
  const child = spawn(process.execPath, [join(ROOT, 'services', name, 'src', 'main.ts')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', READY_FILE: ready, GRPC_PORT: '0', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const address = await waitForReadyFile(ready, child, name, 30_000);
  return { address, child, stop: () => stopChild(child, 15_000) };
}

export interface RunResult {
  ops: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
  errors: number;
}

/** The `p` quantile (0..1) of the values; NaN when there are none. */
export function percentile(values: number[], p: number): number {
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
}

/**
 * The load loop of every benchmark: `concurrency` loops each call `op` again and again until `ms`
 * have passed. Answers how many calls failed and how long it took.
 */
export async function loadFor(concurrency: number, ms: number, op: (worker: number, i: number) => Promise<void>): Promise<{ errors: number; seconds: number }> {
  let errors = 0;
  const start = performance.now();
  const end = start + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (let i = 0; performance.now() < end; i++) {
        try {
          await op(w, i);
        } catch {
          errors++;
        }
      }
    }),
  );
  return { errors, seconds: (performance.now() - start) / 1000 };
}

/** Runs `op` from `concurrency` loops for `seconds`; latencies in milliseconds. */
export async function runFixed(concurrency: number, seconds: number, op: (worker: number, i: number) => Promise<unknown>): Promise<RunResult> {
  const latencies: number[] = [];
  const { errors, seconds: elapsed } = await loadFor(concurrency, seconds * 1000, async (w, i) => {
    const t = performance.now();
    await op(w, i);
    latencies.push(performance.now() - t);
  });
  return { ops: latencies.length, seconds: elapsed, perSecond: latencies.length / elapsed, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), errors };
}

export const fmt = (r: RunResult) =>
  `${r.perSecond.toFixed(0).padStart(6)}/s  p50 ${r.p50.toFixed(2).padStart(6)} ms  p99 ${r.p99.toFixed(2).padStart(6)} ms  (${r.ops} ops, ${r.errors} errors)`;

/**
 * The whole system on free ports in a scratch database, with the demo models, one account funded
 * far beyond any run and its API key; rate limits out of the way. `stop` also drops the database.
 */
export async function startBenchSystem(): Promise<{ system: RunningSystem; apiKey: string; accountId: string; keyId: string; stop: () => Promise<void> }> {
  const db = await scratchDatabase();
  const system = await startSystem({
    databaseUrl: db.url,
    natsUrl: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
    eventsNamespace: `bench${Date.now().toString(36)}`,
    gatewayPort: 0,
    internalPorts: 'random',
    logs: mkdtempSync(join(tmpdir(), 'gw-bench-logs-')),
    env: { LOG_LEVEL: 'warn', RATE_LIMIT_PER_SECOND: '1000000', RATE_LIMIT_PER_MINUTE: '100000000' },
  });
  const stop = async () => {
    await system.stop();
    await db.drop();
  };
  try {
    await seedDemoModels(system);
    const [first] = await fundedAccounts(system, 1);
    await new Promise((r) => setTimeout(r, 1_500)); // the gateway reloads the catalog on the change event
    return { system, ...first!, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** `count` accounts funded far beyond any run, each with an API key. */
export async function fundedAccounts(system: RunningSystem, count: number): Promise<Array<{ apiKey: string; accountId: string; keyId: string }>> {
  const billing = billingClient(system);
  try {
    const accounts = [];
    for (let i = 0; i < count; i++) {
      const { accountId } = await billing.createAccount({ name: `bench-${i}` });
      await billing.topUp({ accountId, credits: 1_000_000_000_000n, reference: `bench-${accountId}` });
      const { apiKey, keyId } = await billing.createApiKey({ accountId, name: 'bench' });
      accounts.push({ apiKey, accountId, keyId });
    }
    return accounts;
  } finally {
    billing.close();
  }
}

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

export interface Sample {
  total: number;
  firstByte: number;
}

/** One POST over a kept-alive connection; resolves with total time and time to the first chunk of body containing `marker`. */
export function post(url: URL, headers: Record<string, string>, body: string, marker: string): Promise<Sample> {
  return send('POST', url, { 'content-type': 'application/json', ...headers }, body, marker);
}

/** One GET over a kept-alive connection, timed as `post` times it. */
export function get(url: URL, headers: Record<string, string> = {}): Promise<Sample> {
  return send('GET', url, headers, undefined, '');
}

function send(method: string, url: URL, headers: Record<string, string>, body: string | undefined, marker: string): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    let firstByte = 0;
    const req = request(url, { method, agent, headers }, (res) => {
      let buffered = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (firstByte === 0) {
          buffered += chunk;
          if (buffered.includes(marker)) firstByte = performance.now() - start;
        }
      });
      res.on('end', () => {
        // The start of the body says why (the gateway's error object).
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}: ${buffered.slice(0, 300)}`));
        else resolve({ total: performance.now() - start, firstByte: firstByte || performance.now() - start });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The chat-completions request both text benchmarks send. */
export function chatBody(stream: boolean): string {
  const messages = [{ role: 'user', content: 'Write one short sentence about latency.' }];
  return JSON.stringify({ model: 'gpt-sim-mini', messages, max_tokens: 32, ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) });
}

const ECHO_SERVER = `
const s = require('node:net').createServer((c) => { c.setNoDelay(true); c.on('data', (d) => c.write(d)); });
s.listen(0, '127.0.0.1', () => process.stdout.write(String(s.address().port) + '\\n'));`;

/**
 * The machine's scale for hop costs, measured in the same run: a 1-byte round trip between this
 * process and another over loopback TCP, p50 and p99 in ms. Every internal call of the gateway
 * is at least one such round trip, so this shows how much of a latency is the machine.
 */
export async function processRoundTrip(samples = 5_000): Promise<{ p50: number; p99: number }> {
  const child = spawn(process.execPath, ['-e', ECHO_SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
      child.once('exit', () => reject(new Error('echo server exited')));
    });
    const socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    await new Promise((resolve) => socket.once('connect', resolve));
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      const t = performance.now();
      const echoed = new Promise((resolve) => socket.once('data', resolve));
      socket.write('x');
      await echoed;
      times.push(performance.now() - t);
    }
    socket.destroy();
    times.sort((a, b) => a - b);
    return { p50: times[Math.floor(samples / 2)]!, p99: times[Math.floor(samples * 0.99)]! };
  } finally {
    child.kill();
  }
}
