import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEPLOY, ROOT, dockerBuildCommand, read } from './support.ts';

// The operator CLI's image (deploy/Dockerfile, target admin-cli), minus Docker: its production
// output built by the RUN lines of its Dockerfile stage and run from that output (dist/main.js),
// as a Job in the cluster runs it.

const run = promisify(execFile);
let work = '';
let out = '';

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'gw-admin-image-'));
  out = join(work, 'out');
  await run('sh', ['-c', dockerBuildCommand('admin-cli', out)], { cwd: ROOT, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 });
}, 180_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Runs the image's entrypoint with a container's environment only; resolves with its output and exit code. */
async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [join(out, 'dist', 'main.js'), ...args], { cwd: '/', env: { PATH: process.env.PATH, NODE_ENV: 'production', ...env }, timeout: 30_000 });
    return { code: 0, ...r };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('the operator CLI image (target admin-cli)', () => {
  it('is a target of the Dockerfile whose entrypoint is the CLI', () => {
    const dockerfile = read(DEPLOY, 'Dockerfile');
    expect(dockerfile).toMatch(/FROM workspace AS build-admin-cli\nRUN pnpm deploy --frozen-lockfile --offline --prod --config.node-linker=hoisted --filter @gw\/admin-cli \/out/);
    expect(dockerfile).toMatch(/FROM runtime AS admin-cli\nCOPY --from=build-admin-cli \/out \/app\nENTRYPOINT \["node", "\/app\/dist\/main.js"\]/);
    expect(existsSync(join(out, 'node_modules', 'vitest'))).toBe(false);
    expect(existsSync(join(out, 'src')), 'no sources in the image').toBe(false);
  });

  it('runs from its production output: help, and a command that names the address it could not reach', async () => {
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('wallet');
    const port = await new Promise<number>((done) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => done(p));
      });
    });
    const down = await cli(['models', 'list', '--json'], { CATALOG_ADDR: `127.0.0.1:${port}` });
    expect(down.code).toBe(1);
    expect(JSON.parse(down.stderr)).toEqual({ error: { code: 'unavailable', message: expect.stringContaining(`catalog at 127.0.0.1:${port} did not answer`) } });
  });
});
