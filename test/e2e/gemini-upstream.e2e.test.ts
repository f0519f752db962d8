import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEMO_MODELS } from '../../scripts/demo-models.ts';
import type { RunningSystem } from '../../scripts/system.ts';
import { balanceOf, catalogClient, openaiClient, waitForListing } from '../support/clients.ts';
import { startFakeGemini, textChunk, usage, type Script } from '../support/fake-gemini.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';

const MODEL = 'gemini-sim-flash';
const PRICE = Number(DEMO_MODELS.find((m) => m.id === MODEL)!.priceCreditPerUnit);
const charge = (tokens: number) => Math.max(1, Math.ceil((tokens * PRICE) / 1_000_000));

/** An answer of this many deltas is ~9 MB of chat chunks: more than socket buffers hold. */
const MANY = 40_000;
/**
 * The provider's total time for one answer, and how long the test waits for the long answer's
 * charge: a bound, not a speed check. Reading the 40,000 frames takes 3–8 s on a quiet machine and
 * about 25 s with the machine's cores taken four times over. This test used to fail there with
 * nothing charged: the gateway's connection to the text service had a 1 s keepalive timeout, the
 * busy gateway read the ping's answer late (behind the stream's data), dropped the connection
 * mid-stream and released the hold. That connection now waits 10 s
 * (`LONG_ANSWERS_KEEPALIVE_TIMEOUT_MS`, packages/contracts/test/replicas-and-token.test.ts).
 */
const LONG_STREAM_MS = 150_000;

function script(prompt: string): Script {
  if (prompt.includes('MANY')) {
    return { chunks: Array.from({ length: MANY }, (_, i) => textChunk(`w${i} `, i === MANY - 1 ? { finishReason: 'STOP', usageMetadata: usage(10, MANY * 2) } : {})) };
  }
  if (prompt.includes('BREAK')) {
    return { breakAfter: true, chunks: [textChunk('Hello '), textChunk('world', { finishReason: 'STOP', usageMetadata: usage(1000, 500) })] };
  }
  return { chunks: [textChunk('Hi '), textChunk('there', { finishReason: 'STOP', usageMetadata: usage(5, 2) })] };
}

// The Gemini provider here is a scripted server (test/support/fake-gemini.ts), not the simulator.
describe('streams from a scripted Gemini upstream, through the whole system', () => {
  let system: RunningSystem;
  let fake: Awaited<ReturnType<typeof startFakeGemini>>;

  beforeAll(async () => {
    fake = await startFakeGemini((prompt) => script(prompt));
    const saved = process.env.PROVIDERS;
    process.env.PROVIDERS = JSON.stringify([
      { name: 'google', kind: 'google', baseUrl: `${fake.url}/v1beta`, apiKey: 'k', timeouts: { textFirstByteMs: 5_000, textTotalMs: LONG_STREAM_MS, listMs: 2_000 } },
    ]);
    try {
      system = await startTestSystem();
    } finally {
      if (saved === undefined) delete process.env.PROVIDERS;
      else process.env.PROVIDERS = saved;
    }
    const catalog = catalogClient(system);
    try {
      await catalog.upsertModel({ model: DEMO_MODELS.find((m) => m.id === MODEL)! });
    } finally {
      catalog.close();
    }
  }, 120_000);
  afterAll(async () => {
    await system?.stop();
    fake?.server.close();
  });

  async function account() {
    const a = await fundedAccount(system, 100_000_000);
    await waitForListing(system, a.apiKey, [MODEL]);
    return a;
  }

  it('a client that stops reading a long stream, its connection open, is billed the real usage when the upstream ends', async () => {
    const a = await account();
    const before = await balanceOf(system, a.accountId);
    const url = new URL(`${system.baseUrl}/chat/completions`);
    const body = JSON.stringify({ model: MODEL, stream: true, max_completion_tokens: 200_000, messages: [{ role: 'user', content: 'MANY' }] });
    // Reads the first bytes, then nothing more, without closing.
    const client = connect(Number(url.port), url.hostname);
    client.once('data', () => client.pause());
    client.write(
      `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${a.apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    try {
      // 10 input + 80,000 output tokens, charged while the client still has most of the answer unread.
      // The wait is a bound for the outcome, not a speed check.
      await vi.waitFor(async () => expect(before - (await balanceOf(system, a.accountId))).toBe(charge(10 + MANY * 2)), { timeout: LONG_STREAM_MS, interval: 250 });
      expect(client.bytesRead).toBeLessThan(8 * 1024 * 1024);
    } finally {
      client.destroy();
    }
    const { records } = (await admin(system, 'usage', '--key', a.keyId)) as { records: Array<{ output_tokens: number | string }> };
    expect(records.map((r) => Number(r.output_tokens))).toEqual([MANY * 2]);
  }, LONG_STREAM_MS + 30_000);

  it('a stream whose connection breaks after its final chunk (finish reason and usage in hand) is complete and billed', async () => {
    const a = await account();
    const before = await balanceOf(system, a.accountId);
    const stream = await openaiClient(system, a.apiKey).chat.completions.create({ model: MODEL, stream: true, messages: [{ role: 'user', content: 'BREAK' }] });
    let text = '';
    let last: Record<string, unknown> | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      last = chunk as unknown as Record<string, unknown>;
    }
    expect(text).toBe('Hello world');
    expect((last!.service as { credit_charged: number }).credit_charged).toBe(charge(1500));
    expect(before - (await balanceOf(system, a.accountId))).toBe(charge(1500));
  });

  it('leaves a ledger whose every balance equals the sum of its entries', async () => {
    await sleep(200);
    expect(await admin(system, 'ledger', 'audit')).toMatchObject({ ok: true, problems: [] });
  });
});
