import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts');

describe('main.ts', () => {
  it('listens on a free port, writes the ready file, logs JSON and exits 0 on SIGTERM', async () => {
    const readyFile = join(mkdtempSync(join(tmpdir(), 'sim-main-')), 'ready');
    const child = spawn(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH, SIM_PORT: '0', SIM_HOST: '127.0.0.1', READY_FILE: readyFile, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const deadline = Date.now() + 15_000;
      while (!existsSync(readyFile) && Date.now() < deadline) await sleep(25);
      const url = readFileSync(readyFile, 'utf8');
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const health = await fetch(`${url}/_sim/health`);
      expect(await health.json()).toEqual({ ok: true });
      await fetch(`${url}/google/v1beta/models?key=sim-google-key`);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    const lines = stdout.trim().split('\n').map((l) => JSON.parse(l) as { msg: string; url?: string });
    expect(lines.some((l) => l.msg === 'provider simulator listening')).toBe(true);
    const access = lines.find((l) => l.msg === 'request completed' && l.url?.startsWith('/google'));
    expect(access?.url).toBe('/google/v1beta/models?key=REDACTED');
    expect(stdout).not.toContain('sim-google-key');
  });
});
