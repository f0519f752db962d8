import { chatBody, post, startBenchSystem, type Sample } from './support.ts';

/**
 * `pnpm bench:text`: the gateway's overhead on the text path. In one run, on this machine, the
 * same chat-completions requests go (a) straight to the provider simulator and (b) through the
 * whole gateway (auth, rate limit, resolution, hold, text service, settle), non-streaming and
 * streaming (time to first token), at 1 and at 32 connections. Reports requests per second, p50
 * and p99, the gateway's added latency and its throughput ratio to the direct baseline.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const LOW = 1;
const HIGH = Number(process.env.BENCH_CONCURRENCY ?? 32);

interface Result {
  rps: number;
  p50: number;
  p99: number;
  ttft50: number;
  ttft99: number;
  errors: number;
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN;
const f = (n: number) => n.toFixed(2).padStart(7);

async function load(concurrency: number, send: () => Promise<Sample>): Promise<Result> {
  for (let i = 0; i < 300; i++) await send(); // warm-up: measure the steady state, not the JIT compiling
  const totals: number[] = [];
  const firsts: number[] = [];
  let errors = 0;
  const end = performance.now() + SECONDS * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        try {
          const s = await send();
          totals.push(s.total);
          firsts.push(s.firstByte);
        } catch {
          errors++;
        }
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  return { rps: totals.length / elapsed, p50: pct(totals, 0.5), p99: pct(totals, 0.99), ttft50: pct(firsts, 0.5), ttft99: pct(firsts, 0.99), errors };
}

const { system, apiKey, stop } = await startBenchSystem();
try {
  const plain = chatBody(false);
  const streamed = chatBody(true);
  const sim = new URL(`${system.simulatorUrl}/openai/v1/chat/completions`);
  const gw = new URL(`${system.baseUrl}/chat/completions`);
  const simAuth = { authorization: 'Bearer sim-openai-key' };
  const gwAuth = { authorization: `Bearer ${apiKey}` };

  const rows: Array<[string, Result, Result]> = [];
  for (const [label, body, marker] of [
    ['non-streaming', plain, '"choices"'],
    ['streaming', streamed, '"content"'],
  ] as const) {
    for (const c of [LOW, HIGH]) {
      const direct = await load(c, () => post(sim, simAuth, body, marker));
      const through = await load(c, () => post(gw, gwAuth, body, marker));
      rows.push([`${label}, ${c} connection${c > 1 ? 's' : ''}`, direct, through]);
    }
  }

  const lines = [`text benchmark: ${SECONDS} s per run, node ${process.version}, whole system and load generator on this machine`];
  for (const [label, d, g] of rows) {
    const streaming = label.startsWith('streaming');
    lines.push(`  ${label}`);
    lines.push(`    simulator direct  ${d.rps.toFixed(0).padStart(6)} req/s  p50 ${f(d.p50)} ms  p99 ${f(d.p99)} ms${streaming ? `  ttft p50 ${f(d.ttft50)} ms` : ''}  errors ${d.errors}`);
    lines.push(`    through gateway   ${g.rps.toFixed(0).padStart(6)} req/s  p50 ${f(g.p50)} ms  p99 ${f(g.p99)} ms${streaming ? `  ttft p50 ${f(g.ttft50)} ms` : ''}  errors ${g.errors}`);
    lines.push(
      `    added             p50 ${f(g.p50 - d.p50)} ms  p99 ${f(g.p99 - d.p99)} ms${streaming ? `  ttft p50 ${f(g.ttft50 - d.ttft50)} ms` : ''}  throughput ratio ${(g.rps / d.rps).toFixed(3)}`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  await stop();
}
