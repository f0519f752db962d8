import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkOneVersionEach, relocateImportMeta } from '../../scripts/build.ts';
import { ROOT } from './support.ts';

// The two rules of scripts/build.ts that a service started from its output (deploy-output.test.ts)
// would only show by failing: where a bundled module's import.meta points, and the refusal of a
// bundle that would need two versions of one package.

describe('relocateImportMeta', () => {
  it("points the code's import.meta.url, dirname and filename at the module's place below dist/, and nothing else", () => {
    const source = [
      "// Reads 'café.sql' beside it: new URL('./café.sql', import.meta.url)",
      "const note = 'import.meta.url is rewritten, but not in this string';",
      "const sql = readFileSync(new URL('./credits_for.sql', import.meta.url), 'utf8');",
      "const dir: string = join(import.meta.dirname, '..', 'public');",
      'const self = import.meta.filename;',
      'if (import.meta.main) run();',
    ].join('\n');
    expect(relocateImportMeta(source, 'services/billing/src/db/functions/index.ts')).toBe(
      [
        "// Reads 'café.sql' beside it: new URL('./café.sql', import.meta.url)",
        "const note = 'import.meta.url is rewritten, but not in this string';",
        `const sql = readFileSync(new URL('./credits_for.sql', new URL("./services/billing/src/db/functions/index.ts", import.meta.url).href), 'utf8');`,
        `const dir: string = join((import.meta.dirname + "/services/billing/src/db/functions"), '..', 'public');`,
        'const self = (import.meta.dirname + "/services/billing/src/db/functions/index.ts");',
        'if (import.meta.main) run();',
      ].join('\n'),
    );
  });

  it('leaves a module without import.meta as it is', () => {
    const source = "export const a = 1; // import.meta.url\n";
    expect(relocateImportMeta(source, 'packages/errors/src/index.ts')).toBe(source);
  });
});

describe('checkOneVersionEach', () => {
  const dirs = new Set([join(ROOT, 'services', 'demo'), join(ROOT, 'packages', 'kit')]);

  it('refuses a bundle whose workspace packages lock one dependency at two versions, naming both', () => {
    const lock = {
      'services/demo': { dependencies: { pino: { version: '10.4.0' }, zod: { version: '4.6.7' }, '@gw/kit': { version: 'link:../../packages/kit' } } },
      'packages/kit': { dependencies: { pino: { version: '9.1.0' }, zod: { version: '4.6.7' } } },
    };
    expect(() => checkOneVersionEach(dirs, lock, 'demo')).toThrow(
      'demo: its bundle would hold one copy of each package, but its workspace packages resolve these to different versions:\n  pino: 10.4.0 (services/demo), 9.1.0 (packages/kit)',
    );
  });

  it('accepts packages that agree (links to workspace packages are not versions)', () => {
    const lock = {
      'services/demo': { dependencies: { pino: { version: '10.4.0' }, '@gw/kit': { version: 'link:../../packages/kit' } } },
      'packages/kit': { dependencies: { pino: { version: '10.4.0' }, '@gw/errors': { version: 'link:../errors' } } },
    };
    expect(checkOneVersionEach(dirs, lock, 'demo')).toBeUndefined();
  });
});
