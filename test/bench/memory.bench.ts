import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../scripts/ports.ts';
import { ROOT } from '../../scripts/system.ts';
import { percentile, scratchDatabase } from './support.ts';

/**
 * `pnpm bench:memory`: each service's resident memory at idle, as `pnpm start` runs it. Starts
 * the system (`node scripts/start.ts`, in a scratch database, on free ports, with a data folder
 * of its own), waits until it has printed that it is ready and for MEMORY_SETTLE_SECONDS more,
 * reads the resident set (VmRSS) of every process it started, and stops it; MEMORY_ROUNDS times
 * (3 by default). Prints each round's figures and each service's median. Linux only (/proc).
 */
const ROUNDS = Number(process.env.MEMORY_ROUNDS ?? 3);
const SETTLE_MS = Number(process.env.MEMORY_SETTLE_SECONDS ?? 10) * 1000;
const say = (line: string) => process.stdout.write(`${line}\n`);

/** Resident set of a process in MiB, from /proc. */
function rssMiB(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

/** The services a process started: its children running services/<name>/src/main.ts. */
function servicesOf(pid: number): Map<string, number> {
  const out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' });
  const found = new Map<string, number>();
  for (const line of out.split('\n')) {
    const m = /^\s*(\d+)\s.*\/services\/([^/]+)\/src\/main\.ts/.exec(line);
    if (m) found.set(m[2]!, Number(m[1]));
  }
  return found;
}

async function oneRound(): Promise<Map<string, number>> {
  const db = await scratchDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-memory-'));
  const start = spawn(process.execPath, [join(ROOT, 'scripts', 'start.ts')], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: db.url, GW_DATA_DIR: dataDir, GATEWAY_PORT: String(await freePort()), CONSOLE_PORT: String(await freePort()) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    let printed = '';
    await new Promise<void>((ready, failed) => {
      start.stdout.setEncoding('utf8');
      start.stdout.on('data', (chunk: string) => {
        printed += chunk;
        if (printed.includes('press Ctrl-C')) ready();
      });
      start.once('exit', (code) => failed(new Error(`pnpm start exited (code ${code}) before it was ready:\n${printed}`)));
    });
    await sleep(SETTLE_MS);
    const rss = new Map<string, number>();
    for (const [name, pid] of servicesOf(start.pid!)) rss.set(name, rssMiB(pid));
    return rss;
  } finally {
    if (start.exitCode === null) {
      const exited = new Promise((done) => start.once('exit', done));
      start.kill('SIGINT');
      await exited;
    }
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const rounds: Map<string, number>[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const rss = await oneRound();
  rounds.push(rss);
  say(`round ${i + 1}: ${[...rss].map(([name, mib]) => `${name} ${mib.toFixed(0)}`).join(', ')} (MiB)`);
}
const names = [...new Set(rounds.flatMap((r) => [...r.keys()]))].toSorted();
say(`\nresident memory at idle, median of ${ROUNDS} start(s), MiB:`);
for (const name of names) {
  const values = rounds.map((r) => r.get(name)).filter((v): v is number => v !== undefined);
  // The median of an even count is the upper middle value (percentile's convention).
  say(`  ${name.padEnd(20)} ${percentile(values, 0.5).toFixed(0).padStart(5)}   (${values.map((v) => v.toFixed(0)).join(', ')})`);
}
