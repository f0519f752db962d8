import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { cruise, type IConfiguration, type ICruiseResult } from 'dependency-cruiser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The rules of `.dependency-cruiser.cjs`, run on a small tree that breaks each of them once (and
// holds the imports they allow), so a rule that stops matching is noticed here, not in review.
const config = createRequire(import.meta.url)('../../.dependency-cruiser.cjs') as IConfiguration;

const TREE: Record<string, string> = {
  // Allowed: a service using a package through its entry, its own files, the provider simulator in tests.
  'services/text/src/main.ts': "import { x } from '../../../packages/translate/src/index.ts';\nimport { y } from '../../../packages/providers/src/index.ts';\nexport const z = x + y;",
  'services/text/test/sim.test.ts': "import { app } from '../../provider-simulator/src/app.ts';\nimport { z } from '../src/main.ts';\nexport const t = [app, z];",
  'services/provider-simulator/src/app.ts': "import fastify from 'fastify';\nexport const app = fastify;",
  'packages/providers/src/index.ts': "import { request } from 'undici';\nexport const y = String(request);",
  'packages/translate/src/index.ts': "import { ir } from './ir.ts';\nexport const x = ir;",
  'packages/translate/src/ir.ts': "export const ir = 'ir';",
  'packages/errors/src/index.ts': "export const codes = [];",
  'packages/errors/src/table.ts': "export const table = {};",
  // Each of these breaks one rule.
  'services/media/src/reads-text.ts': "import { z } from '../../text/src/main.ts';\nexport const m = z;",
  'services/media/test/other-service.test.ts': "import { z } from '../../text/src/main.ts';\nexport const m = z;",
  'packages/errors/src/uses-service.ts': "import { z } from '../../../services/text/src/main.ts';\nexport const e = z;",
  'services/catalog/src/deep.ts': "import { table } from '../../../packages/errors/src/table.ts';\nexport const d = table;",
  'services/billing/src/http.ts': "import fastify from 'fastify';\nexport const h = fastify;",
  'services/media/src/dialects.ts': "import { x } from '../../../packages/translate/src/index.ts';\nexport const d = x;",
  'services/video-jobs/src/fetches.ts': "import { request } from 'undici';\nexport const f = request;",
  'services/edge-gateway/src/calls-provider.ts': "import { y } from '../../../packages/providers/src/index.ts';\nexport const c = y;",
  'services/media/src/publishes.ts': "import { jetstream } from '@nats-io/jetstream';\nexport const p = jetstream;",
  'services/text/src/health/shared.ts': "import { jetstream } from '@nats-io/jetstream';\nexport const s = jetstream;",
  'packages/translate/src/reads-files.ts': "import { readFileSync } from 'node:fs';\nexport const r = readFileSync;",
  'services/console/src/app.ts': "import type { RouteDeps } from './routes/keys.ts';\nexport interface ConsoleDeps { a: RouteDeps }",
  'services/console/src/routes/keys.ts': "import type { ConsoleDeps } from '../app.ts';\nexport interface RouteDeps { d?: ConsoleDeps }",
  'services/console/src/typo.ts': "import { nothing } from './no-such-file.ts';\nexport const n = nothing;",
  'node_modules/fastify/package.json': '{"name":"fastify","version":"5.0.0","main":"index.js"}',
  'node_modules/fastify/index.js': 'module.exports = () => {};',
  'node_modules/@nats-io/jetstream/package.json': '{"name":"@nats-io/jetstream","version":"3.4.0","main":"index.js"}',
  'node_modules/@nats-io/jetstream/index.js': 'module.exports = { jetstream() {} };',
  'node_modules/undici/package.json': '{"name":"undici","version":"7.0.0","main":"index.js"}',
  'node_modules/undici/index.js': 'module.exports = { request() {} };',
};

let dir: string;
let result: ICruiseResult;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gw-boundaries-'));
  for (const [path, text] of Object.entries(TREE)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  const { tsConfig: _fromTheRepo, ...options } = config.options ?? {};
  const output = await cruise(['services', 'packages'], { ...options, validate: true, ruleSet: { forbidden: config.forbidden ?? [] }, baseDir: dir });
  result = output.output as ICruiseResult;
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the boundary rules', () => {
  it('find each broken boundary once, and nothing in the allowed imports', () => {
    const found = result.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();
    expect(found).toMatchInlineSnapshot(`
      [
        "bus-through-service-kit: services/media/src/publishes.ts -> node_modules/@nats-io/jetstream/index.js",
        "no-circular: services/console/src/app.ts -> services/console/src/routes/keys.ts",
        "no-providers-at-the-edge: services/edge-gateway/src/calls-provider.ts -> packages/providers/src/index.ts",
        "not-to-unresolvable: services/console/src/typo.ts -> ./no-such-file.ts",
        "package-imports-a-service: packages/errors/src/uses-service.ts -> services/text/src/main.ts",
        "package-internals: services/catalog/src/deep.ts -> packages/errors/src/table.ts",
        "providers-only-through-adapters: services/video-jobs/src/fetches.ts -> node_modules/undici/index.js",
        "public-dialects-at-the-edge-and-text: services/media/src/dialects.ts -> packages/translate/src/index.ts",
        "public-http-only-at-the-edge: services/billing/src/http.ts -> node_modules/fastify/index.js",
        "service-imports-another-service: services/media/src/reads-text.ts -> services/text/src/main.ts",
        "test-imports-another-service: services/media/test/other-service.test.ts -> services/text/src/main.ts",
        "translation-is-pure: packages/translate/src/reads-files.ts -> fs",
      ]
    `);
  });
});
