import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TS_CACHE_HOOK, strippedSource } from '../../scripts/ts-cache.mjs';

// Services run their TypeScript sources pre-stripped (scripts/ts-cache.mjs), so that Node's
// stripper (a WebAssembly module kept for the life of the process) is never loaded in them.

/** A folder with an ES-module package holding `main.ts`, and an empty cache folder beside it. */
function project(main: string): { dir: string; cache: string; main: string } {
  const dir = mkdtempSync(join(tmpdir(), 'gw-ts-cache-'));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
  writeFileSync(join(dir, 'helper.ts'), 'export const double = (n: number): number => n * 2;\n');
  writeFileSync(join(dir, 'main.ts'), main);
  const cache = join(dir, '.cache');
  return { dir, cache, main: join(dir, 'main.ts') };
}

/** Runs main.ts (with the cache hook or without), returning what it printed, or its stderr when it failed. */
function run(p: { cache: string; main: string }, hook: boolean): { out: string; err: string } {
  try {
    const out = execFileSync(process.execPath, [...(hook ? ['--import', TS_CACHE_HOOK] : []), p.main], {
      env: { PATH: process.env.PATH, TS_CACHE_DIR: p.cache },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return { out, err: '' };
  } catch (err) {
    return { out: '', err: String((err as { stderr?: string }).stderr) };
  }
}

const REPORT = `import { double } from './helper.ts';
type Shown = { doubled: number; stripper: boolean };
const shown: Shown = { doubled: double(21), stripper: process.moduleLoadList.some((m: string) => m.includes('amaro')) };
console.log(JSON.stringify(shown));
`;

describe('stripped-source cache for the services', () => {
  it('runs TypeScript modules without loading Node’s stripper once they are cached', () => {
    const p = project(REPORT);
    // Without the hook Node strips them itself (the control: the check sees the stripper).
    expect(JSON.parse(run(p, false).out)).toEqual({ doubled: 42, stripper: true });
    // With it, the sources are cached on first use; the next run finds them there.
    run(p, true);
    expect(readdirSync(p.cache).filter((f) => f.endsWith('.js'))).toHaveLength(2);
    expect(JSON.parse(run(p, true).out)).toEqual({ doubled: 42, stripper: false });
  });

  it('serves a source edited after it was cached as it is now', () => {
    const p = project(REPORT);
    run(p, true);
    writeFileSync(join(p.dir, 'helper.ts'), 'export const double = (n: number): number => n * 3;\n');
    expect(JSON.parse(run(p, true).out)).toMatchObject({ doubled: 63 });
  });

  it('keeps every line and column, so a stack trace points into the .ts source', () => {
    const p = project(`type Id = string;\nconst id: Id = 'x';\n\n\n    throw new Error(\`failed \${id}\`);\n`);
    const { err } = run(p, true);
    expect(err).toContain('failed x');
    expect(err).toContain(`${p.main}:5:11`);
  });

  it('strips as Node does: types become spaces, positions stay', () => {
    const cache = mkdtempSync(join(tmpdir(), 'gw-ts-cache-'));
    const source = 'const n: number = 1;\nexport function f(a: string): string { return a; }\n';
    const js = strippedSource(source, cache);
    expect(js).toBe('const n         = 1;\nexport function f(a        )         { return a; }\n');
    // The second time it comes from the cache folder.
    expect(readdirSync(cache).filter((f) => f.endsWith('.js'))).toHaveLength(1);
    expect(strippedSource(source, cache)).toBe(js);
  });
});
