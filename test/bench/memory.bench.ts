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
 * reads the resident set (VmRSS) of every process it started and their proportional sets (PSS),
 * and stops it; MEMORY_ROUNDS times (3 by default). Prints each round's figures, each service's
 * median RSS and the median of the PSS added up (the simulator's too). Linux only (/proc).
 */
const ROUNDS = Number(process.env.MEMORY_ROUNDS ?? 3);
const SETTLE_MS = Number(process.env.MEMORY_SETTLE_SECONDS ?? 10) * 1000;
const say = (line: string) => process.stdout.write(`${line}\n`);

/** Resident set of a process in MiB, from /proc. */
function rssMiB(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

/**
 * Proportional set in MiB: the resident set with each page shared by n processes counted 1/n.
 * The services share Node's binary (about 55 MiB of each one's RSS): the PSS add up to what the
 * system really takes.
 */
function pssMiB(pid: number): number {
  const kb = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1];
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

interface Round {
  rss: Map<string, number>;
  /** The PSS of every process `pnpm start` started, added up. */
  pssTotal: number;
}

async function oneRound(): Promise<Round> {
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
    let pssTotal = 0;
    for (const [name, pid] of servicesOf(start.pid!)) {
      rss.set(name, rssMiB(pid));
      pssTotal += pssMiB(pid);
    }
    return { rss, pssTotal };
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
const pssTotals: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const { rss, pssTotal } = await oneRound();
  rounds.push(rss);
  pssTotals.push(pssTotal);
  say(`round ${i + 1}: ${[...rss].map(([name, mib]) => `${name} ${mib.toFixed(0)}`).join(', ')} (MiB RSS); all together ${pssTotal.toFixed(0)} MiB PSS`);
}
const names = [...new Set(rounds.flatMap((r) => [...r.keys()]))].toSorted();
say(`\nresident memory at idle, median of ${ROUNDS} start(s), MiB:`);
for (const name of names) {
  const values = rounds.map((r) => r.get(name)).filter((v): v is number => v !== undefined);
  // The median of an even count is the upper middle value (percentile's convention).
  say(`  ${name.padEnd(20)} ${percentile(values, 0.5).toFixed(0).padStart(5)}   (${values.map((v) => v.toFixed(0)).join(', ')})`);
}
say(`  all services together (PSS) ${percentile(pssTotals, 0.5).toFixed(0).padStart(5)}   (${pssTotals.map((v) => v.toFixed(0)).join(', ')})`);
