import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { billingClient } from '../support/clients.ts';
import { startClientSystem, type ClientSystem } from './support.ts';

/**
 * Claude Code (`claude -p`) and Codex CLI (`codex exec`, Responses API), headless, configured as
 * docs/client-guide.md says, against the whole system with the simulator upstream. Both npm
 * packages ship their native binary in a platform package: nothing is downloaded at run time.
 * The simulator is steered from the prompt: `[[sim:tool=NAME]]` makes it call the client's own
 * tool of that name, so each tool loop runs a real tool of the client and sends its result back.
 */
const require = createRequire(import.meta.url);
/** Claude Code's wrapper starts the platform package's binary (its postinstall is not run here). */
const CLAUDE = join(dirname(require.resolve('@anthropic-ai/claude-code/package.json')), 'cli-wrapper.cjs');
const CODEX = join(dirname(require.resolve('@openai/codex/package.json')), 'bin', 'codex.js');

const SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string' }, temperature_c: { type: 'number' } },
  required: ['city', 'temperature_c'],
  additionalProperties: false,
};

/**
 * A CLI run takes a few seconds (most of it the CLI's own start), but minutes on a loaded machine:
 * each run and each test may take that long before it counts as hung.
 */
const RUN_TIMEOUT_MS = 150_000;
vi.setConfig({ testTimeout: RUN_TIMEOUT_MS + 10_000 });

let gw: ClientSystem;
const scratch: string[] = [];
/** A fresh directory: each run gets its own home (no user config, no shared state) and work dir. */
const freshDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  scratch.push(dir);
  return dir;
};

beforeAll(async () => {
  gw = await startClientSystem();
}, 180_000);
afterAll(async () => {
  await gw?.system.stop();
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/** The upstream requests the simulator received since the last `clearUpstream()`, oldest first. */
async function upstreamRequests(): Promise<UpstreamRequest[]> {
  const res = await fetch(`${gw.system.simulatorUrl}/_sim/requests?limit=500`);
  const { requests } = (await res.json()) as { requests: Array<{ seq: number; provider: string; path: string; body: Record<string, unknown> }> };
  return requests.sort((x, y) => x.seq - y.seq).filter((r) => /\/messages$|\/responses$|\/chat\/completions$|:(stream)?generateContent$/i.test(r.path.split('?')[0]!));
}
type UpstreamRequest = { provider: string; path: string; body: Record<string, unknown> };
type Items = Array<Record<string, unknown>>;

/**
 * What of the model's earlier reasoning an upstream request carries back with a tool result, in
 * words the checks compare: each provider wants its own proof back, where it put it.
 */
function reasoningSentBack(req: UpstreamRequest): string {
  // An OpenAI chat upstream answers reasoning as a token count only: nothing to carry back.
  if (req.path.split('?')[0]!.endsWith('/chat/completions')) return 'nothing (chat)';
  if (req.provider === 'anthropic') {
    const turns = req.body.messages as Array<{ role: string; content: Items | string }>;
    const content = turns.findLast((m) => m.role === 'assistant')?.content;
    const first = Array.isArray(content) ? content[0] : undefined;
    const signed = first?.type === 'thinking' && /\S/.test(String(first.thinking)) && /\S/.test(String(first.signature));
    return signed && Array.isArray(content) && content.at(-1)?.type === 'tool_use' ? 'signed thinking before the call' : JSON.stringify(content);
  }
  if (req.provider === 'google') {
    const turns = req.body.contents as Array<{ role: string; parts: Items }>;
    const call = turns.findLast((c) => c.role === 'model')?.parts.find((p) => p.functionCall !== undefined);
    // Gemini's own signature, not the placeholder for history built without one.
    const signature = String(call?.thoughtSignature ?? '');
    return /\S/.test(signature) && signature !== 'skip_thought_signature_validator' ? "Gemini's signature on the call" : JSON.stringify(call);
  }
  const reasoning = (req.body.input as Items).find((i) => i.type === 'reasoning');
  return typeof reasoning?.encrypted_content === 'string' ? 'encrypted reasoning item' : JSON.stringify(reasoning);
}

const clearUpstream = () => fetch(`${gw.system.simulatorUrl}/_sim/requests`, { method: 'DELETE' });

/** Runs a CLI to its end with only the given environment (and PATH); stdout, stderr, exit code. */
function runCli(script: string, args: string[], env: Record<string, string>, cwd: string): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [script, ...args], { cwd, env: { PATH: process.env.PATH ?? '', ...env }, timeout: RUN_TIMEOUT_MS, maxBuffer: 32 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ stdout, stderr, code: err ? (typeof err.code === 'number' ? err.code : 1) : 0 }),
    );
    child.stdin?.end(); // no standard input, as in CI
  });
}

/** The client guide's settings: base URL, the key as ANTHROPIC_AUTH_TOKEN, model names routed by aliases. */
const claude = async (model: string, ...args: string[]) => {
  const home = freshDir('gw-claude-home-');
  const work = join(home, 'project');
  mkdirSync(work);
  writeFileSync(join(work, 'notes.txt'), 'hello from the project\n');
  const env = {
    HOME: home,
    ANTHROPIC_BASE_URL: gw.origin,
    ANTHROPIC_AUTH_TOKEN: gw.apiKey,
    ANTHROPIC_MODEL: model,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: 'claude-haiku-4-5',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
  };
  const res = await runCli(CLAUDE, ['-p', ...args], env, work);
  if (res.code !== 0) throw new Error(`claude exited ${res.code}\n${res.stdout.slice(-2000)}\n${res.stderr.slice(-2000)}`);
  return res.stdout;
};
type Result = { is_error: boolean; result: string; num_turns: number; usage: { input_tokens: number; output_tokens: number }; structured_output?: unknown };
const json = async (model: string, ...args: string[]) => JSON.parse(await claude(model, ...args, '--output-format', 'json')) as Result;

describe('Claude Code (claude -p)', () => {
  describe.each([
    ['native', 'claude-sonnet-4-5', 'signed thinking before the call'],
    ['to OpenAI', 'gpt-5-mini', 'nothing (chat)'],
    ['to Google', 'gemini-2.5-flash', "Gemini's signature on the call"],
  ])('%s (%s)', (_direction, model, reasoningBack) => {
    it('answers a prompt, with usage', async () => {
      const res = await json(model, 'Say hello.');
      expect(res.is_error).toBe(false);
      expect(res.result).toMatch(/^Simulated reply/);
      expect(res.usage.output_tokens).toBeGreaterThan(0);
      expect(res.usage.input_tokens + ((res.usage as Record<string, number>).cache_read_input_tokens ?? 0)).toBeGreaterThan(0);
    });

    it('streams (stream-json with partial messages)', async () => {
      const events = (await claude(model, 'Tell me a story.', '--output-format', 'stream-json', '--verbose', '--include-partial-messages'))
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as { type: string; event?: { type: string; delta?: { type: string } }; is_error?: boolean });
      const deltas = events.filter((e) => e.type === 'stream_event' && e.event?.type === 'content_block_delta' && e.event.delta?.type === 'text_delta');
      expect(deltas.length).toBeGreaterThan(1);
      expect(events.at(-1)).toMatchObject({ type: 'result', is_error: false });
    });

    it('runs a tool loop with its own tool (Glob) and answers from the result', async () => {
      const res = await json(model, 'List the files here. [[sim:tool=Glob]]', '--allowedTools', 'Glob');
      expect(res.is_error).toBe(false);
      expect(res.num_turns).toBe(2);
      expect(res.result).toMatch(/^Simulated reply using the tool result/);
    });

    it('keeps its thinking across a tool loop: the thinking of the tool call goes back upstream with the tool result', async () => {
      await clearUpstream();
      const res = await json(model, 'Think, then list the files here. [[sim:reasoning; tool=Glob]]', '--allowedTools', 'Glob');
      expect(res.is_error).toBe(false);
      expect(res.result).toMatch(/^Simulated reply using the tool result/);
      const upstream = await upstreamRequests();
      expect(upstream.length).toBeGreaterThanOrEqual(2);
      // Anthropic's signed thinking block goes back first in the tool turn; Gemini's signature on the call.
      expect(reasoningSentBack(upstream.at(-1)!)).toBe(reasoningBack);
    });

    it('returns structured output (--json-schema)', async () => {
      const res = await json(model, 'Weather in Hanoi. [[sim:tool=StructuredOutput]]', '--json-schema', JSON.stringify(SCHEMA));
      expect(res.is_error).toBe(false);
      expect(res.structured_output).toEqual({ city: expect.any(String), temperature_c: expect.any(Number) });
    });
  });
});

/** The client guide's config.toml: a model provider at the gateway's /v1 with wire_api = "responses". */
const codex = async (model: string, prompt: string, ...args: string[]) => {
  const home = freshDir('gw-codex-home-');
  const work = join(home, 'project');
  mkdirSync(work);
  writeFileSync(
    join(home, 'config.toml'),
    [
      `model = "${model}"`,
      'model_provider = "gateway"',
      '',
      '[model_providers.gateway]',
      'name = "Generation gateway"',
      `base_url = "${gw.baseUrl}"`,
      'env_key = "GW_API_KEY"',
      'wire_api = "responses"',
      '',
    ].join('\n'),
  );
  const env = { HOME: home, CODEX_HOME: home, GW_API_KEY: gw.apiKey };
  const res = await runCli(CODEX, ['exec', '--skip-git-repo-check', '--json', '--sandbox', 'read-only', ...args, prompt], env, work);
  if (res.code !== 0) throw new Error(`codex exited ${res.code}\n${res.stdout.slice(-2000)}\n${res.stderr.slice(-2000)}`);
  const events = res.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { type: string; item?: { type: string; text?: string; message?: string }; usage?: { input_tokens: number; output_tokens: number } });
  const failed = events.filter((e) => e.type === 'turn.failed' || e.type === 'error');
  expect(failed).toEqual([]);
  return {
    items: events.filter((e) => e.type === 'item.completed').map((e) => e.item!.type),
    messages: events.filter((e) => e.type === 'item.completed' && e.item?.type === 'agent_message').map((e) => e.item!.text!),
    usage: events.find((e) => e.type === 'turn.completed')?.usage,
  };
};

describe('Codex CLI (codex exec, Responses API)', () => {
  describe.each([
    ['native', 'gpt-5-codex', 'encrypted reasoning item'],
    ['to Claude', 'claude-sonnet-4-5', 'signed thinking before the call'],
  ])('%s (%s)', (_direction, model, reasoningBack) => {
    it('answers a prompt (streamed Responses), with usage', async () => {
      const res = await codex(model, 'Say hello.');
      expect(res.messages.at(-1)).toMatch(/^Simulated reply/);
      expect(res.usage!.input_tokens).toBeGreaterThan(0);
      expect(res.usage!.output_tokens).toBeGreaterThan(0);
    });

    it('runs a tool loop with its own tool (get_goal) and answers from the result', async () => {
      const res = await codex(model, 'What is the goal? [[sim:tool=get_goal]]');
      expect(res.messages.at(-1)).toMatch(/^Simulated reply using the tool result: \{"goal"/);
    });

    it('keeps encrypted reasoning across a tool loop (store: false, reasoning sent back)', async () => {
      await clearUpstream();
      const res = await codex(model, 'What is the goal? [[sim:reasoning; tool=get_goal]]');
      expect(res.messages.at(-1)).toMatch(/^Simulated reply using the tool result: \{"goal"/);
      expect(res.items).toContain('reasoning');
      const upstream = await upstreamRequests();
      // Sent back as it came: a Responses reasoning item with its encrypted content, or (through the
      // reasoning item Codex got) Claude's own thinking block with its signature, before the call.
      expect(reasoningSentBack(upstream.at(-1)!)).toBe(reasoningBack);
    });

    it('returns structured output (--output-schema)', async () => {
      const dir = freshDir('gw-codex-schema-');
      writeFileSync(join(dir, 'schema.json'), JSON.stringify(SCHEMA));
      const res = await codex(model, 'Weather in Hanoi.', '--output-schema', join(dir, 'schema.json'));
      expect(JSON.parse(res.messages.at(-1)!)).toEqual({ city: expect.any(String), temperature_c: expect.any(Number) });
    });
  });
});

describe('what the coding agents used is billed as the models their names are aliases of', () => {
  it('the ledger names the models, not the client-side names', async () => {
    const billing = billingClient(gw.system);
    try {
      const models = new Set<string>();
      let cursor = '';
      do {
        const page = await billing.listLedger({ accountId: gw.accountId, limit: 200, cursor });
        for (const item of page.items) if (item.model !== '') models.add(item.model);
        cursor = page.nextCursor;
      } while (cursor !== '');
      for (const model of ['claude-sim-sonnet', 'gpt-sim-mini', 'gemini-sim-flash']) expect(models).toContain(model);
      for (const alias of ['claude-sonnet-4-5', 'gpt-5-mini', 'gpt-5-codex', 'gemini-2.5-flash']) expect(models).not.toContain(alias);
    } finally {
      billing.close();
    }
  });
});
