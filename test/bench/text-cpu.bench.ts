import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chatBody, cpuMs, loadFor, post, startBenchSystem } from './support.ts';

/**
 * `pnpm bench:text-cpu`: where the time of a billed text request goes. The same requests as
 * `pnpm bench:text` through the gateway, at 1 and at 32 connections, non-streaming and streaming;
 * for each run the CPU time every process of the system spent per request (from /proc, so it
 * counts kernel time and work outside JavaScript too), Postgres included. The load generator's
 * own share is shown for scale. Also the write system calls each process made per request: every
 * message the design sends is one, so this is the floor of the path, whatever a write costs on
 * the machine. Linux only.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);

/** Write system calls a process made so far (every socket write is one): its messages sent. */
function writeCalls(pid: number): number {
  return Number(/^syscw: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))![1]);
}

/**
 * All Postgres server processes alive at the time (the server is shared; nothing else uses it
 * during a run). A backend that exits within a run takes its share with it: a lower bound.
 */
function postgresCpuMs(): number {
  const pids = execFileSync('pgrep', ['-x', 'postgres'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  let total = 0;
  for (const pid of pids) {
    try {
      total += cpuMs(Number(pid));
    } catch {
      // a backend that exited meanwhile
    }
  }
  return total;
}

const { system, apiKey, stop } = await startBenchSystem();
try {
  const gw = new URL(`${system.baseUrl}/chat/completions`);
  const auth = { authorization: `Bearer ${apiKey}` };
  const processes = [...system.services.values()].map((s) => ({ name: s.name, pid: s.child.pid! }));
  const lines = [`text CPU benchmark: ${SECONDS} s per run, node ${process.version}; CPU time per billed request, by process`];

  for (const streaming of [false, true]) {
    const body = chatBody(streaming);
    for (const connections of [1, 32]) {
      for (let i = 0; i < 300; i++) await post(gw, auth, body, '"choices"'); // warm-up: the steady state, not the JIT compiling
      const before = new Map(processes.map((p) => [p.name, cpuMs(p.pid)]));
      const writesBefore = new Map(processes.map((p) => [p.name, writeCalls(p.pid)]));
      const pgBefore = postgresCpuMs();
      const selfBefore = process.cpuUsage();
      let requests = 0;
      const { errors, seconds: elapsed } = await loadFor(connections, SECONDS * 1000, async () => {
        await post(gw, auth, body, '"choices"');
        requests++;
      });
      if (errors > 0) throw new Error(`${errors} requests failed: CPU per request would be wrong`);
      const per = (ms: number) => ((ms * 1000) / requests).toFixed(0).padStart(5);
      const rows: Array<[string, number]> = processes.map((p) => [p.name, cpuMs(p.pid) - before.get(p.name)!]);
      const self = process.cpuUsage(selfBefore);
      rows.push(['postgres', postgresCpuMs() - pgBefore], ['load generator', (self.user + self.system) / 1000]);
      const total = rows.reduce((sum, [, ms]) => sum + ms, 0);
      lines.push(`  ${streaming ? 'streaming' : 'non-streaming'}, ${connections} connection${connections > 1 ? 's' : ''}: ${(requests / elapsed).toFixed(0)} req/s, ${per(total)} us CPU per request in all`);
      lines.push(`    ${rows.filter(([, ms]) => ms > 0).map(([name, ms]) => `${name} ${per(ms).trim()} us`).join(', ')}`);
      // One write per message: what the design sends, whatever each write costs on this machine.
      const writes = processes.map((p) => [p.name, (writeCalls(p.pid) - writesBefore.get(p.name)!) / requests] as const).filter(([, n]) => n >= 0.05);
      lines.push(`    socket writes per request: ${writes.map(([name, n]) => `${name} ${n.toFixed(1)}`).join(', ')}`);
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  await stop();
}
