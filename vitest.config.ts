import { defineConfig } from 'vitest/config';

// One root config: unit tests live beside their package (`<pkg>/test/*.test.ts`), whole-system
// tests in `test/e2e`. `test/global-setup.ts` gives every run a fresh database of its own.
export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'services/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    fileParallelism: true,
    maxWorkers: 2,
  },
});
