import { randomUUID } from 'node:crypto';
import { textV1 } from '@gw/contracts';
import { createGenerateExchange } from '../../services/edge-gateway/src/generation/text-exchange.ts';
import { DEMO_MODELS } from '../../scripts/demo-models.ts';
import { chatBody, cpuMs, startBenchSystem } from './support.ts';

/**
 * `pnpm bench:text-stream`: the text service's CPU per streamed answer, alone. 32 callers ask for
 * streams over the text exchange, as the gateway does (no HTTP front, no billing), from the
 * simulator; the text service's CPU time (/proc) is divided by the streams done. Each round runs
 * twice: with the provider's frames in one burst, and with `CHUNK_DELAY_MS` between them (5, as
 * `../shared/bench`'s mock sends them). The difference is what a frame costs when it arrives on
 * its own: a wake-up, a read and a write, beyond the JavaScript that handles it.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CHUNK_DELAY_MS = Number(process.env.CHUNK_DELAY_MS ?? 5);
const CALLERS = 32;
const MODEL = DEMO_MODELS.find((m) => m.id === 'gpt-sim-mini')!;

const { system, stop } = await startBenchSystem();
const generate = createGenerateExchange(system.textAddr);
try {
  const textPid = system.services.get('text')!.child.pid!;
  const route = { provider: MODEL.provider!, upstreamModel: MODEL.upstreamModel!, priority: 0, weight: 1 };
  const body = Buffer.from(chatBody(true));
  const spacing = (chunkDelayMs: number) =>
    fetch(`${system.simulatorUrl}/_sim/settings/openai/${MODEL.upstreamModel}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chunkDelayMs }),
    });

  let frames = 0;
  const stream = async () => {
    const req = { requestId: randomUUID(), dialect: textV1.Dialect.CHAT, publicModel: MODEL.id!, routes: [route], body, defaultMaxOutputTokens: 4_096, frameBatches: true };
    for await (const { item } of generate.generateStream(req)) {
      if (item.case === 'frame') frames++;
      else if (item.case === 'frames') frames += item.value.frames.length;
    }
  };
  const run = async (seconds: number) => {
    const end = Date.now() + seconds * 1000;
    let streams = 0;
    frames = 0;
    const before = cpuMs(textPid);
    await Promise.all(
      Array.from({ length: CALLERS }, async () => {
        for (; Date.now() < end; streams++) await stream();
      }),
    );
    return { streams, perStreamUs: ((cpuMs(textPid) - before) * 1000) / streams, framesEach: frames / streams };
  };

  const lines = [`text service CPU per streamed answer: ${CALLERS} callers, ${SECONDS} s per run, node ${process.version}`];
  for (const delay of [0, CHUNK_DELAY_MS]) {
    await spacing(delay);
    await run(3); // warm-up: the steady state, not the JIT compiling
  }
  for (let round = 1; round <= ROUNDS; round++) {
    for (const delay of [0, CHUNK_DELAY_MS]) {
      await spacing(delay);
      const r = await run(SECONDS);
      const how = delay === 0 ? 'frames in one burst ' : `frames ${delay} ms apart`;
      lines.push(`  round ${round}, ${how}: ${(r.streams / SECONDS).toFixed(0).padStart(5)} streams/s, ${r.framesEach.toFixed(1)} frames each, ${r.perStreamUs.toFixed(0).padStart(5)} µs per stream`);
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  generate.close();
  await stop();
}
