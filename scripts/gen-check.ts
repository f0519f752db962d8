import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { ROOT } from './system.ts';

/**
 * Fails when the committed generated code differs from what `buf generate` makes of proto/ now,
 * and runs buf lint. Generates into a scratch folder, so the work tree is never touched.
 */
const GEN = join(ROOT, 'packages/contracts/src/gen');
const scratch = mkdtempSync(join(tmpdir(), 'gw-gen-'));
const buf = join(ROOT, 'node_modules/.bin/buf');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

try {
  execFileSync(buf, ['lint'], { cwd: ROOT, stdio: 'inherit' });
  execFileSync(buf, ['generate', '--output', scratch], { cwd: ROOT, stdio: 'inherit' });
  const fresh = join(scratch, 'packages/contracts/src/gen');
  const want = new Map(files(fresh).map((f) => [relative(fresh, f), readFileSync(f, 'utf8')]));
  const have = new Map(files(GEN).map((f) => [relative(GEN, f), readFileSync(f, 'utf8')]));
  const stale = [...new Set([...want.keys(), ...have.keys()])].filter((f) => want.get(f) !== have.get(f));
  if (stale.length > 0) {
    process.stderr.write(`generated code is stale; run \`pnpm gen\` and commit:\n  ${stale.join('\n  ')}\n`);
    process.exit(1);
  }
  process.stdout.write(`generated code is up to date (${want.size} files)\n`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
