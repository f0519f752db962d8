import { existsSync, globSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';

// One root config, four lanes (vitest projects). `pnpm test` runs them all; `pnpm test:<lane>` one.
//   unit         tests beside their package (`<pkg>/test/*.test.ts`) that need nothing but Node, and
//                the tests of the repository's tooling (`test/tooling`):
//                no Postgres, no NATS, no process of their own. `pnpm test:unit`, well under a minute.
//   integration  tests beside their package that use the run's Postgres or NATS, or start a process.
//   e2e          whole-system tests under `test/` (`test/e2e`, `test/clients`, any new folder there).
//   deploy       `test/deploy`: images, compose file and chart.
//   faults       `test/faults`: replicas killed and hung, services, NATS and Postgres restarted under
//                paid traffic (`pnpm test:faults`).
// The lanes with infrastructure run `test/global-setup.ts`, which gives each run a fresh database.

const root = import.meta.dirname;
const besideCode = ['packages/*/test/**/*.test.ts', 'services/*/test/**/*.test.ts'];
// Tests of the repository's own tooling (boundary rules): Node only, so the unit lane.
const tooling = ['test/tooling/**/*.test.ts'];
const setup = ['test/global-setup.ts'];

// A test beside its code is an integration test when it, or a test helper it imports (relative,
// outside `src/`), asks the global setup for the database or NATS, or starts processes (imports
// spawn, fork, exec or execFile; a quick `execFileSync` of a tool does not count). Decided from
// the text, so a new test lands in the right lane without a list to keep.
const asksForInfrastructure =
  /\binject\('(databaseUrl|natsUrl|eventsNamespace)'\)|import\s*\{[^}]*\b(spawn|fork|exec|execFile)\b[^}]*\}\s*from\s*'node:child_process'/;

function needsInfrastructure(file: string, seen = new Set<string>()): boolean {
  if (seen.has(file) || !existsSync(file)) return false;
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  if (asksForInfrastructure.test(text)) return true;
  for (const [, spec] of text.matchAll(/from '(\.\.?\/[^']+\.ts)'/g)) {
    if (!spec!.includes('/src/') && needsInfrastructure(join(dirname(file), spec!), seen)) return true;
  }
  return false;
}

const integration = globSync(besideCode, { cwd: root, exclude: (f) => f.includes('node_modules') })
  .filter((f) => needsInfrastructure(join(root, f)))
  .map((f) => relative(root, join(root, f)))
  .sort();

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    fileParallelism: true,
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'unit', include: [...besideCode, ...tooling], exclude: [...configDefaults.exclude, ...integration] } },
      { extends: true, test: { name: 'integration', include: integration, globalSetup: setup } },
      { extends: true, test: { name: 'e2e', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, 'test/deploy/**', 'test/faults/**', ...tooling], globalSetup: setup } },
      { extends: true, test: { name: 'deploy', include: ['test/deploy/**/*.test.ts'], globalSetup: setup } },
      // One file at a time: each starts a whole system (several replicas) and kills parts of it.
      { extends: true, test: { name: 'faults', include: ['test/faults/**/*.test.ts'], globalSetup: setup, fileParallelism: false } },
    ],
  },
});
