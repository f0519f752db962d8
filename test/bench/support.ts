import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { ROOT, stopChild, waitForReadyFile } from '../../scripts/system.ts';

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

/** Runs `op` from `concurrency` loops for `seconds`; latencies in milliseconds. */
export async function runFixed(concurrency: number, seconds: number, op: (worker: number, i: number) => Promise<unknown>): Promise<RunResult> {
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (let i = 0; performance.now() < end; i++) {
        const t = performance.now();
        try {
          await op(w, i);
          latencies.push(performance.now() - t);
        } catch {
          errors++;
        }
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? NaN;
  return { ops: latencies.length, seconds: elapsed, perSecond: latencies.length / elapsed, p50: pct(0.5), p99: pct(0.99), errors };
}

export const fmt = (r: RunResult) =>
  `${r.perSecond.toFixed(0).padStart(6)}/s  p50 ${r.p50.toFixed(2).padStart(6)} ms  p99 ${r.p99.toFixed(2).padStart(6)} ms  (${r.ops} ops, ${r.errors} errors)`;
