import { chatBody, fundedAccounts, loadFor, percentile, post, processRoundTrip, startBenchSystem, type Sample } from './support.ts';

/**
 * `pnpm bench:text`: the gateway's overhead on the text path. In one run, on this machine, the
 * same chat-completions requests go (a) straight to the provider simulator and (b) through the
 * whole gateway (auth, rate limit, resolution, hold, text service, settle), non-streaming and
 * streaming (time to first token), at 1 and at 32 connections, in alternating one-second slices.
 * Reports requests per second, p50 and p99, the gateway's added latency and its throughput ratio
 * to the direct baseline. The non-streaming run at 32 connections is repeated with requests spread
 * over 32 accounts, as a gateway's traffic comes, beside the one hot account of the other runs.
 * Also the machine's own hop cost (a bare round trip between two processes), to compare runs on
 * machines of different speed.
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

const f = (n: number) => n.toFixed(2).padStart(7);

/** Samples of one side of a comparison, pooled over its slices. */
class Side {
  readonly totals: number[] = [];
  readonly firsts: number[] = [];
  errors = 0;
  seconds = 0;
  readonly send: () => Promise<Sample>;

  constructor(send: () => Promise<Sample>) {
    this.send = send;
  }

  /** Runs `concurrency` loops for `ms`, adding to the samples. */
  async run(concurrency: number, ms: number): Promise<void> {
    const { errors, seconds } = await loadFor(concurrency, ms, async () => {
      const s = await this.send();
      this.totals.push(s.total);
      this.firsts.push(s.firstByte);
    });
    this.errors += errors;
    this.seconds += seconds;
  }

  result(): Result {
    const { totals, firsts } = this;
    return { rps: totals.length / this.seconds, p50: percentile(totals, 0.5), p99: percentile(totals, 0.99), ttft50: percentile(firsts, 0.5), ttft99: percentile(firsts, 0.99), errors: this.errors };
  }
}

/**
 * Direct and through-gateway runs alternate in one-second slices, so a machine whose speed drifts
 * (a shared 2-core VM does) slows both sides alike instead of whichever ran second.
 */
async function compare(concurrency: number, direct: () => Promise<Sample>, through: () => Promise<Sample>): Promise<[Result, Result]> {
  const sides = [new Side(direct), new Side(through)];
  for (const side of sides) for (let i = 0; i < 300; i++) await side.send(); // warm-up: the steady state, not the JIT compiling
  for (let slice = 0; slice < SECONDS; slice++) for (const side of slice % 2 === 0 ? sides : sides.toReversed()) await side.run(concurrency, 1_000);
  return [sides[0]!.result(), sides[1]!.result()];
}

const { system, apiKey, stop } = await startBenchSystem();
try {
  const plain = chatBody(false);
  const streamed = chatBody(true);
  const sim = new URL(`${system.simulatorUrl}/openai/v1/chat/completions`);
  const gw = new URL(`${system.baseUrl}/chat/completions`);
  const simAuth = { authorization: 'Bearer sim-openai-key' };
  const gwAuth = { authorization: `Bearer ${apiKey}` };

  const hop = await processRoundTrip();
  const rows: Array<[string, Result, Result]> = [];
  for (const [label, body, marker] of [
    ['non-streaming', plain, '"choices"'],
    ['streaming', streamed, '"content"'],
  ] as const) {
    for (const c of [LOW, HIGH]) {
      const [direct, through] = await compare(
        c,
        () => post(sim, simAuth, body, marker),
        () => post(gw, gwAuth, body, marker),
      );
      rows.push([`${label}, ${c} connection${c > 1 ? 's' : ''}`, direct, through]);
    }
  }
  const keys = (await fundedAccounts(system, HIGH)).map((a) => ({ authorization: `Bearer ${a.apiKey}` }));
  let next = 0;
  const [direct, through] = await compare(
    HIGH,
    () => post(sim, simAuth, plain, '"choices"'),
    () => post(gw, keys[next++ % keys.length]!, plain, '"choices"'),
  );
  rows.push([`non-streaming, ${HIGH} connections, ${HIGH} accounts`, direct, through]);

  const lines = [
    `text benchmark: ${SECONDS} s per side of each run (alternating 1 s slices), node ${process.version}, whole system and load generator on this machine`,
    `  machine: a bare round trip between two processes (loopback TCP) p50 ${f(hop.p50)} ms  p99 ${f(hop.p99)} ms`,
  ];
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
