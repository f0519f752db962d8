import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { balanceOf, billingClient, openaiClient, waitForListing, seedDemoModels } from '../support/clients.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';
import { stable } from '../support/wire.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until `check` holds or `ms` pass; returns how long it took, or -1. */
async function within(ms: number, check: () => Promise<boolean>): Promise<number> {
  const start = Date.now();
  while (Date.now() - start <= ms) {
    if (await check()) return Date.now() - start;
    await sleep(20);
  }
  return -1;
}

const call = (base: string, key: string, path = '/models', body?: unknown) =>
  fetch(`${base}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: body instanceof Unreadable ? body.text : JSON.stringify(body) }),
  });
/** A body that is not JSON at all: the HTTP layer refuses it before any route handler runs. */
class Unreadable {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}
const codeOf = async (res: Response) => ((await res.json()) as { error?: { code: string } }).error?.code;

const MIB = 1024 * 1024;
/** Request body bytes in flight: each gateway replica 6 MiB in all and 3 MiB per account; the one text service 4 MiB. */
const BODY_BUDGETS = {
  'edge-gateway': { BODY_BUDGET_BYTES: String(6 * MIB), BODY_BUDGET_PER_ACCOUNT_BYTES: String(3 * MIB) },
  text: { BODY_BUDGET_BYTES: String(4 * MIB) },
};
/** A chat request of ~1.2 MiB whose answer takes 1.5 s, so requests sent together are in flight together. */
const largeSlowChat = { model: 'gpt-sim-mini', max_tokens: 16, messages: [{ role: 'user', content: `${'a'.repeat(1.2 * MIB)} [[sim:latency=1500]]` }] };
type Answer = { status: number; code?: string; limitType?: string; message?: string; retryAfter: string | null; charged?: number };
async function answerOf(res: Response): Promise<Answer> {
  const body = (await res.json()) as { error?: { code: string; limit_type?: string; message: string }; service?: { credit_charged: number } };
  return { status: res.status, code: body.error?.code, limitType: body.error?.limit_type, message: body.error?.message, retryAfter: res.headers.get('retry-after'), charged: body.service?.credit_charged };
}
const charged = (answers: Answer[]) => answers.reduce((sum, a) => sum + (a.charged ?? 0), 0);

// Two gateway replicas over one billing and catalog: what one replica learns, every replica must.
describe('keys, limits, rate limits and switches across two gateway replicas', () => {
  let system: RunningSystem;
  let second: string;


  beforeAll(async () => {
    system = await startTestSystem({ serviceEnv: BODY_BUDGETS });
    second = await system.addGateway();
    await seedDemoModels(system);
    // Both replicas list the models before any test counts requests against a rate limit.
    const probe = await fundedAccount(system, 1);
    await waitForListing(system, probe.apiKey, ['gpt-sim-mini']);
    await within(5_000, async () => (await call(second, probe.apiKey)).ok && ((await (await call(second, probe.apiKey)).json()) as { data: unknown[] }).data.length > 0);
  }, 120_000);
  afterAll(() => system?.stop());

  it('a revocation reaches both replicas within a second, although both had the key cached', async () => {
    const { apiKey, keyId } = await fundedAccount(system, 10);
    for (const base of [system.baseUrl, second]) expect((await call(base, apiKey)).status).toBe(200);
    await admin(system, 'key', 'revoke', keyId);
    for (const base of [system.baseUrl, second]) {
      const took = await within(1_000, async () => (await call(base, apiKey)).status === 401);
      expect(took).toBeGreaterThanOrEqual(0);
      expect(await codeOf(await call(base, apiKey))).toBe('auth_revoked');
    }
  });

  it('an expiry set, passed, then moved on reaches both replicas at once, although both had the key cached', async () => {
    const { apiKey, keyId, accountId } = await fundedAccount(system, 10);
    for (const base of [system.baseUrl, second]) expect((await call(base, apiKey)).status).toBe(200);
    const billing = billingClient(system);
    try {
      const expiresAt = Date.now() + 1_000;
      await billing.setKeyExpiry({ accountId, keyId, expiresAtUnixMs: BigInt(expiresAt) });
      await sleep(expiresAt - Date.now() + 100);
      // Each replica had the key cached without an expiry; the change reached them with the event.
      for (const base of [system.baseUrl, second]) expect(await codeOf(await call(base, apiKey))).toBe('auth_expired');
      await billing.setKeyExpiry({ accountId, keyId, expiresAtUnixMs: BigInt(Date.now() + 3_600_000) });
      for (const base of [system.baseUrl, second]) expect(await within(1_000, async () => (await call(base, apiKey)).status === 200)).toBeGreaterThanOrEqual(0);
    } finally {
      billing.close();
    }
  });

  it('a revocation whose event never came (NATS away): the cached key is still refused money, 401 auth_revoked, nothing charged', async () => {
    const { apiKey, keyId, accountId } = await fundedAccount(system, 100_000);
    const chat = { model: 'gpt-sim-mini', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };
    expect((await call(system.baseUrl, apiKey, '/chat/completions', chat)).status).toBe(200); // the key is cached now
    const before = await balanceOf(system, accountId);
    // Revoked in billing's own table, with no event: as if NATS had lost it.
    const db = new Client({ connectionString: system.databaseUrl });
    await db.connect();
    try {
      await db.query('update billing.api_key set revoked_at = now() where id = $1', [keyId]);
    } finally {
      await db.end();
    }
    const refused = await call(system.baseUrl, apiKey, '/chat/completions', chat);
    expect([refused.status, await codeOf(refused)]).toEqual([401, 'auth_revoked']);
    expect(await balanceOf(system, accountId)).toBe(before);
  });

  it('the account rate limit is shared by both replicas, with Retry-After and the blocking axis', async () => {
    const { accountId, apiKey } = await fundedAccount(system, 10);
    await admin(system, 'account', 'rate-limit', 'set', '--account', accountId, '--per-second', '1000', '--per-minute', '6');
    if (new Date().getSeconds() > 50) await sleep((61 - new Date().getSeconds()) * 1000); // stay inside one minute window
    const results = [];
    for (let i = 0; i < 10; i++) results.push(await call(i % 2 === 0 ? system.baseUrl : second, apiKey));
    expect(results.filter((r) => r.status === 200)).toHaveLength(6);
    const refused = results.filter((r) => r.status === 429);
    expect(refused).toHaveLength(4);
    const body = (await refused[0]!.json()) as { error: { code: string; limit_type: string; retry_after_seconds: number } };
    expect(body.error.retry_after_seconds).toBeGreaterThanOrEqual(1);
    expect(refused[0]!.headers.get('retry-after')).toBe(String(body.error.retry_after_seconds));
    // The seconds left depend on the moment in the minute: shown as <seconds>.
    const wire = { status: refused[0]!.status, 'retry-after': refused[0]!.headers.get('retry-after'), 'x-should-retry': refused[0]!.headers.get('x-should-retry'), body };
    expect(stable(wire, { 'retry-after': '<seconds>', retry_after_seconds: '<seconds>' })).toMatchInlineSnapshot(`
      {
        "body": {
          "error": {
            "code": "rate_limit_exceeded",
            "limit_type": "per_minute",
            "message": "Too many requests per minute for this account.",
            "retry_after_seconds": "<seconds>",
          },
        },
        "retry-after": "<seconds>",
        "status": 429,
        "x-should-retry": null,
      }
    `);
  }, 30_000);

  it('text routes keep the order of checks with the rate limit deferred into Authorize', async () => {
    const { accountId, apiKey } = await fundedAccount(system, 100_000);
    await admin(system, 'account', 'rate-limit', 'set', '--account', accountId, '--per-second', '1000', '--per-minute', '2');
    if (new Date().getSeconds() > 50) await sleep((61 - new Date().getSeconds()) * 1000);
    const valid = { model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'hi' }] };
    expect((await call(system.baseUrl, apiKey, '/chat/completions', valid)).status).toBe(200); // 1st counted in Authorize
    expect(await codeOf(await call(second, apiKey, '/chat/completions', new Unreadable('{bad')))).toBe('invalid_request'); // 2nd, counted too
    // Over the limit now: the rate limit wins over every later check, valid or not, readable or not.
    expect(await codeOf(await call(system.baseUrl, apiKey, '/chat/completions', { model: 'gpt-sim-mini' }))).toBe('rate_limit_exceeded');
    expect(await codeOf(await call(second, apiKey, '/messages', { model: 'no-such-model', max_tokens: 5, messages: [] }))).toBe('rate_limit_exceeded');
    const unreadable: string[] = [];
    for (const path of ['/chat/completions', '/chat', '/messages', '/responses']) {
      for (const text of ['{bad', '']) unreadable.push(`${path} ${JSON.stringify(text)}: ${await codeOf(await call(second, apiKey, path, new Unreadable(text)))}`);
    }
    expect(unreadable).toEqual(unreadable.map((line) => line.replace(/: .*$/, ': rate_limit_exceeded')));
    expect(await codeOf(await call(system.baseUrl, apiKey, '/chat/completions', valid))).toBe('rate_limit_exceeded');
    const usage = (await admin(system, 'usage', '--key', (await admin(system, 'key', 'list', '--account', accountId) as { keys: Array<{ key_id: string }> }).keys[0]!.key_id)) as { records: unknown[] };
    expect(usage.records).toHaveLength(1); // refused requests hold and charge nothing
  }, 30_000);

  it('operator switches reach both replicas within a second and pause generation only', async () => {
    const { apiKey } = await fundedAccount(system, 10);
    try {
      await admin(system, 'switch', 'set', 'maintenance', 'on');
      for (const base of [system.baseUrl, second]) {
        expect(await within(1_000, async () => (await call(base, apiKey, '/chat/completions', {})).status === 503)).toBeGreaterThanOrEqual(0);
        expect(await codeOf(await call(base, apiKey, '/chat/completions', {}))).toBe('system_maintenance');
        // Even a body the HTTP layer cannot read: the switches come before the body (step 3 of 4).
        for (const path of ['/chat/completions', '/messages/count_tokens', '/images/generations', '/videos/generations']) {
          expect(`${path}: ${await codeOf(await call(base, apiKey, path, new Unreadable('{bad')))}`).toBe(`${path}: system_maintenance`);
        }
        expect((await call(base, apiKey)).status).toBe(200); // the listing is not a generation request
      }
      await admin(system, 'switch', 'set', 'maintenance', 'off');
      await admin(system, 'switch', 'set', 'ai-requests', 'off');
      for (const base of [system.baseUrl, second]) {
        expect(await within(1_000, async () => (await codeOf(await call(base, apiKey, '/messages', {}))) === 'ai_requests_disabled')).toBeGreaterThanOrEqual(0);
      }
    } finally {
      await admin(system, 'switch', 'set', 'maintenance', 'off');
      await admin(system, 'switch', 'set', 'ai-requests', 'on');
    }
    for (const base of [system.baseUrl, second]) {
      expect(await within(1_000, async () => (await codeOf(await call(base, apiKey, '/chat/completions', {}))) === 'invalid_request')).toBeGreaterThanOrEqual(0);
    }
  });

  it('a per-key limit answers 429 api_key_limit_exceeded with its type and period, not retryable', async () => {
    const { apiKey, keyId } = await fundedAccount(system, 100_000);
    await admin(system, 'key', 'limit', 'set', '--key', keyId, '--type', 'requests', '--period', 'daily', '--value', '1');
    const openai = openaiClient(system, apiKey);
    await openai.chat.completions.create({ model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'one' }] });
    const res = await call(second, apiKey, '/chat/completions', { model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'two' }] });
    expect(res.status).toBe(429);
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(((await res.json()) as { error: unknown }).error).toMatchObject({ code: 'api_key_limit_exceeded', limit_type: 'requests', period: 'daily' });
    const usage = (await admin(system, 'usage', '--key', keyId)) as { records: Array<{ model: string; endpoint: string; credits: number }> };
    expect(usage.records).toHaveLength(1);
    expect(usage.records[0]).toMatchObject({ model: 'gpt-sim-mini', endpoint: 'chat/completions' });
    await admin(system, 'key', 'limit', 'clear', '--key', keyId, '--type', 'requests', '--period', 'daily');
    expect((await call(second, apiKey, '/chat/completions', { model: 'gpt-sim-mini', messages: [{ role: 'user', content: 'three' }] })).status).toBe(200);
  });

  it('an account with too many request bytes in flight on a replica gets 429 in_flight_bytes; other accounts still pass', async () => {
    const funded = 1_000_000;
    const [heavy, other] = [await fundedAccount(system, funded), await fundedAccount(system, funded)];
    const sent = Array.from({ length: 3 }, () => call(system.baseUrl, heavy.apiKey, '/chat/completions', largeSlowChat));
    await sleep(300); // the three are in flight
    const otherAnswer = await answerOf(await call(system.baseUrl, other.apiKey, '/chat/completions', largeSlowChat));
    const answers = await Promise.all(sent.map(async (res) => answerOf(await res)));

    expect(otherAnswer.status).toBe(200); // its own budget: not held up by the heavy account
    expect(answers.map((a) => a.status).toSorted()).toEqual([200, 200, 429]); // 2 x 1.2 MiB fit in 3 MiB, a third does not
    const refused = answers.find((a) => a.status === 429)!;
    expect(refused).toMatchObject({ code: 'rate_limit_exceeded', limitType: 'in_flight_bytes', retryAfter: '1' });
    expect(refused.message).toContain('in progress on this server');
    // Refused before its body was read: nothing held, nothing charged; the bytes come back after.
    expect(await admin(system, 'wallet', 'show', '--account', heavy.accountId)).toEqual({ balance: funded - charged(answers) });
    expect((await call(system.baseUrl, heavy.apiKey, '/chat/completions', largeSlowChat)).status).toBe(200);
  }, 30_000);

  it('the text service, shared by both replicas, refuses past its own byte budget and the hold is given back', async () => {
    const funded = 1_000_000;
    const accounts = [await fundedAccount(system, funded), await fundedAccount(system, funded)];
    // 2 x 1.2 MiB through each replica: each fits its replica's budgets; 4.8 MiB at text does not fit its 4 MiB.
    const sent = accounts.flatMap((a, i) => [0, 1].map(() => call(i === 0 ? system.baseUrl : second, a.apiKey, '/chat/completions', largeSlowChat)));
    const answers = await Promise.all(sent.map(async (res) => answerOf(await res)));

    expect(answers.map((a) => a.status).toSorted()).toEqual([200, 200, 200, 429]);
    expect(answers.find((a) => a.status === 429)).toMatchObject({ code: 'rate_limit_exceeded', limitType: 'in_flight_bytes', retryAfter: '1', message: expect.stringContaining('text service') });
    for (const [i, a] of accounts.entries()) {
      expect(await admin(system, 'wallet', 'show', '--account', a.accountId)).toEqual({ balance: funded - charged(answers.slice(2 * i, 2 * i + 2)) });
    }
  }, 30_000);

  it('the operator CLI lists keys without plaintext and shows wallets', async () => {
    const { accountId, apiKey } = await fundedAccount(system, 42);
    const listed = (await admin(system, 'key', 'list', '--account', accountId)) as { keys: Array<Record<string, unknown>> };
    expect(listed.keys).toHaveLength(1);
    expect(JSON.stringify(listed)).not.toContain(apiKey.slice(4));
    expect(listed.keys[0]).toMatchObject({ prefix: apiKey.slice(0, 8), last_four: apiKey.slice(-4), revoked_at: null });
    expect(await admin(system, 'wallet', 'show', '--account', accountId)).toEqual({ balance: 42 });
  });

  it('leaves a ledger whose every balance equals the sum of its entries', async () => {
    expect(await admin(system, 'ledger', 'audit')).toMatchObject({ ok: true, problems: [] });
  });
});
