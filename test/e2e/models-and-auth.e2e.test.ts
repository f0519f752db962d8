import { connect } from 'node:net';
import { generateApiKey } from '@gw/api-keys';
import { ERROR_CODES, ERROR_TABLE } from '@gw/errors';
import { Validator } from '@seriousme/openapi-schema-validator';
import { catalogV1, createClient } from '@gw/contracts';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSystem } from '../../scripts/system.ts';
import { DEMO_MODELS } from '../../scripts/demo-models.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';
import { errorLine } from '../support/wire.ts';

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

// The first path through the whole system: an API key authenticated by `billing` (gRPC, own
// schema), the listing read from `catalog` (gRPC, own schema), real processes, real Postgres/NATS.
describe('GET /v1/models through the whole system', () => {
  let system: RunningSystem;
  let apiKey: string;
  let keyId: string;

  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${system.baseUrl}${path}`, { headers });
  const listedIds = async () => ((await (await get('/models', bearer(apiKey))).json()) as { data: Array<{ id: string }> }).data.map((m) => m.id);
  const chatAs = (key: string, content: string) =>
    fetch(`${system.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { ...bearer(key), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'compat-sim-chat', messages: [{ role: 'user', content }] }),
    });
  const chat = (content: string) => chatAs(apiKey, content);
  const sim = (method: string, path: string, body?: object) =>
    fetch(`${system.simulatorUrl}${path}`, { method, ...(body ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}) });

  beforeAll(async () => {
    system = await startTestSystem();
    const catalog = createClient(catalogV1.CatalogService, system.catalogAddr);
    for (const model of DEMO_MODELS) await catalog.upsertModel({ model });
    const { TEXT } = catalogV1.ModelKind;
    await catalog.upsertModel({ model: { id: 'disabled-model', kind: TEXT, priceCreditPerUnit: 10n, enabled: false, provider: 'openai', upstreamModel: 'gpt-sim-mini' } });
    await catalog.upsertModel({ model: { id: 'unpriced-model', kind: TEXT, enabled: true, provider: 'openai', upstreamModel: 'gpt-sim-mini' } });
    catalog.close();
    ({ apiKey, keyId } = await fundedAccount(system, 1000));
  }, 120_000);
  afterAll(() => system?.stop());

  it('lists exactly the enabled, priced models in the spec 2.1 shape', async () => {
    const res = await get('/models', bearer(apiKey));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toMatch(/.{8,}/);
    const body = (await res.json()) as { data: Array<Record<string, unknown>> };
    expect(body.data.map((m) => m.id).sort()).toEqual(DEMO_MODELS.map((m) => m.id).sort());
    expect(body.data.find((m) => m.id === 'gpt-sim-mini')).toEqual({
      id: 'gpt-sim-mini',
      kind: 'TEXT',
      capabilities: ['chat/completions', 'chat', 'messages', 'messages/count_tokens', 'responses'],
      price_credit_per_unit: 15000,
      billing_unit: 'million_tokens',
      // The OpenAI SDK's fields beside the contract's (DECISIONS.md "Real clients").
      object: 'model',
      created: expect.any(Number),
      owned_by: 'openai',
    });
    expect(body.data.find((m) => m.id === 'gpt-sim-image')).toMatchObject({ kind: 'IMAGE', billing_unit: 'image' });
    expect(body.data.find((m) => m.id === 'veo-sim')).toMatchObject({ kind: 'VIDEO', billing_unit: 'second' });
  });

  it('a model whose providers have no token counter does not offer count_tokens, and cannot be given it', async () => {
    const catalog = createClient(catalogV1.CatalogService, system.catalogAddr);
    const { TEXT } = catalogV1.ModelKind;
    try {
      const { model } = await catalog.upsertModel({ model: { id: 'compat-default', kind: TEXT, enabled: false, provider: 'compat', upstreamModel: 'compat-sim-chat' } });
      expect(model!.capabilities).toEqual(['chat/completions', 'chat', 'messages', 'responses']);
      const asked = await catalog
        .upsertModel({ model: { id: 'compat-counting', kind: TEXT, enabled: false, provider: 'compat', upstreamModel: 'compat-sim-chat', capabilities: ['messages/count_tokens'] } })
        .catch((e: unknown) => e);
      expect(asked).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/no provider of this model has a token counter/i) });
      // A route to a provider with a counter is enough.
      const mixed = await catalog.upsertModel({
        model: { id: 'compat-mixed', kind: TEXT, enabled: false, routes: [{ provider: 'compat', upstreamModel: 'compat-sim-chat', weight: 1 }, { provider: 'openai', upstreamModel: 'gpt-sim-mini', priority: 1, weight: 1 }] },
      });
      expect(mixed.model!.capabilities).toContain('messages/count_tokens');
    } finally {
      catalog.close();
    }
  });

  it("the operator's model records are checked: an unconfigured provider, a route or capability twice, a price past 2^53 are refused", async () => {
    const catalog = createClient(catalogV1.CatalogService, system.catalogAddr);
    const base = { id: 'checked-model', kind: catalogV1.ModelKind.TEXT, enabled: false, provider: 'openai', upstreamModel: 'gpt-sim-mini' };
    const refusal = (model: Record<string, unknown>) => catalog.upsertModel({ model: { ...base, ...model } }).catch((e: unknown) => e);
    try {
      expect(await refusal({ provider: 'opneai' })).toMatchObject({ code: 'invalid_request', message: 'Provider opneai is not configured (PROVIDERS).' });
      expect(await refusal({ routes: [{ provider: 'openai', upstreamModel: 'gpt-sim-mini', weight: 1 }, { provider: 'openai', upstreamModel: 'gpt-sim-mini', priority: 5, weight: 1 }] })).toMatchObject({
        code: 'invalid_request',
        message: expect.stringContaining('openai:gpt-sim-mini is given twice'),
      });
      expect(await refusal({ capabilities: ['chat', 'chat', 'chat/completions'] })).toMatchObject({ code: 'invalid_request', message: 'Capability chat is listed twice.' });
      const tooDear = 2n ** 53n;
      expect(await refusal({ priceCreditPerUnit: tooDear })).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('at most 9007199254740991') });
      // The largest price the listing shows exactly is taken, on upsert and on a price change.
      await catalog.upsertModel({ model: { ...base, priceCreditPerUnit: tooDear - 1n } });
      expect(await catalog.setPrice({ modelId: base.id, priceCreditPerUnit: tooDear }).catch((e: unknown) => e)).toMatchObject({ code: 'invalid_request' });
    } finally {
      catalog.close();
    }
  });

  it('answers what the HTTP layer cannot read in the error shape, with invalid_request', async () => {
    const badUrl = await get('/models/%zz', bearer(apiKey));
    expect([badUrl.status, await badUrl.json()]).toEqual([400, { error: { code: 'invalid_request', message: 'The request URL could not be decoded.' } }]);
    expect(badUrl.headers.get('x-request-id')).toMatch(/\S/); // every response carries one (DECISIONS.md)
    const { host, port } = new URL(system.baseUrl);
    const raw = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), host.split(':')[0]!);
        let answer = '';
        socket.on('data', (d) => (answer += d.toString()));
        socket.on('close', () => resolve(answer));
        socket.on('error', reject);
        socket.write(request);
      });
    const huge = await raw(`GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(huge).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(huge.slice(huge.indexOf('\r\n\r\n') + 4))).toEqual({ error: { code: 'invalid_request', message: 'The request headers are larger than the server accepts.' } });
    const garbage = await raw('NOT HTTP AT ALL\r\n\r\n');
    expect(JSON.parse(garbage.slice(garbage.indexOf('\r\n\r\n') + 4))).toEqual({ error: { code: 'invalid_request', message: 'The request is not valid HTTP.' } });
    for (const answer of [huge, garbage]) expect(answer).toMatch(/\r\nX-Request-Id: [0-9a-f-]{36}\r\n/);
  });

  it('answers 401 auth_missing_or_malformed without a header, not Bearer, Bearer without a key, a token without our prefix', async () => {
    const cases: Record<string, Record<string, string>> = {
      'no header': {},
      'not Bearer': { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` },
      'Bearer without a key': { authorization: 'Bearer ' },
      'a token without our prefix': { authorization: 'Bearer sk-not-ours-1234567890' },
    };
    const answers: Record<string, string> = {};
    for (const [name, headers] of Object.entries(cases)) {
      const res = await get('/models', headers);
      answers[name] = errorLine(res.status, res.headers, await res.text());
    }
    expect(answers).toMatchInlineSnapshot(`
      {
        "Bearer without a key": "401 retry-after=null x-should-retry=false {"error":{"code":"auth_missing_or_malformed","message":"Send the API key as \`Authorization: Bearer <API_KEY>\`."}}",
        "a token without our prefix": "401 retry-after=null x-should-retry=false {"error":{"code":"auth_missing_or_malformed","message":"The bearer token is not an API key of this gateway (its keys begin with \`gwk_\`). Send the API key as \`Authorization: Bearer <API_KEY>\`."}}",
        "no header": "401 retry-after=null x-should-retry=false {"error":{"code":"auth_missing_or_malformed","message":"Send the API key as \`Authorization: Bearer <API_KEY>\`."}}",
        "not Bearer": "401 retry-after=null x-should-retry=false {"error":{"code":"auth_missing_or_malformed","message":"Send the API key as \`Authorization: Bearer <API_KEY>\`."}}",
      }
    `);
  });

  it('takes the Bearer scheme in any case, as HTTP auth schemes are', async () => {
    for (const scheme of ['bearer', 'BEARER', 'BeArEr']) expect([scheme, (await get('/models', { authorization: `${scheme} ${apiKey}` })).status]).toEqual([scheme, 200]);
  });

  it('answers 401 auth_invalid for a mistyped key and for an unknown well-formed key', async () => {
    const typo = `${apiKey.slice(0, 10)}${apiKey[10] === 'a' ? 'b' : 'a'}${apiKey.slice(11)}`;
    const answers = [];
    for (const key of [typo, generateApiKey()]) {
      const res = await get('/models', bearer(key));
      answers.push(errorLine(res.status, res.headers, await res.text()));
    }
    // The same answer for both: a typo is not told apart from a key that never was.
    expect(answers[1]).toBe(answers[0]);
    expect(answers[0]).toMatchInlineSnapshot(`"401 retry-after=null x-should-retry=false {"error":{"code":"auth_invalid","message":"The API key does not exist."}}"`);
  });

  it('answers 401 auth_revoked at once after revocation, although the key was cached', async () => {
    const { apiKey: key, keyId: id } = await fundedAccount(system, 10);
    expect((await get('/models', bearer(key))).status).toBe(200);
    const revoked = await admin(system, 'key', 'revoke', id);
    expect(revoked.key_id).toBe(id);
    const deadline = Date.now() + 1000;
    let refused = '';
    while (Date.now() < deadline) {
      const res = await get('/models', bearer(key));
      if (res.status === 401) {
        refused = errorLine(res.status, res.headers, await res.text());
        break;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(refused).toMatchInlineSnapshot(`"401 retry-after=null x-should-retry=false {"error":{"code":"auth_revoked","message":"The API key was revoked."}}"`);
  });

  it('answers 401 auth_expired once the expiry passes', async () => {
    const started = Date.now();
    const { account_id } = (await admin(system, 'account', 'create', '--name', 'expiry')) as { account_id: string };
    // Beyond twice what one CLI call just took: on a busy machine the next call must not outlast the expiry.
    const expiresAt = new Date(Date.now() + 1500 + 2 * (Date.now() - started)).toISOString();
    const { api_key } = (await admin(system, 'key', 'create', '--account', account_id, '--expires-at', expiresAt)) as { api_key: string };
    expect((await get('/models', bearer(api_key))).status).toBe(200);
    await new Promise((r) => setTimeout(r, Date.parse(expiresAt) - Date.now() + 50));
    const res = await get('/models', bearer(api_key));
    expect(errorLine(res.status, res.headers, await res.text())).toMatchInlineSnapshot(`"401 retry-after=null x-should-retry=false {"error":{"code":"auth_expired","message":"The API key has expired."}}"`);
  });

  it('answers unknown routes in the error shape', async () => {
    const res = await get('/nope', bearer(apiKey));
    expect(errorLine(res.status, res.headers, await res.text())).toMatchInlineSnapshot(`"404 retry-after=null x-should-retry=false {"error":{"code":"not_found","message":"No route for GET \\"/v1/nope\\"."}}"`);
  });

  it('keeps no key plaintext anywhere in the database', async () => {
    const client = new Client({ connectionString: system.databaseUrl });
    await client.connect();
    try {
      const tables = await client.query<{ s: string; t: string }>(
        `select table_schema as s, table_name as t from information_schema.tables
         where table_schema not in ('pg_catalog', 'information_schema') and table_type = 'BASE TABLE'`,
      );
      expect(tables.rows.some((r) => r.s === 'billing' && r.t === 'api_key')).toBe(true);
      let rowsSeen = 0;
      for (const { s, t } of tables.rows) {
        const rows = await client.query<{ j: string }>(`select row_to_json(x)::text as j from "${s}"."${t}" x`);
        rowsSeen += rows.rowCount ?? 0;
        for (const { j } of rows.rows) {
          expect(j).not.toContain(apiKey);
          expect(j).not.toContain(apiKey.slice(4, 36));
        }
      }
      expect(rowsSeen).toBeGreaterThan(0);
      const keys = await client.query('select count(*)::int as n from billing.api_key where id = $1', [keyId]);
      expect(keys.rows[0].n).toBe(1);
    } finally {
      await client.end();
    }
  });

  it('lets the operator CLI list models and read a wallet', async () => {
    const listed = (await admin(system, 'models', 'list')) as { models: Array<{ id: string; enabled: boolean }> };
    expect(listed.models.find((m) => m.id === 'disabled-model')?.enabled).toBe(false);
    expect(listed.models.some((m) => m.id === 'unpriced-model')).toBe(true);
  });

  it('serves an OpenAPI 3.1 document, generated from the routes, that validates and covers every public route and error code', async () => {
    const res = await fetch(`${system.baseUrl}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, { responses: Record<string, unknown> }>>; components: { schemas: Record<string, { properties?: Record<string, { properties?: { code?: { enum?: string[] } } }> }> } };
    expect(doc.openapi).toBe('3.1.0');
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    const base = new URL(system.baseUrl).pathname;
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path.replace(base, '')}`));
    expect(operations.sort()).toEqual(
      [
        'GET /models',
        'GET /models/{id}',
        'POST /chat/completions',
        'POST /chat',
        'POST /messages',
        'POST /messages/count_tokens',
        'POST /responses',
        'POST /images/generations',
        'POST /images/edits',
        'GET /images/jobs/{jobId}',
        'POST /videos/generations',
        'GET /videos/generations/{jobId}',
        'GET /videos/generations/{jobId}/content',
      ].sort(),
    );
    expect(doc.components.schemas.ErrorBody?.properties?.error?.properties?.code?.enum?.sort()).toEqual([...ERROR_CODES].sort());
    // Every error status a code can have is documented on some route.
    const statuses = new Set(Object.values(doc.paths).flatMap((m) => Object.values(m).flatMap((op) => Object.keys(op.responses))));
    for (const code of ERROR_CODES) expect(statuses.has(String(ERROR_TABLE[code].http))).toBe(true);
    const docs = await fetch(`${system.baseUrl}/docs/`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('swagger');
  });

  it("one account's prompt-provoked failures do not take a model away from anyone", async () => {
    // 25 requests of one account that make the provider fail: the route stays open to others.
    for (let i = 0; i < 25; i++) expect((await chat('x [[sim:fault=500]]')).status).toBe(502);
    const other = await fundedAccount(system, 1000);
    expect((await chatAs(other.apiKey, 'hello')).status).toBe(200);
    expect(await listedIds()).toContain('compat-sim-chat');
  }, 30_000);

  it('a model whose every route fails for several accounts leaves the listing and is refused at once with Retry-After, then returns', async () => {
    await sim('PUT', '/_sim/settings/compat/compat-sim-chat', { fault: '500' });
    try {
      // Failures of three accounts in the window: the route opens for the whole deployment.
      const keys = [apiKey, (await fundedAccount(system, 1000)).apiKey, (await fundedAccount(system, 1000)).apiKey];
      // (502 until the route opens; 503 once it has, when the gateway already knows.)
      for (const key of [...keys, ...keys]) expect([502, 503]).toContain((await chatAs(key, 'hello')).status);
      const until = Date.now() + 5_000;
      while ((await listedIds()).includes('compat-sim-chat') && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      // The gateway learnt it from the route event: the listing leaves the model out, and it is refused before any hold.
      expect(await listedIds()).not.toContain('compat-sim-chat');
      const refused = await chat('hello');
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({
        code: 'model_temporarily_unavailable',
        message: expect.stringMatching(/temporarily unavailable after repeated provider failures/),
      });
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    } finally {
      await sim('DELETE', '/_sim/settings');
    }
    // The provider is back: the next probe closes the route within seconds, and the model returns.
    const back = Date.now() + 10_000;
    while (!(await listedIds()).includes('compat-sim-chat') && Date.now() < back) await new Promise((r) => setTimeout(r, 100));
    expect(await listedIds()).toContain('compat-sim-chat');
    expect((await chat('hello')).status).toBe(200);
  }, 30_000);
});
