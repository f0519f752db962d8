import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// zxcvbn's dictionaries are several MiB of memory: the console loads them when someone chooses a
// password, not when it starts.
const CHECK = `
import { registerHooks } from 'node:module';
const loaded = [];
registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
const passwords = await import('./src/auth/passwords.ts');
const atImport = loaded.filter((url) => url.includes('zxcvbn')).length;
const verdict = passwords.passwordProblem('password1234', 'a@example.com');
console.log(JSON.stringify({ atImport, afterCheck: loaded.filter((url) => url.includes('zxcvbn')).length, verdict }));
`;

describe('what the console loads for passwords', () => {
  it('loads zxcvbn on the first password check, not at start', () => {
    const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', CHECK], { cwd: join(import.meta.dirname, '..'), encoding: 'utf8' })) as {
      atImport: number;
      afterCheck: number;
      verdict: string;
    };
    expect(out.atImport).toBe(0);
    expect(out.afterCheck).toBeGreaterThan(0);
    expect(out.verdict).toContain('too easy to guess');
  });
});
