import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { billingV1, textV1 } from '@gw/contracts';
import { serviceSlot } from '@gw/translate';
import { afterEach, describe, expect, it } from 'vitest';
import { chatAnswer, fakeGateway, type FakeGateway } from './support/fake-gateway.ts';

// The edge's text route through app.inject() with fakes for billing and the text service: what it
// sends the text service (the translation, made once), and how it writes what comes back — the
// `service` object spliced into the slot the text service left, failure events sent as they came.
let gw: FakeGateway;
afterEach(async () => {
  await gw.app.close();
});

type Item = MessageInitShape<typeof textV1.GenerateStreamResponseSchema>;
const frame = (data: string, extra: { usageBearing?: boolean; serviceAt?: number } = {}): Item => ({ item: { case: 'frame', value: { data: Buffer.from(data), ...extra } } });

/**
 * The usage chunk as the text service sends it: JSON with a slot for `service`; with `usage` when
 * the usage is final already (OpenAI's usage chunk, before `[DONE]`).
 */
function usageFrame(usage?: { billableTokens: bigint }): Item {
  const slot = serviceSlot('chat', { id: 'c1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
  return frame(slot.json, { usageBearing: true, serviceAt: Buffer.byteLength(slot.json.slice(0, slot.at)), ...(usage ? { usage } : {}) });
}

const CONTENT = '{"id":"c1","choices":[{"index":0,"delta":{"content":"hi"}}]}';
const BILLED = 'data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},"service":{"credit_charged":1,"balance_after":99}}';

/**
 * `items`: what the text service streams; a function there runs when the edge has read
 * everything before it (the rest waits for it).
 */
async function start(items: Array<Item | (() => Promise<void>)>) {
  const calls: string[] = [];
  const sent: Array<Record<string, unknown>> = [];
  const { promise: settledNow, resolve: settled } = Promise.withResolvers<void>();
  gw = await fakeGateway({
    deps: {
      money: {
        authorize: async () => (calls.push('authorize'), create(billingV1.AuthorizeResponseSchema, {})),
        settle: async () => (calls.push('settle'), settled(), create(billingV1.SettleResponseSchema, { creditCharged: 1n, balanceAfter: 99n })),
        release: async () => (calls.push('release'), create(billingV1.ReleaseResponseSchema, {})),
      },
      generate: {
        generate: async (req: Record<string, unknown>) => (sent.push(req), chatAnswer()),
        generateStream: (req: Record<string, unknown>) => {
          sent.push(req);
          return (async function* () {
            for (const item of items) {
              if (typeof item === 'function') await item();
              else yield create(textV1.GenerateStreamResponseSchema, item);
            }
          })();
        },
      },
    } as never,
  });
  return { calls, sent, settledNow };
}

const post = (stream: boolean) =>
  gw.app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: { authorization: `Bearer ${gw.keys.a}`, 'content-type': 'application/json' },
    payload: { model: 'm', stream, messages: [{ role: 'user', content: 'hi' }] },
  });

describe('text through the edge', () => {
  it('sends the translation for the route dialect, not the client body, and splices `service` into the complete answer', async () => {
    const { calls, sent } = await start([]);
    const res = await post(false);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body.endsWith(',"service":{"credit_charged":1,"balance_after":99}}')).toBe(true);
    expect(res.json()).toMatchObject({ object: 'chat.completion', service: { credit_charged: 1, balance_after: 99 } });
    const req = sent[0]! as { body: Uint8Array; upstream: Array<{ dialect: textV1.Dialect; body: Uint8Array }> };
    expect(req.body).toHaveLength(0);
    expect(req.upstream.map((u) => u.dialect)).toEqual([textV1.Dialect.CHAT]);
    expect(JSON.parse(Buffer.from(req.upstream[0]!.body).toString())).toEqual({ model: 'm-up', stream: false, messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 64 });
    expect(calls).toEqual(['authorize', 'settle']);
  });

  it('a stream: the usage chunk gets `service` in its slot after the settle, the frames after it follow', async () => {
    const { calls } = await start([frame('{"id":"c1","choices":[{"index":0,"delta":{"content":"hi"}}]}'), usageFrame(), frame('[DONE]'), { item: { case: 'end', value: { usage: { billableTokens: 2n }, failureFrames: [{ data: Buffer.from('{"error":"unused"}') }] } } }]);
    const res = await post(true);
    expect(res.body.split('\n\n').filter(Boolean)).toEqual([
      'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"hi"}}]}',
      'data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},"service":{"credit_charged":1,"balance_after":99}}',
      'data: [DONE]',
    ]);
    expect(calls).toEqual(['authorize', 'settle']);
  });

  it('a stream whose usage frame brings the final usage is settled before the provider stream ends', async () => {
    const { calls, settledNow } = await start([
      frame(CONTENT),
      usageFrame({ billableTokens: 2n }),
      // The provider's `[DONE]` comes once the edge settled, or after 2 s (then too late: the test fails).
      async () => {
        await Promise.race([settledNow, new Promise((resolve) => setTimeout(resolve, 2_000))]);
        calls.push('stream ended');
      },
      frame('[DONE]'),
      { item: { case: 'end', value: { usage: { billableTokens: 2n } } } },
    ]);
    const res = await post(true);
    expect(res.body.split('\n\n').filter(Boolean)).toEqual([`data: ${CONTENT}`, BILLED, 'data: [DONE]']);
    expect(calls).toEqual(['authorize', 'settle', 'stream ended']);
  });

  it('a stream that fails after its final usage came is a complete answer: charged, and sent with `service`', async () => {
    const { calls } = await start([
      frame(CONTENT),
      usageFrame({ billableTokens: 2n }),
      { item: { case: 'end', value: { usage: { billableTokens: 2n }, errorCode: 'upstream_error', errorMessage: 'The upstream provider stream failed.' } } },
    ]);
    const res = await post(true);
    expect(res.body.split('\n\n').filter(Boolean)).toEqual([`data: ${CONTENT}`, BILLED]);
    expect(calls).toEqual(['authorize', 'settle']);
  });

  it('a stream that fails upstream ends with the failure events the text service made, and is not charged', async () => {
    const failure = '{"error":{"message":"The upstream provider stream failed.","type":"server_error","code":"upstream_error"}}';
    const { calls } = await start([
      frame('{"id":"c1","choices":[{"index":0,"delta":{"content":"hi"}}]}'),
      usageFrame(),
      { item: { case: 'end', value: { errorCode: 'upstream_error', errorMessage: 'The upstream provider stream failed.', failureFrames: [{ data: Buffer.from(failure) }] } } },
    ]);
    const res = await post(true);
    // The held usage chunk is dropped with the failure: nothing of it reaches the client.
    expect(res.body.split('\n\n').filter(Boolean)).toEqual(['data: {"id":"c1","choices":[{"index":0,"delta":{"content":"hi"}}]}', `data: ${failure}`]);
    expect(calls).toEqual(['authorize', 'release']);
  });
});
