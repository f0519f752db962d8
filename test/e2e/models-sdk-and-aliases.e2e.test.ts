import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Anthropic, { NotFoundError as AnthropicNotFound } from '@anthropic-ai/sdk';
import OpenAI, { NotFoundError as OpenAINotFound } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, type RunningSystem } from '../../scripts/system.ts';
import { anthropicClient, billingClient, catalogClient, openaiClient, seedDemoModels, waitForListing } from '../support/clients.ts';
import { admin, fundedAccount, startTestSystem } from '../support/system-fixture.ts';

const run = promisify(execFile);

/** `pnpm admin ... --json` expected to fail: its exit code and the error object it prints. */
async function adminRefusal(system: RunningSystem, ...args: string[]): Promise<{ exit: number; error: { code: string; message: string } }> {
  try {
    await admin(system, ...args);
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { exit: e.code, error: (JSON.parse(e.stderr.trim().split('\n').at(-1)!) as { error: { code: string; message: string } }).error };
  }
  throw new Error(`pnpm admin ${args.join(' ')} succeeded`);
}

// DECISIONS.md "Real clients": GET /models/{id} and the fields the OpenAI and Anthropic SDKs know,
// and model aliases (issue 21, items 4 and 6), through the whole system with the official SDKs.
describe('models through the OpenAI and Anthropic SDKs, and model aliases', () => {
  let system: RunningSystem;
  let apiKey: string;
  let accountId: string;
  let openai: OpenAI;
  let anthropic: Anthropic;
  const logs = mkdtempSync(join(tmpdir(), 'gw-logs-'));
  /** The gateway's access-log line of the request made by alias, once it is written. */
  const logged = async () => {
    for (let i = 0; i < 50; i++) {
      const line = readFileSync(join(logs, 'edge-gateway.log'), 'utf8')
        .split('\n')
        .find((l) => l.includes('"requested_model":"claude-opus-4-1"') && l.includes('"msg":"request"'));
      if (line) return JSON.parse(line) as Record<string, unknown>;
      await new Promise((r) => setTimeout(r, 100));
    }
    return undefined;
  };

  beforeAll(async () => {
    system = await startTestSystem({ logs });
    await seedDemoModels(system);
    ({ apiKey, accountId } = await fundedAccount(system, 1_000_000));
    openai = openaiClient(system, apiKey);
    anthropic = anthropicClient(system, apiKey);
    await waitForListing(system, apiKey, ['gpt-sim-mini', 'claude-sim-sonnet']);
  }, 120_000);
  afterAll(() => system?.stop());

  it('openai.models.list and retrieve: the listing items carry object, created and owned_by beside the contract fields', async () => {
    const ids: string[] = [];
    for await (const m of openai.models.list()) ids.push(m.id);
    expect(ids).toContain('gpt-sim-mini');
    const one = await openai.models.retrieve('gpt-sim-mini');
    expect(one).toEqual({
      id: 'gpt-sim-mini',
      object: 'model',
      created: expect.any(Number),
      owned_by: 'openai',
      kind: 'TEXT',
      capabilities: ['chat/completions', 'chat', 'messages', 'messages/count_tokens', 'responses'],
      price_credit_per_unit: 15000,
      billing_unit: 'million_tokens',
    });
    // Added when the test system seeded it: within the last hour, in unix seconds.
    expect(Math.abs(one.created - Date.now() / 1000)).toBeLessThan(3600);
    expect(one).not.toHaveProperty('display_name'); // the Anthropic fields come with its header only
  });

  it('openai.models.retrieve of a model that is not listed is a 404 not_found that points to the listing', async () => {
    const err = (await openai.models.retrieve('no-such-model').catch((e: unknown) => e)) as OpenAINotFound;
    expect(err).toBeInstanceOf(OpenAINotFound);
    expect(err.error).toEqual({ code: 'not_found', message: 'The model "no-such-model" is not listed. GET /v1/models lists the models you can use.' });
  });

  it('anthropic.models.list and retrieve: type, display_name and created_at with its anthropic-version header', async () => {
    const page = await anthropic.models.list();
    expect(page.data.map((m) => m.id)).toContain('claude-sim-sonnet');
    expect(page.has_more).toBe(false);
    const all: string[] = [];
    for await (const m of anthropic.models.list()) all.push(m.id);
    expect(all).toEqual(page.data.map((m) => m.id));
    const one = await anthropic.models.retrieve('claude-sim-sonnet');
    expect(one).toMatchObject({ id: 'claude-sim-sonnet', type: 'model', display_name: 'claude-sim-sonnet', kind: 'TEXT', owned_by: 'anthropic' });
    expect(new Date(one.created_at).getTime()).toBeGreaterThan(Date.now() - 3_600_000);
    const missing = await anthropic.models.retrieve('no-such-model').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(AnthropicNotFound);
  });

  it('an alias is added and removed with the CLI, shown in `models list`, listed, resolved, and billed as its model', async () => {
    const added = (await admin(system, 'model', 'alias', 'add', '--model', 'claude-sim-sonnet', '--alias', 'claude-opus-4-1')) as { model: { id: string; aliases: string[] } };
    expect(added.model).toMatchObject({ id: 'claude-sim-sonnet', aliases: ['claude-opus-4-1'] });
    // Given again for the same model: kept, same answer.
    expect(await admin(system, 'model', 'alias', 'add', '--model', 'claude-sim-sonnet', '--alias', 'claude-opus-4-1')).toEqual(added);
    await admin(system, 'model', 'alias', 'add', '--model', 'gpt-sim-mini', '--alias', 'vendor/gpt-nick');
    const listed = (await admin(system, 'models', 'list')) as { models: Array<{ id: string; aliases: string[] }> };
    expect(listed.models.find((m) => m.id === 'claude-sim-sonnet')!.aliases).toEqual(['claude-opus-4-1']);
    expect(listed.models.find((m) => m.id === 'gpt-sim-mini')!.aliases).toEqual(['vendor/gpt-nick']);
    expect(listed.models.some((m) => m.id === 'claude-opus-4-1')).toBe(false); // not a model of its own

    await waitForListing(system, apiKey, ['claude-opus-4-1', 'vendor/gpt-nick']);
    // Listed as an item of its own, saying whose alias it is; retrievable by the SDKs (an id with
    // a slash travels encoded).
    expect(await anthropic.models.retrieve('claude-opus-4-1')).toMatchObject({ id: 'claude-opus-4-1', alias_of: 'claude-sim-sonnet', display_name: 'claude-opus-4-1', price_credit_per_unit: 75000 });
    expect(await openai.models.retrieve('vendor/gpt-nick')).toMatchObject({ id: 'vendor/gpt-nick', alias_of: 'gpt-sim-mini', object: 'model' });

    // Resolved on every text protocol, and billed as the model it names.
    const msg = await anthropic.messages.create({ model: 'claude-opus-4-1', max_tokens: 64, messages: [{ role: 'user', content: 'hello by alias' }] });
    expect(msg.content[0]).toMatchObject({ type: 'text' });
    const chat = await openai.chat.completions.create({ model: 'vendor/gpt-nick', messages: [{ role: 'user', content: 'hello again' }] });
    expect(chat.choices[0]!.message.content).toEqual(expect.any(String));
    // The access log names both: the model billed and the name the client asked for.
    expect(await logged()).toMatchObject({ model: 'claude-sim-sonnet', requested_model: 'claude-opus-4-1', route: '/v1/messages', status: 200 });
    const billing = billingClient(system);
    try {
      const ledger = await billing.listLedger({ accountId, limit: 50 });
      const charged = ledger.items.filter((i) => i.model !== '').map((i) => i.model);
      expect(charged).toContain('claude-sim-sonnet');
      expect(charged).toContain('gpt-sim-mini');
      expect(charged).not.toContain('claude-opus-4-1');
      expect(charged).not.toContain('vendor/gpt-nick');
    } finally {
      billing.close();
    }

    // Removed: no longer listed nor resolved.
    const removed = (await admin(system, 'model', 'alias', 'remove', '--alias', 'claude-opus-4-1')) as { model: { id: string; aliases: string[] } };
    expect(removed.model).toMatchObject({ id: 'claude-sim-sonnet', aliases: [] });
    const deadline = Date.now() + 15_000;
    let status = 0;
    while (Date.now() < deadline) {
      status = ((await anthropic.models.retrieve('claude-opus-4-1').catch((e: { status: number }) => e)) as { status?: number }).status ?? 200;
      if (status === 404) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(404);
    const refused = await anthropic.messages.create({ model: 'claude-opus-4-1', max_tokens: 16, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 400, error: { error: { code: 'unknown_model' } } });
  });

  it('refuses an alias that is taken, a model that does not exist, and a model upsert over an alias, each naming the fix', async () => {
    await admin(system, 'model', 'alias', 'add', '--model', 'gemini-sim-flash', '--alias', 'gemini-nick');
    expect(await adminRefusal(system, 'model', 'alias', 'add', '--model', 'gpt-sim-mini', '--alias', 'gemini-nick')).toEqual({
      exit: 1,
      error: { code: 'invalid_request', message: 'gemini-nick is already an alias of gemini-sim-flash; remove it there first (model alias remove --alias gemini-nick).' },
    });
    expect((await adminRefusal(system, 'model', 'alias', 'add', '--model', 'gpt-sim-mini', '--alias', 'claude-sim-sonnet')).error).toEqual({
      code: 'invalid_request',
      message: "claude-sim-sonnet is a model's own id; an alias must be a free public id.",
    });
    expect((await adminRefusal(system, 'model', 'alias', 'add', '--model', 'gemini-nick', '--alias', 'x-nick')).error).toEqual({
      code: 'unknown_model',
      message: "gemini-nick is an alias of gemini-sim-flash; give the model's own id.",
    });
    expect((await adminRefusal(system, 'model', 'alias', 'add', '--model', 'gpt-sim-mini', '--alias', 'bad alias!')).error.code).toBe('invalid_request');
    expect((await adminRefusal(system, 'model', 'alias', 'remove', '--alias', 'never-added')).error).toEqual({ code: 'not_found', message: 'never-added is not an alias (see models list).' });
    expect((await adminRefusal(system, 'model', 'upsert', '--id', 'gemini-nick', '--kind', 'TEXT', '--route', 'google:gemini-sim-flash', '--price', '1')).error).toEqual({
      code: 'invalid_request',
      message: 'gemini-nick is an alias of gemini-sim-flash; remove it first (model alias remove --alias gemini-nick).',
    });
    // The same alias added for two models at once: one wins, the other is told, never an internal error.
    const catalog = catalogClient(system);
    try {
      const raced = await Promise.allSettled(['gpt-sim-mini', 'claude-sim-sonnet'].map((modelId) => catalog.addAlias({ modelId, alias: 'raced-nick' })));
      expect(raced.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const lost = raced.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(lost.reason).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/raced-nick (is already an alias of|was just added)/) });
    } finally {
      catalog.close();
    }
    // A model replaced by upsert keeps its aliases and its creation time.
    const before = await openai.models.retrieve('gemini-sim-flash');
    const { stdout } = await run(process.execPath, [join(ROOT, 'packages/admin-cli/src/main.ts'), 'models', 'list', '--json'], {
      env: { ...process.env, CATALOG_ADDR: system.catalogAddr, BILLING_ADDR: system.billingAddr },
    });
    const gemini = (JSON.parse(stdout) as { models: Array<{ id: string; price_credit_per_unit: string }> }).models.find((m) => m.id === 'gemini-sim-flash')!;
    const upserted = (await admin(system, 'model', 'upsert', '--id', 'gemini-sim-flash', '--kind', 'TEXT', '--route', 'google:gemini-sim-flash', '--price', String(gemini.price_credit_per_unit))) as {
      model: { aliases: string[] };
    };
    expect(upserted.model.aliases).toEqual(['gemini-nick']);
    expect((await openai.models.retrieve('gemini-nick')).created).toBe(before.created);
  });
});
