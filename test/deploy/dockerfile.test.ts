import { existsSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runtimeOf, type ServiceName } from '../../scripts/system.ts';
import { DEPLOY, ROOT, SERVICES, dockerRuntime, facts, manifest, read, runtimeImports, serviceDirs, sourcePort, tsFiles, workspacePackages } from './support.ts';

// deploy/Dockerfile cannot be built here (no Docker daemon): these checks hold it to the
// workspace instead (deploy-output.test.ts runs its build stages). Each service has a target that
// deploys exactly that service and bundles it into JavaScript, runs as a non-root user and starts
// its dist/main.js; the build context keeps what `pnpm deploy` and the build need; and every
// package a service's code loads at run time is declared by the workspace package that loads it.

interface Stage {
  name: string;
  from: string;
  lines: string[];
}

/** Stages of a Dockerfile, with continuation lines joined. */
function stages(text: string): Stage[] {
  const joined = text.replace(/\\\n/g, ' ');
  const out: Stage[] = [];
  for (const raw of joined.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?$/i.exec(line);
    if (from) {
      out.push({ from: from[1]!, name: from[2] ?? '', lines: [] });
      continue;
    }
    out.at(-1)?.lines.push(line);
  }
  return out;
}

const dockerfile = read(DEPLOY, 'Dockerfile');
const all = stages(dockerfile);
const stage = (name: string) => all.find((s) => s.name === name);
/** Instructions of a stage including those it inherits from stages it is built FROM. */
function effective(name: string): string[] {
  const s = stage(name);
  if (!s) return [];
  return [...effective(s.from), ...s.lines];
}

describe('deploy/Dockerfile', () => {
  it('has a target for every service folder, and every target is a known service', () => {
    const targets = all.map((s) => s.name).filter((n) => SERVICES.some((f) => f.name === n));
    for (const dir of serviceDirs()) expect(targets, `target for services/${dir}`).toContain(dir);
    for (const s of SERVICES) expect(targets, `target ${s.name}`).toContain(s.name);
  });

  it.each(SERVICES.map((s) => s.name))('target %s deploys its own package, bundles it and starts its dist/main.js as non-root', (name) => {
    const build = stage(`build-${name}`);
    expect(build, `stage build-${name}`).toBeDefined();
    const run = build!.lines.filter((l) => l.startsWith('RUN ')).join('\n');
    // Production dependencies, those of the bundled workspace packages too, flat where dist/ finds them.
    expect(run).toMatch(new RegExp(`pnpm deploy\\b.*--frozen-lockfile.*--prod.*--config\\.node-linker=hoisted.*--filter @gw/${name} /out`));
    expect(run).toContain('rm -rf /out/node_modules/@gw ');
    expect(run).toContain(`node scripts/build.ts ${name} --out /out/dist`);
    expect(build!.from).toBe('workspace');

    const target = stage(name)!;
    expect(target.from).toBe('runtime');
    expect(target.lines).toContain(`COPY --from=build-${name} /out /app`);
    // Node's flags and the memory settings pnpm start gives the service (scripts/system.ts).
    const image = dockerRuntime(name);
    const local = runtimeOf(name as ServiceName);
    expect(image.cmd).toEqual(['node', ...local.nodeFlags, 'dist/main.js']);
    expect(image.env).toMatchObject(local.env);
    const f = facts(name);
    expect(target.lines).toContain(`EXPOSE ${f.port}`);
    const health = target.lines.find((l) => l.startsWith('HEALTHCHECK '));
    expect(health, 'HEALTHCHECK').toBeDefined();
    expect(health).toContain('/opt/gw/healthcheck.ts');
    expect(health).toContain(f.protocol === 'grpc' ? ' grpc ' : name === 'provider-simulator' ? ' tcp ' : ' http ');

    const inherited = effective(name);
    const user = inherited.filter((l) => l.startsWith('USER ')).at(-1);
    expect(user, 'USER').toBeDefined();
    const uid = /^USER\s+(\d+)(?::\d+)?$/.exec(user!);
    expect(uid, 'USER must be numeric so runAsNonRoot can check it').not.toBeNull();
    expect(Number(uid![1])).toBeGreaterThan(0);
    expect(inherited).toContain('WORKDIR /app');
    expect(inherited).toContain('COPY deploy/healthcheck.ts /opt/gw/healthcheck.ts');
  });

  it('binds each service on all interfaces at the port its sources use', () => {
    for (const name of serviceDirs()) {
      const f = facts(name);
      expect(sourcePort(name), `port of services/${name} in its sources`).toBe(f.port);
      const env = stage(name)!.lines.filter((l) => l.startsWith('ENV ')).join(' ');
      const hostVar = f.protocol === 'grpc' ? 'GRPC' : ({ 'edge-gateway': 'GATEWAY', console: 'CONSOLE' } as Record<string, string>)[name] ?? 'SIM';
      expect(env).toContain(`${hostVar}_HOST=0.0.0.0`);
      expect(env).toContain(`${hostVar}_PORT=${f.port}`);
    }
  });

  it('builds on Node 24 with the pnpm version the toolchain pins', () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=(node:24[-.\w]*|gcr\.io\/distroless\/nodejs24[-\w]*)(@sha256:[0-9a-f]{64})?$/m);
    expect(stage('runtime')!.from).toBe('${NODE_IMAGE}');
    const pinned = /GW_PNPM_VERSION=(\S+)/.exec(read(ROOT, 'scripts', 'toolchain.sh'))![1];
    expect(dockerfile).toContain(`ARG PNPM_VERSION=${pinned}`);
    // The packages come from the lockfile alone before the sources are copied (layer caching).
    const ws = stage('workspace')!.lines;
    expect(ws.slice(0, 5)).toEqual(['COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./', 'COPY patches ./patches', 'RUN pnpm fetch', 'COPY . .', 'RUN pnpm install --frozen-lockfile --offline --ignore-scripts']);
  });

  it('the build stages never reach the runtime images except through /out', () => {
    for (const s of all.filter((x) => SERVICES.some((f) => f.name === x.name))) {
      const copies = s.lines.filter((l) => l.startsWith('COPY --from='));
      expect(copies).toEqual([`COPY --from=build-${s.name} /out /app`]);
    }
  });
});

/** Docker's .dockerignore matching: `**` spans folders, a rule matching a parent excludes its files, the last match wins. */
function ignored(rules: string[], path: string): boolean {
  const parents = path.split('/').map((_, i, parts) => parts.slice(0, i + 1).join('/'));
  let out = false;
  for (const rule of rules) {
    const negate = rule.startsWith('!');
    const pattern = (negate ? rule.slice(1) : rule).replace(/^\/+/, '');
    const re = new RegExp(
      `^${pattern
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*\*\//g, '%ANY_FOLDERS%')
        .replace(/\/\*\*/g, '%SUBTREE%')
        .replace(/\*\*/g, '.*')
        .replace(/\*/g, '[^/]*')
        .replace(/\?/g, '[^/]')
        .replaceAll('%ANY_FOLDERS%', '(?:.*/)?')
        .replaceAll('%SUBTREE%', '(?:/.*)?')}$`,
    );
    if (parents.some((p) => re.test(p))) out = !negate;
  }
  return out;
}

describe('deploy/Dockerfile.dockerignore', () => {
  const rules = read(DEPLOY, 'Dockerfile.dockerignore')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));

  it('keeps the manifests, the lockfile, every source file, the build script and the health check in the context', () => {
    const needed = ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml', 'test/package.json', 'deploy/healthcheck.ts', 'scripts/build.ts'];
    for (const f of readdirSync(join(ROOT, 'services', 'console', 'src', 'public'))) needed.push(`services/console/src/public/${f}`);
    for (const f of readdirSync(join(ROOT, 'services', 'billing', 'src', 'db', 'functions'))) needed.push(`services/billing/src/db/functions/${f}`);
    for (const f of readdirSync(join(ROOT, 'patches'))) needed.push(`patches/${f}`);
    for (const dir of workspacePackages().values()) {
      needed.push(relative(ROOT, join(dir, 'package.json')));
      for (const f of tsFiles(join(dir, 'src'))) needed.push(relative(ROOT, f));
    }
    const fixtures = join(ROOT, 'services', 'provider-simulator', 'fixtures');
    if (existsSync(fixtures)) for (const f of readdirSync(fixtures)) needed.push(`services/provider-simulator/fixtures/${f}`);
    expect(needed.filter((p) => ignored(rules, p))).toEqual([]);
  });

  it('leaves out installed modules, git, local data, tests and the chart', () => {
    for (const p of ['node_modules/x/index.js', 'services/billing/dist/main.js', 'scripts/start.ts', 'services/billing/node_modules/pg/index.js', '.git/HEAD', '.data/pg/PG_VERSION', 'services/billing/test/money.test.ts', 'packages/service-kit/test/outbox.test.ts', 'test/e2e/models-and-auth.e2e.test.ts', 'test/global-setup.ts', 'deploy/helm/generation-gateway/values.yaml', '.env']) {
      expect(ignored(rules, p), `${p}`).toBe(true);
    }
  });
});

describe('what the deployed services load', () => {
  const packages = workspacePackages();

  /** Workspace packages a package depends on, transitively, itself included. */
  function closure(name: string, seen = new Set<string>()): Set<string> {
    if (seen.has(name)) return seen;
    seen.add(name);
    const m = manifest(packages.get(name)!);
    for (const dep of Object.keys(m.dependencies ?? {})) if (packages.has(dep)) closure(dep, seen);
    return seen;
  }

  // In the image our workspace packages are bundled into dist/, and /app/node_modules holds the
  // dependencies the service and those packages declare (hoisted), each in the one version the
  // build checked they agree on: an import works there when the package that makes it, or the
  // service, declares it. Development and vitest resolve more (root devDependencies), which is how
  // an undeclared import slips through until production.
  it.each(serviceDirs())('every package services/%s loads is declared where its deployed output finds it', (dir) => {
    const service = manifest(join(ROOT, 'services', dir));
    const serviceDeps = new Set(Object.keys(service.dependencies ?? {}));
    const missing: string[] = [];
    for (const pkg of closure(service.name)) {
      const pkgDir = packages.get(pkg)!;
      const m = manifest(pkgDir);
      const declared = new Set([...Object.keys(m.dependencies ?? {}), ...Object.keys(m.peerDependencies ?? {}), ...serviceDeps]);
      for (const file of tsFiles(join(pkgDir, 'src'))) {
        for (const imported of runtimeImports(read(file))) {
          if (imported !== pkg && !declared.has(imported)) missing.push(`${relative(ROOT, file)} imports ${imported}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('recognises runtime imports and ignores type-only ones and SQL text', () => {
    const src = [
      "import { a } from 'pkg-a';",
      "import type { B } from 'pkg-b';",
      "import {\n  type C,\n  d,\n} from '@scope/pkg-c/sub';",
      "export { e } from 'pkg-e';",
      "export type { F } from 'pkg-f';",
      "import 'pkg-g';",
      "const h = await import('pkg-h');",
      "import { readFile } from 'node:fs';",
      "import path from 'path';",
      "import { local } from './local.ts';",
      'const sql = `select *\nfrom "wallet"`;',
      "// import { x } from 'commented';",
    ].join('\n');
    expect([...runtimeImports(src)].sort()).toEqual(['@scope/pkg-c', 'pkg-a', 'pkg-e', 'pkg-g', 'pkg-h']);
  });
});
