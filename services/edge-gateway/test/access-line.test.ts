import { Writable } from 'node:stream';
import { create } from '@bufbuild/protobuf';
import { billingV1, catalogV1 } from '@gw/contracts';
import { createLogger } from '@gw/service-kit';
import { afterEach, describe, expect, it } from 'vitest';
import { chatAnswer, fakeGateway, type FakeGateway } from './support/fake-gateway.ts';

/** The edge's access line, as its logger writes it: one per request, with who asked and for what. */
let gw: FakeGateway;
afterEach(async () => {
  await gw?.app.close();
});

async function gateway(): Promise<Array<Record<string, unknown>>> {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  gw = await fakeGateway({
    deps: {
      logger: createLogger('edge-gateway', 'info', sink),
      money: {
        authorize: async () => create(billingV1.AuthorizeResponseSchema, {}),
        settle: async () => create(billingV1.SettleResponseSchema, { creditCharged: 1n, balanceAfter: 99n }),
      },
      generate: { generate: async () => chatAnswer() },
    } as never,
  });
  // Model `m` answers to the alias `m-nick` too.
  gw.deps.catalogCache.replace(
    create(catalogV1.GetSnapshotResponseSchema, {
      models: [
        { id: 'm', aliases: ['m-nick'], kind: catalogV1.ModelKind.TEXT, capabilities: ['chat/completions'], priceCreditPerUnit: 100n, enabled: true, provider: 'p-chat', upstreamModel: 'm-up', limits: { maxOutputTokens: 64 } },
      ],
      providers: [{ provider: 'p-chat', lastSuccessUnixMs: BigInt(Date.now()) + 3_600_000n, servedModels: ['m-up'] }],
      maxSyncAgeMs: 3_600_000n,
      protocols: [{ provider: 'p-chat', textDialects: ['chat'] }],
    }),
  );
  return lines;
}

const chat = (model: string) =>
  gw.app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: { authorization: `Bearer ${gw.keys.a}`, 'content-type': 'application/json', 'x-request-id': 'client-7' },
    payload: { model, max_tokens: 8, messages: [{ role: 'user', content: 'a private prompt' }] },
  });

const settled = () => new Promise((r) => setTimeout(r, 20));

describe('the access line', () => {
  it("names the request's id, the account, the route, the status and the client's own id, and nothing of the body", async () => {
    const lines = await gateway();
    const res = await chat('m');
    expect(res.statusCode).toBe(200);
    await settled();
    const access = lines.filter((l) => l['msg'] === 'request');
    expect(access).toEqual([
      expect.objectContaining({ service: 'edge-gateway', reqId: res.headers['x-request-id'], account: 'acct-a', clientRequestId: 'client-7', method: 'POST', route: '/v1/chat/completions', status: 200, ms: expect.any(Number) }),
    ]);
    expect(access[0]).not.toHaveProperty('requested_model');
    expect(JSON.stringify(lines)).not.toContain('a private prompt');
  });

  it('of a request by an alias names the model billed and the name the client asked for', async () => {
    const lines = await gateway();
    const res = await chat('m-nick');
    expect(res.statusCode).toBe(200);
    await settled();
    expect(lines.filter((l) => l['msg'] === 'request')).toEqual([
      expect.objectContaining({ reqId: res.headers['x-request-id'], model: 'm', requested_model: 'm-nick', status: 200 }),
    ]);
  });
});
