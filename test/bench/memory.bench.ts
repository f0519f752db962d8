import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../scripts/ports.ts';
import { ROOT } from '../../scripts/system.ts';
import { chatBody, loadFor, percentile, post, scratchDatabase } from './support.ts';

/**
 * `pnpm bench:memory`: each service's resident memory at idle, as `pnpm start` runs it, before and
 * after load. Starts the system (`node scripts/start.ts`, in a scratch database, on free ports,
 * with a data folder of its own), waits until it has printed that it is ready and for
 * MEMORY_SETTLE_SECONDS more, and reads the resident set (VmRSS) of every process it started and
 * their proportional sets (PSS). Then it loads the gateway with the demo key it printed
 * (MEMORY_LOAD_SECONDS of chat completions, then as long of streamed ones, 32 at a time, its rate
 * limit raised past that with `pnpm admin`), reads the resident sets at the end of the load and
 * again after MEMORY_QUIET_SECONDS of quiet (150: the services give back what a busy spell grew
 * after two minutes of quiet), MEMORY_LOADS times (1 by default; a service that ends each quiet
 * spell higher than the one before keeps something per request), and stops it; MEMORY_ROUNDS times
 * (3 by default).
 * Prints each round's figures, each service's median and the median of the PSS added up (the
 * simulator's too). Linux only (/proc).
 */
const ROUNDS = Number(process.env.MEMORY_ROUNDS ?? 3);
const SETTLE_MS = Number(process.env.MEMORY_SETTLE_SECONDS ?? 10) * 1000;
const LOAD_MS = Number(process.env.MEMORY_LOAD_SECONDS ?? 10) * 1000;
const QUIET_MS = Number(process.env.MEMORY_QUIET_SECONDS ?? 150) * 1000;
const LOADS = Number(process.env.MEMORY_LOADS ?? 1);
const CONCURRENCY = 32;
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

interface Reading {
  rss: Map<string, number>;
  /** The PSS of every process `pnpm start` started, added up. */
  pssTotal: number;
}

function read(startPid: number): Reading {
  const rss = new Map<string, number>();
  let pssTotal = 0;
  for (const [name, pid] of servicesOf(startPid)) {
    rss.set(name, rssMiB(pid));
    pssTotal += pssMiB(pid);
  }
  return { rss, pssTotal };
}

interface Round {
  idle: Reading;
  /** At the end of each load, and after the quiet spell that follows it. */
  loads: { loaded: Reading; quiet: Reading }[];
}

/** How a load is named in the output: "the load" when there is one. */
const loadName = (n: number) => (LOADS === 1 ? 'the load' : `load ${n + 1}`);

/**
 * `CONCURRENCY` callers sending the text benchmarks' chat completion (streamed or not) for `ms`;
 * counts the answers other than 200 and keeps the first one's status and body.
 */
async function load(url: string, apiKey: string, stream: boolean, ms: number): Promise<{ ok: number; failed: number; firstFailure?: string }> {
  const tally: { ok: number; failed: number; firstFailure?: string } = { ok: 0, failed: 0 };
  const target = new URL(`${url}/chat/completions`);
  const { errors } = await loadFor(CONCURRENCY, ms, async () => {
    try {
      await post(target, { authorization: `Bearer ${apiKey}` }, chatBody(stream), '');
      tally.ok++;
    } catch (err) {
      tally.firstFailure ??= (err as Error).message;
      throw err;
    }
  });
  return { ...tally, failed: errors };
}

/** What the banner says: the gateway's address, the demo account and its key. */
function banner(printed: string): { url: string; accountId: string; apiKey: string } {
  const url = /generation gateway ready at (\S+)/.exec(printed)?.[1];
  const accountId = /demo account: (\S+) with/.exec(printed)?.[1];
  const apiKey = /demo API key \(shown once, keep it\): (\S+)/.exec(printed)?.[1];
  if (!url || !accountId || !apiKey) throw new Error(`the banner of pnpm start lacks the gateway, the demo account or its key:\n${printed}`);
  return { url, accountId, apiKey };
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
    const idle = read(start.pid!);
    const { url, accountId, apiKey } = banner(printed);
    execFileSync(process.execPath, [join(ROOT, 'packages', 'admin-cli', 'src', 'main.ts'), 'account', 'rate-limit', 'set', '--account', accountId, '--per-second', '1000000', '--per-minute', '60000000'], {
      env: { ...process.env, GW_DATA_DIR: dataDir },
      stdio: 'ignore',
    });
    const loads: Round['loads'] = [];
    for (let n = 0; n < LOADS; n++) {
      const chat = await load(url, apiKey, false, LOAD_MS);
      const streams = await load(url, apiKey, true, LOAD_MS);
      say(`  ${loadName(n)}: ${chat.ok} chat completions and ${streams.ok} streams answered 200, ${chat.failed + streams.failed} not${chat.firstFailure ?? streams.firstFailure ? `; the first: ${chat.firstFailure ?? streams.firstFailure}` : ''}`);
      const loaded = read(start.pid!);
      await sleep(QUIET_MS);
      loads.push({ loaded, quiet: read(start.pid!) });
    }
    return { idle, loads };
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

const rounds: Round[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const round = await oneRound();
  rounds.push(round);
  const line = (r: Reading) => `${[...r.rss].map(([name, mib]) => `${name} ${mib.toFixed(0)}`).join(', ')} (MiB RSS); all together ${r.pssTotal.toFixed(0)} MiB PSS`;
  say(`round ${i + 1}, at idle: ${line(round.idle)}`);
  round.loads.forEach(({ loaded, quiet }, n) => {
    say(`round ${i + 1}, at the end of ${loadName(n)}: ${line(loaded)}`);
    say(`round ${i + 1}, ${QUIET_MS / 1000} s after ${loadName(n)}: ${line(quiet)}`);
  });
}

/** Each service's median over the rounds, then the PSS added up. */
function medians(title: string, pick: (r: Round) => Reading): void {
  const readings = rounds.map(pick);
  const names = [...new Set(readings.flatMap((r) => [...r.rss.keys()]))].toSorted();
  say(`\n${title}, median of ${ROUNDS} start(s), MiB:`);
  for (const name of names) {
    const values = readings.map((r) => r.rss.get(name)).filter((v): v is number => v !== undefined);
    // The median of an even count is the upper middle value (percentile's convention).
    say(`  ${name.padEnd(20)} ${percentile(values, 0.5).toFixed(0).padStart(5)}   (${values.map((v) => v.toFixed(0)).join(', ')})`);
  }
  const pss = readings.map((r) => r.pssTotal);
  say(`  all services together (PSS) ${percentile(pss, 0.5).toFixed(0).padStart(5)}   (${pss.map((v) => v.toFixed(0)).join(', ')})`);
}
medians('resident memory at idle', (r) => r.idle);
for (let n = 0; n < LOADS; n++) {
  medians(`resident memory at the end of ${loadName(n)}`, (r) => r.loads[n]!.loaded);
  medians(`resident memory after ${QUIET_MS / 1000} s of quiet after ${loadName(n)}`, (r) => r.loads[n]!.quiet);
}
