import { randomUUID } from 'node:crypto';
import { billingV1, createClient, healthV1, textV1 } from '@gw/contracts';
import { createMoneyExchange } from '../../services/edge-gateway/src/generation/billing-exchange.ts';
import { createGenerateExchange } from '../../services/edge-gateway/src/generation/text-exchange.ts';
import { DEMO_MODELS } from '../../scripts/demo-models.ts';
import { chatBody, get, percentile, post, processRoundTrip, startBenchSystem } from './support.ts';

/**
 * `pnpm bench:text-path`: where the added latency of one billed request goes at 1 connection.
 * A non-streaming chat request through the gateway is a chain of legs run one after the other:
 * the client's HTTP round trip into the gateway, the hold (billing and Postgres), the answer (text
 * service and simulator) and the settle (billing and Postgres). This script times each leg alone,
 * with the same clients the gateway uses, interleaved with the whole request in one loop, so each
 * leg meets its processes as idle as a request does. What the legs do not explain is the gateway's
 * own work (validation, translation, JSON). It also measures the machine's cost of waking an idle
 * process: the same gRPC call back to back and after a short pause.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3_000);
const PAUSE_MS = 2;
const MODEL = DEMO_MODELS.find((m) => m.id === 'gpt-sim-mini')!;
const { MILLION_TOKENS } = billingV1.BillingUnit;

const f = (n: number) => n.toFixed(2).padStart(6);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The times of `op` run `n` times back to back (optionally with a pause before each), in ms. */
async function timed(n: number, op: () => Promise<unknown>, pauseMs = 0): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    if (pauseMs > 0) await sleep(pauseMs);
    const t = performance.now();
    await op();
    times.push(performance.now() - t);
  }
  return times;
}

const { system, apiKey, accountId, keyId, stop } = await startBenchSystem();
const money = createMoneyExchange(system.billingAddr);
const generate = createGenerateExchange(system.textAddr);
const health = createClient(healthV1.Health, system.billingAddr);
try {
  const body = chatBody(false);
  const gwAuth = { authorization: `Bearer ${apiKey}` };
  const chat = new URL(`${system.baseUrl}/chat/completions`);
  const healthz = new URL(`${new URL(system.baseUrl).origin}/healthz`);
  const sim = new URL(`${system.simulatorUrl}/openai/v1/chat/completions`);
  const route = { provider: MODEL.provider!, upstreamModel: MODEL.upstreamModel!, priority: 0, weight: 1 };
  let held = '';

  // The same messages the gateway sends for this request (see metering.ts and text-request.ts).
  const legs: Array<[string, () => Promise<unknown>]> = [
    ['gateway, HTTP round trip alone (GET /healthz)', () => get(healthz)],
    [
      'hold: Authorize over the billing exchange',
      () => {
        held = randomUUID();
        return money.authorize({ requestId: held, accountId, keyId, endpoint: 'chat/completions', model: MODEL.id!, unit: MILLION_TOKENS, pricePerUnit: MODEL.priceCreditPerUnit!, worstUnits: 4_000n, text: true, checkRateLimit: true });
      },
    ],
    [
      'answer: Generate over the text exchange',
      () => generate.generate({ requestId: randomUUID(), dialect: textV1.Dialect.CHAT, publicModel: MODEL.id!, routes: [route], body: Buffer.from(body), defaultMaxOutputTokens: 4_096 }),
    ],
    ['settle: Settle over the billing exchange', () => money.settle({ requestId: held, accountId, units: 40n, inputTokens: 20n, outputTokens: 20n })],
    ['simulator called directly', () => post(sim, { authorization: 'Bearer sim-openai-key' }, body, '"choices"')],
    ['whole request through the gateway', () => post(chat, gwAuth, body, '"choices"')],
  ];
  for (let i = 0; i < 300; i++) for (const [, op] of legs) await op(); // warm-up: the steady state, not the JIT compiling

  const times = legs.map(() => [] as number[]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, [, op]] of legs.entries()) {
      const t = performance.now();
      await op();
      times[i]!.push(performance.now() - t);
    }
  }
  const p50 = times.map((t) => percentile(t, 0.5));
  const [gatewayHttp, hold, answer, settle, direct, whole] = p50 as [number, number, number, number, number, number];

  const hop = await processRoundTrip();
  const backToBack = await timed(2_000, () => health.check({ service: '' }));
  const afterPause = await timed(1_000, () => health.check({ service: '' }), PAUSE_MS);

  const lines = [
    `text path benchmark: ${ROUNDS} rounds, each leg once per round, 1 connection, node ${process.version}`,
    ...legs.map(([label], i) => `  ${label.padEnd(48)} p50 ${f(p50[i]!)} ms  p90 ${f(percentile(times[i]!, 0.9))} ms`),
    `  the whole request's p50, leg by leg`,
    `    HTTP round trip into the gateway                 ${f(gatewayHttp)} ms`,
    `    hold                                             ${f(hold)} ms`,
    `    answer (text service and simulator)              ${f(answer)} ms`,
    `    settle                                           ${f(settle)} ms`,
    `    the gateway's own work (what the legs leave)     ${f(whole - gatewayHttp - hold - answer - settle)} ms`,
    `  added by the gateway (whole - direct)              ${f(whole - direct)} ms`,
    `  machine: bare round trip between two processes      p50 ${f(hop.p50)} ms`,
    `  machine: gRPC health check, back to back            p50 ${f(percentile(backToBack, 0.5))} ms`,
    `  machine: gRPC health check after ${PAUSE_MS} ms idle           p50 ${f(percentile(afterPause, 0.5))} ms`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  money.close();
  generate.close();
  health.close();
  await stop();
}
