import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { billingClient, postDeclaredLength, seedDemoModels, waitForListing } from '../support/clients.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';
import { stable } from '../support/wire.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type ErrorBody = { error: { code: string; message: string } };

/** One request id from the client's header to every record of it; errors that say what to do. */
describe('one request id end to end, and error messages that say what to do', () => {
  let system: RunningSystem;

  const post = (path: string, apiKey: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${system.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const chat = (apiKey: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    post('/chat/completions', apiKey, { model: 'gpt-sim-mini', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }], ...extra }, headers);

  beforeAll(async () => {
    system = await startTestSystem();
    await seedDemoModels(system);
    const probe = await fundedAccount(system, 1);
    await waitForListing(system, probe.apiKey, ['gpt-sim-mini', 'gpt-sim-image']);
  }, 120_000);
  afterAll(() => system?.stop());

  it("the x-request-id a client sees is the request_id of its usage record, ledger entry, activity row and `pnpm admin usage`; the client's own id is kept beside it", async () => {
    const { apiKey, keyId, accountId } = await fundedAccount(system, 100_000);
    const res = await chat(apiKey, {}, { 'x-request-id': 'client-trace-0001' });
    expect(res.status).toBe(200);
    await res.json();
    const id = res.headers.get('x-request-id')!;
    expect(id).toMatch(UUID); // ours, not the client's: a client may send one id twice

    const billing = billingClient(system);
    const usage = await billing.getUsage({ keyId, limit: 10 });
    expect(usage.records.map((r) => [r.requestId, r.clientRequestId])).toEqual([[id, 'client-trace-0001']]);

    const ledger = await billing.listLedger({ accountId, cursor: '', limit: 10 });
    expect(ledger.items.find((e) => e.kind === 'charge')?.reference).toBe(id);

    const activity = await billing.listActivity({ accountId, keyId: '', model: '', status: '', fromDate: '', toDate: '', timeZone: '', cursor: '', limit: 10 });
    expect(activity.items).toHaveLength(1);
    expect(activity.items[0]).toMatchObject({ requestId: id, clientRequestId: 'client-trace-0001', keyId, endpoint: 'chat/completions', model: 'gpt-sim-mini', status: 'succeeded' });
    expect(activity.items[0]!.credits).toBe(usage.records[0]!.credits);

    const cli = (await admin(system, 'usage', '--key', keyId)) as { records: Array<{ request_id: string; client_request_id: string }> };
    expect(cli.records.map((r) => [r.request_id, r.client_request_id])).toEqual([[id, 'client-trace-0001']]);

    // Without a client id, the record has none; a malformed one is not recorded.
    const plain = await chat(apiKey, {}, { 'x-request-id': 'no spaces allowed' });
    await plain.json();
    const again = await billing.getUsage({ keyId, limit: 10 });
    expect(again.records.find((r) => r.requestId === plain.headers.get('x-request-id'))?.clientRequestId).toBe('');
  });

  it('the activity log pages, filters by status and model, and shows a failed request as failed with nothing charged', async () => {
    const { apiKey, accountId } = await fundedAccount(system, 100_000);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await chat(apiKey);
      await res.json();
      ids.push(res.headers.get('x-request-id')!);
    }
    // The simulator fails this one upstream: the hold is released, nothing charged.
    const failed = await chat(apiKey, { messages: [{ role: 'user', content: 'x [[sim:fault=500]]' }] });
    await failed.json();
    expect(failed.status).toBe(502);
    const billing = billingClient(system);
    const q = { accountId, keyId: '', model: '', status: '', fromDate: '', toDate: '', timeZone: '', cursor: '', limit: 2 };
    const first = await billing.listActivity(q);
    const second = await billing.listActivity({ ...q, cursor: first.nextCursor });
    expect(first.nextCursor).not.toBe('');
    expect(second.nextCursor).toBe('');
    expect([...first.items, ...second.items].map((a) => a.requestId)).toEqual([failed.headers.get('x-request-id'), ...ids.toReversed()]);
    const failures = await billing.listActivity({ ...q, status: 'failed', limit: 50 });
    expect(failures.items.map((a) => [a.requestId, a.status, a.credits])).toEqual([[failed.headers.get('x-request-id'), 'failed', 0n]]);
    expect((await billing.listActivity({ ...q, model: 'gpt-sim-image', limit: 50 })).items).toEqual([]);
  });

  it('a 402 states the credits needed, the balance, and that max_tokens drives the hold of a text request', async () => {
    const { apiKey } = await fundedAccount(system, 5);
    const res = await chat(apiKey, { max_tokens: 100_000 });
    expect({ status: res.status, 'x-should-retry': res.headers.get('x-should-retry'), body: await res.json() }).toMatchInlineSnapshot(`
      {
        "body": {
          "error": {
            "code": "insufficient_balance",
            "message": "This request needs 1517 credits held until it completes, and the balance available is 5 credits. The hold is the worst case, priced from max_tokens (or the model's largest output when max_tokens is not set): send a smaller max_tokens, or top up the wallet.",
          },
        },
        "status": 402,
        "x-should-retry": "false",
      }
    `);
  });

  it('a multipart /images/edits is told to send the JSON image form, and shown it', async () => {
    const { apiKey } = await fundedAccount(system, 100_000);
    const form = new FormData();
    form.set('model', 'gpt-sim-image');
    form.set('prompt', 'x');
    form.set('image', new Blob([new Uint8Array(16)], { type: 'image/png' }), 'a.png');
    const res = await fetch(`${system.baseUrl}/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: form });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as ErrorBody;
    expect(error.code).toBe('invalid_request');
    expect(error.message).toMatch(/not multipart\/form-data/);
    expect(error.message).toContain('"image":{"data_url":"data:image/png;base64,<base64>"}');
  });

  it('an image edit too large to be valid cites the 8 MB image rule, not a byte count of the body', async () => {
    const { apiKey } = await fundedAccount(system, 100_000);
    const res = await postDeclaredLength(`${system.baseUrl}/images/edits`, apiKey, 16 * 1024 * 1024, '{"model":"gpt-sim-image","prompt":"x","image":{"b64_json":"AAAA');
    expect(res.status).toBe(400);
    const { error } = JSON.parse(res.body) as ErrorBody;
    expect(error.code).toBe('invalid_request');
    expect(error.message).toMatch(/source image may be at most 8 MB \(8388608 bytes\) decoded/);
  });

  it('a key-limit 429 says when its window resets', async () => {
    const { apiKey, keyId } = await fundedAccount(system, 100_000);
    await admin(system, 'key', 'limit', 'set', '--key', keyId, '--type', 'requests', '--period', 'daily', '--value', '1');
    await sleep(1_100); // the gateway's cached key state learns of the limit
    expect((await chat(apiKey)).status).toBe(200);
    const res = await chat(apiKey);
    const body = (await res.json()) as ErrorBody & { error: Record<string, unknown> };
    // When the window resets, and how long until then, depend on the day: shown as <…>.
    const resets = /The daily window resets at \d{4}-\d{2}-\d{2} 00:00 \S+ \(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\), in \d+[^.]*\./;
    expect(body.error.message).toMatch(resets);
    body.error.message = body.error.message.replace(resets, 'The daily window resets at <date> 00:00 <zone> (<utc>), in <time>.');
    const wire = stable({ status: res.status, 'retry-after': res.headers.get('retry-after'), body }, { retry_after_seconds: '<seconds>', 'retry-after': '<seconds>', resets_at: '<time>' });
    expect(wire).toMatchInlineSnapshot(`
      {
        "body": {
          "error": {
            "code": "api_key_limit_exceeded",
            "limit_type": "requests",
            "message": "This API key reached its daily requests limit. The daily window resets at <date> 00:00 <zone> (<utc>), in <time>.",
            "period": "daily",
          },
        },
        "retry-after": null,
        "status": 429,
      }
    `);
  });

  it('temporary 503s carry Retry-After: maintenance and paused AI requests', async () => {
    const { apiKey } = await fundedAccount(system, 100_000);
    const until = async (code: string) => {
      for (let i = 0; i < 100; i++) {
        const res = await chat(apiKey);
        const body = (await res.json()) as Partial<ErrorBody>;
        if (body.error?.code === code) return res;
        await sleep(20);
      }
      throw new Error(`never answered ${code}`);
    };
    try {
      await admin(system, 'switch', 'set', 'maintenance', 'on');
      expect((await until('system_maintenance')).headers.get('retry-after')).toBe('60');
      await admin(system, 'switch', 'set', 'maintenance', 'off');
      await admin(system, 'switch', 'set', 'ai-requests', 'off');
      expect((await until('ai_requests_disabled')).headers.get('retry-after')).toBe('60');
    } finally {
      await admin(system, 'switch', 'set', 'maintenance', 'off');
      await admin(system, 'switch', 'set', 'ai-requests', 'on');
    }
  });
});
