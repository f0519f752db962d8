/**
 * `pnpm build [name...]`: builds each deployable (every workspace package with a `src/main.ts`: the
 * services and the operator CLI) into JavaScript for the images, `<package>/dist/`, or for one
 * deployable into the folder `--out <dir>` names (deploy/Dockerfile builds into its `pnpm deploy`
 * output: `node scripts/build.ts billing --out /out/dist`):
 *
 * - `main.js` (and `migrate.js` where the service has a `src/migrate.ts`), ES modules bundled by
 *   rolldown with our workspace packages (`@gw/*`) inside. Third-party packages stay external:
 *   `pnpm deploy --prod` installs them beside `dist/` (deploy/Dockerfile), where Node finds them.
 * - The files our code reads beside its sources at run time (billing's `.sql` functions, the
 *   console's stylesheet and scripts, the simulator's video fixtures), copied to
 *   `dist/<path in the repository>`. Each bundled module's `import.meta.url`, `import.meta.dirname`
 *   and `import.meta.filename` are rewritten to that same place, so a lookup such as
 *   `new URL('./credits_for.sql', import.meta.url)` or `createRequire(import.meta.url)` finds in
 *   `dist/` what it found beside the source.
 *
 * A bundle holds one copy of each third-party package for all the workspace packages inside it, so
 * the build refuses a deployable whose packages resolve the same dependency to different versions
 * in the lockfile. `pnpm start` and the tests keep running the TypeScript sources; only the images
 * (and test/deploy) run this output.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { build, type Plugin } from 'rolldown';
import { parseAst } from 'rolldown/parseAst';
import { parse } from 'yaml';

const ROOT = resolve(import.meta.dirname, '..');

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
}

const manifestOf = (dir: string): Manifest => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;

/** Workspace package folders by package name. */
function workspace(): Map<string, string> {
  const found = new Map<string, string>();
  for (const group of ['packages', 'services']) {
    for (const entry of readdirSync(join(ROOT, group))) {
      const dir = join(ROOT, group, entry);
      if (existsSync(join(dir, 'package.json'))) found.set(manifestOf(dir).name, dir);
    }
  }
  return found;
}

/** The deployables: workspace packages with a `src/main.ts`, by folder name. */
function deployables(): Map<string, string> {
  const found = new Map<string, string>();
  for (const dir of workspace().values()) if (existsSync(join(dir, 'src', 'main.ts'))) found.set(relative(join(dir, '..'), dir), dir);
  return found;
}

/** The workspace packages a package bundles: itself and its `@gw/*` dependencies, transitively. */
function closure(dir: string, packages: Map<string, string>, seen = new Set<string>()): Set<string> {
  if (seen.has(dir)) return seen;
  seen.add(dir);
  for (const dep of Object.keys(manifestOf(dir).dependencies ?? {})) {
    const depDir = packages.get(dep);
    if (depDir) closure(depDir, packages, seen);
  }
  return seen;
}

interface LockImporter {
  dependencies?: Record<string, { version: string }>;
}

/**
 * Refuses a bundle that would need two versions of one package: every workspace package inside it
 * must resolve each third-party dependency it declares to the same version (lockfile `importers`).
 */
export function checkOneVersionEach(dirs: Set<string>, lock: Record<string, LockImporter>, name: string): void {
  const versions = new Map<string, Map<string, string>>();
  for (const dir of dirs) {
    const importer = relative(ROOT, dir).split(sep).join('/');
    for (const [dep, { version }] of Object.entries(lock[importer]?.dependencies ?? {})) {
      if (version.startsWith('link:')) continue;
      const seen = versions.get(dep) ?? new Map<string, string>();
      seen.set(version, importer);
      versions.set(dep, seen);
    }
  }
  const conflicts = [...versions].filter(([, seen]) => seen.size > 1);
  if (conflicts.length > 0) {
    const lines = conflicts.map(([dep, seen]) => `  ${dep}: ${[...seen].map(([v, by]) => `${v} (${by})`).join(', ')}`);
    throw new Error(`${name}: its bundle would hold one copy of each package, but its workspace packages resolve these to different versions:\n${lines.join('\n')}`);
  }
}

/** Package name of a bare specifier: `@scope/name/sub` -> `@scope/name`, `name/sub` -> `name`. */
const packageName = (specifier: string) => specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');

/** Where a module's code (not its comments or strings) reads `import.meta.url`, `dirname` or `filename`. */
function importMetaReads(code: string, file: string): Array<{ start: number; end: number; prop: string }> {
  const found: Array<{ start: number; end: number; prop: string }> = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const child of node) visit(child);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    const n = node as { type?: string; object?: { type?: string; meta?: { name?: string } }; property?: { name?: string }; computed?: boolean; start: number; end: number };
    const prop = n.property?.name;
    if (n.type === 'MemberExpression' && n.object?.type === 'MetaProperty' && n.object.meta?.name === 'import' && !n.computed && (prop === 'url' || prop === 'dirname' || prop === 'filename')) {
      found.push({ start: n.start, end: n.end, prop });
      return;
    }
    for (const value of Object.values(node)) visit(value);
  };
  visit(parseAst(code, { lang: file.endsWith('.ts') ? 'ts' : 'js' }, file));
  return found;
}

/**
 * Rewrites a module's `import.meta.url`/`dirname`/`filename` to the place its source file
 * (`file`, relative to the repository) has below the output folder, which every chunk is written
 * to directly, so `import.meta` of the chunk is that folder.
 */
export function relocateImportMeta(code: string, file: string): string {
  const folder = file.split('/').slice(0, -1).join('/');
  let out = code;
  for (const { start, end, prop } of importMetaReads(code, file).sort((a, b) => b.start - a.start)) {
    const replacement =
      prop === 'url' ? `new URL(${JSON.stringify(`./${file}`)}, import.meta.url).href` : `(import.meta.dirname + ${JSON.stringify(`/${prop === 'dirname' ? folder : file}`)})`;
    out = out.slice(0, start) + replacement + out.slice(end);
  }
  return out;
}

/** Points each bundled module of ours at its place below `dist/`, where the build copies the files it reads. */
function sourceLocations(): Plugin {
  return {
    name: 'gw-source-locations',
    transform(code, id) {
      if (!id.startsWith(`${ROOT}${sep}`) || id.includes(`${sep}node_modules${sep}`) || !code.includes('import.meta.')) return null;
      return relocateImportMeta(code, relative(ROOT, id).split(sep).join('/'));
    },
  };
}

/** Files a package reads at run time: everything but code, manifests, docs, tests and outputs. */
function runtimeFiles(dir: string, bundled: Set<string>, prefix = ''): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (!['node_modules', 'dist', 'test'].includes(entry.name)) files.push(...runtimeFiles(dir, bundled, rel));
    } else if (!/\.(ts|mts|md)$/.test(entry.name) && entry.name !== 'package.json' && !bundled.has(join(dir, rel))) {
      files.push(rel);
    }
  }
  return files;
}

/** Builds one deployable into `<dir>/dist`; returns the files written, relative to it. */
async function buildDeployable(name: string, dir: string, out: string, packages: Map<string, string>, lock: Record<string, LockImporter>): Promise<string[]> {
  const bundledPackages = closure(dir, packages);
  checkOneVersionEach(bundledPackages, lock, name);
  const thirdParty = new Set([...bundledPackages].flatMap((d) => Object.keys(manifestOf(d).dependencies ?? {})).filter((dep) => !packages.has(dep)));

  rmSync(out, { recursive: true, force: true });
  const input: Record<string, string> = { main: join(dir, 'src', 'main.ts') };
  if (existsSync(join(dir, 'src', 'migrate.ts'))) input.migrate = join(dir, 'src', 'migrate.ts');

  const result = await build({
    input,
    cwd: ROOT,
    platform: 'node',
    // Node's modules and the packages our workspace packages declare stay imports: Node loads them
    // from the deployed node_modules. Anything else (the bundler's own helpers) goes into the bundle.
    external: (id, _importer, isResolved) => !isResolved && (isBuiltin(id) || thirdParty.has(packageName(id))),
    plugins: [sourceLocations()],
    // The images' Node: no syntax is lowered.
    transform: { target: 'node24' },
    logLevel: 'warn',
    onLog(level, log) {
      throw new Error(`${name}: rolldown ${level}: ${log.message}`);
    },
    output: { dir: out, format: 'esm', entryFileNames: '[name].js', chunkFileNames: '[name]-[hash].js' },
  });

  const modules = new Set<string>();
  for (const chunk of result.output) if (chunk.type === 'chunk') for (const id of chunk.moduleIds) if (!id.startsWith('\0')) modules.add(realpathSync(id));
  const written = result.output.map((o) => o.fileName);
  for (const pkg of bundledPackages) {
    const real = realpathSync(pkg);
    if (![...modules].some((m) => m.startsWith(`${real}${sep}`))) continue;
    for (const file of runtimeFiles(real, modules)) {
      const target = join(out, relative(ROOT, real), file);
      mkdirSync(dirname(target), { recursive: true });
      cpSync(join(real, file), target);
      written.push(relative(out, target).split(sep).join('/'));
    }
  }
  return written.sort();
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { out: { type: 'string' } } });
  const all = deployables();
  for (const name of positionals) if (!all.has(name)) throw new Error(`no deployable named ${name}: ${[...all.keys()].join(', ')}`);
  const names = positionals.length > 0 ? positionals : [...all.keys()];
  if (values.out !== undefined && names.length !== 1) throw new Error('--out takes the output folder of one deployable: name it');
  const packages = workspace();
  const lock = (parse(readFileSync(join(ROOT, 'pnpm-lock.yaml'), 'utf8')) as { importers: Record<string, LockImporter> }).importers;
  const started = performance.now();
  await Promise.all(
    names.map(async (name) => {
      const out = values.out === undefined ? join(all.get(name)!, 'dist') : resolve(values.out);
      const files = await buildDeployable(name, all.get(name)!, out, packages, lock);
      process.stdout.write(`${name}: ${files.length} files in ${out}\n`);
    }),
  );
  process.stdout.write(`built ${names.length} deployable(s) in ${Math.round(performance.now() - started)} ms\n`);
}
