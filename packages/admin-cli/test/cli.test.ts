import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { clients, UnreachableError } from '../src/clients.ts';
import { commandTree, VIEW } from '../src/help.ts';
import { table } from '../src/output.ts';
import { buildProgram } from '../src/program.ts';

const run = promisify(execFile);
const MAIN = join(import.meta.dirname, '../src/main.ts');

/** A port nothing listens on (bound, then closed). */
function deadPort(): Promise<number> {
  return new Promise((done) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => done(port));
    });
  });
}

/** Runs `pnpm admin <args>` with no local run recorded; resolves with its output and exit code. */
async function admin(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-admin-'));
  try {
    const { stdout, stderr } = await run(process.execPath, [MAIN, ...args], { env: { ...process.env, GW_DATA_DIR: dir, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('operator CLI', () => {
  it('describes every command and group', () => {
    const tree = commandTree(buildProgram(async () => {}, false));
    expect(tree.map((c) => c.path)).toEqual(expect.arrayContaining(['account list', 'account show', 'switch show', 'switch set', 'key create', 'model upsert', 'user reset-password']));
    expect(tree.filter((c) => c.description === '' && c.path.split(' ').at(-1) !== 'help')).toEqual([]);
  });

  it('prints lists as aligned tables and routes as provider:model', () => {
    const models = [
      { id: 'gpt-4o-mini', kind: 'TEXT', enabled: true, price_credit_per_unit: 15_000n, aliases: [], routes: [{ provider: 'openai', upstream_model: 'gpt-4o-mini', priority: 0, weight: 1 }] },
      { id: 'img', kind: 'IMAGE', enabled: false, price_credit_per_unit: null, aliases: ['picture'], routes: [] },
    ];
    expect(table(models, VIEW.columns!.models, VIEW.format).split('\n')).toEqual([
      'ID           KIND   ENABLED  PRICE CREDIT PER UNIT  ALIASES  ROUTES',
      'gpt-4o-mini  TEXT   yes      15000                  -        openai:gpt-4o-mini',
      'img          IMAGE  no       -                      picture  -',
      '',
    ]);
    expect(table([])).toBe('  (none)\n');
  });

  it('answers a usage error as JSON under --json (exit 2), and as text otherwise', async () => {
    const asJson = await admin(['wallet', 'top-up', '--json']);
    expect(asJson.code).toBe(2);
    expect(JSON.parse(asJson.stderr)).toEqual({ error: { code: 'usage', message: "required option '--account <id>' not specified" } });
    const unknown = await admin(['walet', '--json']);
    expect(JSON.parse(unknown.stderr)).toEqual({ error: { code: 'usage', message: expect.stringContaining("unknown command 'walet'") } });
    const text = await admin(['wallet', 'top-up']);
    expect(text.code).toBe(2);
    expect(text.stderr).toContain("error: required option '--account <id>' not specified");
    const bad = await admin(['wallet', 'top-up', '--account', 'a', '--credits', '-5', '--reference', 'r', '--json']);
    expect(JSON.parse(bad.stderr)).toEqual({ error: { code: 'usage', message: '--credits must be a positive integer' } });
  });

  it('with the system stopped, fails within 2 s naming the address and asking whether pnpm start runs', async () => {
    const address = `127.0.0.1:${await deadPort()}`;
    process.env.BILLING_ADDR = address;
    const c = clients();
    try {
      const began = Date.now();
      const err = await c.billing.getSwitches({}).catch((e: unknown) => e);
      expect(Date.now() - began).toBeLessThan(2_000);
      expect(err).toBeInstanceOf(UnreachableError);
      expect((err as Error).message).toBe(`billing at ${address} did not answer: is \`pnpm start\` running? (elsewhere: set BILLING_ADDR)`);
    } finally {
      c.close();
      delete process.env.BILLING_ADDR;
    }
    const out = await admin(['switch', 'show', '--json'], { BILLING_ADDR: address });
    expect(out.code).toBe(1);
    expect(JSON.parse(out.stderr)).toEqual({ error: { code: 'unavailable', message: expect.stringContaining(`billing at ${address} did not answer: is \`pnpm start\` running?`) } });
    const text = await admin(['switch', 'show'], { BILLING_ADDR: address });
    expect(text.stderr).toBe(`error: billing at ${address} did not answer: is \`pnpm start\` running? (elsewhere: set BILLING_ADDR)\n`);
  });
});
