import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, resolve } from 'node:path';

/** The repository root. */
export const ROOT = resolve(import.meta.dirname, '..', '..');
export const DEPLOY = join(ROOT, 'deploy');
export const CHART = join(DEPLOY, 'helm', 'generation-gateway');

/**
 * What the deployment assumes about each service: its values key in the chart, its port, its
 * protocol, whether it owns a database schema (and so has a migration hook and a migrate-*
 * compose service), and whom it calls. The tests hold the deployment files to this table and the
 * table to the sources (ports, databases, every service folder present).
 */
export interface ServiceFacts {
  /** Folder under services/, image target, component label. */
  name: string;
  /** Values key of the chart. */
  key: string;
  port: number;
  protocol: 'grpc' | 'http';
  database: boolean;
  /** gRPC services it calls (by name). */
  calls: string[];
  /** Optional in the chart (`<key>.enabled`). */
  optional: boolean;
}

export const SERVICES: ServiceFacts[] = [
  { name: 'edge-gateway', key: 'gateway', port: 8080, protocol: 'http', database: false, calls: ['billing', 'catalog', 'text', 'media', 'video-jobs'], optional: false },
  { name: 'billing', key: 'billing', port: 50051, protocol: 'grpc', database: true, calls: [], optional: false },
  { name: 'catalog', key: 'catalog', port: 50052, protocol: 'grpc', database: true, calls: [], optional: false },
  { name: 'text', key: 'text', port: 50053, protocol: 'grpc', database: false, calls: ['catalog'], optional: false },
  { name: 'media', key: 'media', port: 50054, protocol: 'grpc', database: true, calls: [], optional: false },
  { name: 'video-jobs', key: 'videoJobs', port: 50055, protocol: 'grpc', database: true, calls: ['billing'], optional: false },
  { name: 'console', key: 'console', port: 8081, protocol: 'http', database: true, calls: ['billing', 'catalog'], optional: true },
  { name: 'provider-simulator', key: 'simulator', port: 8090, protocol: 'http', database: false, calls: [], optional: true },
];

export const facts = (name: string): ServiceFacts => {
  const found = SERVICES.find((s) => s.name === name);
  if (!found) throw new Error(`no facts for service ${name}`);
  return found;
};

/** Service folders present in the tree (the console arrives later). */
export function serviceDirs(): string[] {
  return readdirSync(join(ROOT, 'services')).filter((d) => existsSync(join(ROOT, 'services', d, 'package.json'))).sort();
}

export const read = (...parts: string[]) => readFileSync(join(...parts), 'utf8');

/** Every .ts file below `dir` (sources only: no node_modules, no tests). */
export function tsFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue;
    const p = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...tsFiles(p));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const BUILTINS = new Set(builtinModules);

/** Package name of a bare specifier (`@scope/name/sub` -> `@scope/name`), or undefined. */
export function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return undefined;
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
  return BUILTINS.has(name) ? undefined : name;
}

/**
 * Packages a TypeScript file loads at run time: static imports and re-exports (`import type` and
 * `export type` are erased by type stripping and do not count), side-effect imports and dynamic
 * imports with a literal specifier. Statements are matched from the start of a line, so SQL or
 * prose that happens to say `from "x"` is not taken for an import.
 */
export function runtimeImports(source: string): Set<string> {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const specs: string[] = [];
  for (const m of code.matchAll(/^\s*(?:import|export)\s+(type\s+)?[\w\s{},*$]*?\bfrom\s*['"]([^'"]+)['"]/gm)) {
    if (!m[1]) specs.push(m[2]!);
  }
  for (const m of code.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm)) specs.push(m[1]!);
  for (const m of code.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) specs.push(m[1]!);
  const out = new Set<string>();
  for (const spec of specs) {
    const pkg = packageOf(spec);
    if (pkg) out.add(pkg);
  }
  return out;
}

interface Manifest {
  name: string;
  version?: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

export const manifest = (dir: string): Manifest => JSON.parse(read(dir, 'package.json')) as Manifest;

/** Workspace package folders by package name (packages/* and services/*). */
export function workspacePackages(): Map<string, string> {
  const out = new Map<string, string>();
  for (const group of ['packages', 'services']) {
    for (const d of readdirSync(join(ROOT, group))) {
      const dir = join(ROOT, group, d);
      if (existsSync(join(dir, 'package.json'))) out.set(manifest(dir).name, dir);
    }
  }
  return out;
}

/** Port of a service as its sources define it. */
export function sourcePort(name: string): number | undefined {
  const src = join(ROOT, 'services', name, 'src');
  const patterns: Array<[string, RegExp]> = [
    ['main.ts', /defaultPort:\s*([\d_]+)/],
    ['config.ts', /GATEWAY_PORT:[^\n]*\.default\(([\d_]+)\)/],
    ['config.ts', /CONSOLE_PORT:[^\n]*\.default\(([\d_]+)\)/],
    ['main.ts', /SIM_PORT\s*\?\?\s*([\d_]+)/],
  ];
  for (const [file, re] of patterns) {
    const p = join(src, file);
    if (!existsSync(p)) continue;
    const m = re.exec(readFileSync(p, 'utf8'));
    if (m) return Number(m[1]!.replaceAll('_', ''));
  }
  return undefined;
}

/** True when the service's sources declare a database (a migrate command or `database:` in main). */
export function sourceHasDatabase(name: string): boolean {
  const src = join(ROOT, 'services', name, 'src');
  if (existsSync(join(src, 'migrate.ts'))) return true;
  return existsSync(join(src, 'main.ts')) && /\bdatabase:\s*\{/.test(readFileSync(join(src, 'main.ts'), 'utf8'));
}

/** Environment variable names the workspace reads or the reference launcher (scripts/system.ts) sets. */
export function knownEnvNames(): string {
  const files = [
    ...readdirSync(join(ROOT, 'services')).flatMap((d) => tsFiles(join(ROOT, 'services', d, 'src'))),
    ...readdirSync(join(ROOT, 'packages')).flatMap((d) => tsFiles(join(ROOT, 'packages', d, 'src'))),
    join(ROOT, 'scripts', 'system.ts'),
  ];
  return files.map((f) => readFileSync(f, 'utf8')).join('\n');
}

/** Workspace packages a package bundles (its `@gw/*` dependencies, transitively), itself included, as folders. */
export function workspaceClosure(name: string, packages = workspacePackages(), seen = new Set<string>()): Set<string> {
  const dir = packages.get(name);
  if (!dir || seen.has(dir)) return seen;
  seen.add(dir);
  for (const dep of Object.keys(manifest(dir).dependencies ?? {})) if (packages.has(dep)) workspaceClosure(dep, packages, seen);
  return seen;
}

/** The lines of deploy/Dockerfile's stage `name` after its FROM (continuation lines joined), up to the next stage. */
function stageLines(name: string): string[] {
  const lines = read(DEPLOY, 'Dockerfile').replace(/\\\n/g, ' ').split('\n');
  const from = lines.findIndex((l) => new RegExp(`^FROM\\s+\\S+\\s+AS\\s+${name}\\s*$`).test(l));
  if (from < 0) throw new Error(`deploy/Dockerfile has no stage ${name}`);
  const end = lines.findIndex((l, i) => i > from && /^FROM\s/.test(l));
  return lines.slice(from + 1, end < 0 ? undefined : end);
}

/**
 * The shell command of deploy/Dockerfile's `build-<target>` stage (its RUN lines joined), with its
 * output folder `/out` replaced by `out`: the tests build an image's /app exactly as the image does.
 */
export function dockerBuildCommand(target: string, out: string): string {
  const runs = stageLines(`build-${target}`)
    .filter((l) => l.startsWith('RUN '))
    .map((l) => l.slice(4).trim());
  const command = runs.join(' && ').replace(/(^|\s)\/out(?=[\s/]|$)/g, `$1${out}`);
  // Never run a stage's command against the machine's own /out.
  if (/(^|\s)\/out\b/.test(command)) throw new Error(`build-${target} names /out where the tests cannot replace it: ${command}`);
  return command;
}

/**
 * What deploy/Dockerfile's `<target>` stage runs: its CMD (exec form) and the variables of its own
 * ENV lines (`KEY=value` pairs, unquoted), so that the tests start a service as its image does.
 */
export function dockerRuntime(target: string): { cmd: string[]; env: Record<string, string> } {
  const own = stageLines(target);
  const cmd = own.filter((l) => l.startsWith('CMD [')).at(-1);
  if (!cmd) throw new Error(`deploy/Dockerfile's ${target} has no CMD in exec form`);
  const env: Record<string, string> = {};
  for (const line of own.filter((l) => l.startsWith('ENV '))) {
    for (const pair of line.slice(4).trim().split(/\s+/)) {
      const at = pair.indexOf('=');
      env[pair.slice(0, at)] = pair.slice(at + 1);
    }
  }
  return { cmd: JSON.parse(cmd.slice(4)) as string[], env };
}

/**
 * Packages a bundle loads: its static and dynamic imports and `require` calls with a literal name
 * (the bundler writes imports at the start of a line, so SQL text such as `from "hold"` inside a
 * template literal is not taken for one).
 */
export function bundleImports(code: string): Set<string> {
  const specs: string[] = [];
  for (const m of code.matchAll(/^(?:import|export)\b[^\n]*?\bfrom\s*"([^"]+)";?$/gm)) specs.push(m[1]!);
  for (const m of code.matchAll(/^import\s*"([^"]+)";?$/gm)) specs.push(m[1]!);
  for (const m of code.matchAll(/\b(?:import|require)\(\s*"([^"]+)"\s*\)/g)) specs.push(m[1]!);
  const out = new Set<string>();
  for (const spec of specs) {
    const pkg = packageOf(spec);
    if (pkg) out.add(pkg);
  }
  return out;
}
