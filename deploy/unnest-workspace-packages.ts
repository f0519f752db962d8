/**
 * `node deploy/unnest-workspace-packages.ts <deploy-dir>`: makes the output of
 * `pnpm deploy --filter @gw/<svc> --prod <deploy-dir>` runnable with Node's type stripping.
 *
 * Why: our workspace packages export their TypeScript sources (`./src/index.ts`). `pnpm deploy`
 * injects them as copies into `node_modules/.pnpm/<entry>/node_modules/@gw/<name>`, and Node
 * refuses to strip types from any file under `node_modules`
 * (ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING), so the deployed service would not start.
 *
 * What: each injected workspace package is moved to `<deploy-dir>/packages/<name>` (a path without
 * a `node_modules` segment) and its old place becomes a relative symlink to the new one, so every
 * existing link (the service's own `node_modules/@gw/<name>`, other packages' links) still
 * resolves, and Node's realpath lands outside `node_modules`. The moved package gets a
 * `node_modules` folder of its own holding the same links to its dependencies that pnpm had put
 * beside it. Test folders of our own packages are removed: they never run in production.
 *
 * Only relative symlinks are created, so the folder can be copied elsewhere (`COPY --from` in the
 * Dockerfile, the tests' temporary folders) and still work. Exits non-zero with a message on any
 * surprise rather than producing a half-moved tree.
 */
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

interface Injected {
  /** `<deploy-dir>/node_modules/.pnpm/<entry>/node_modules`: the package and its dependency links. */
  entryModules: string;
  /** Path of the package inside `entryModules`, e.g. `@gw/contracts`. */
  name: string;
}

const isDir = (p: string) => lstatSync(p).isDirectory();
const isLink = (p: string) => lstatSync(p).isSymbolicLink();

/** The injected workspace packages: `.pnpm` entries resolved from a local folder (`file:`). */
function findInjected(out: string): Injected[] {
  const store = join(out, 'node_modules', '.pnpm');
  if (!existsSync(store)) throw new Error(`${store} not found: is ${out} the output of pnpm deploy?`);
  const found: Injected[] = [];
  for (const entry of readdirSync(store)) {
    if (!entry.includes('@file+')) continue;
    const entryModules = join(store, entry, 'node_modules');
    const own: string[] = [];
    for (const top of readdirSync(entryModules)) {
      const p = join(entryModules, top);
      if (isLink(p) || !isDir(p)) continue;
      if (top.startsWith('@')) {
        for (const sub of readdirSync(p)) {
          const q = join(p, sub);
          if (!isLink(q) && isDir(q) && existsSync(join(q, 'package.json'))) own.push(`${top}/${sub}`);
        }
      } else if (existsSync(join(p, 'package.json'))) {
        own.push(top);
      }
    }
    if (own.length !== 1) throw new Error(`${entry}: expected exactly one package folder, found ${own.length}`);
    found.push({ entryModules, name: own[0]! });
  }
  return found;
}

/** Recreates `from` (a symlink) at `to`, pointing at the same target, relative to its new place. */
function copyLink(from: string, to: string): void {
  const target = resolve(dirname(from), readlinkSync(from));
  mkdirSync(dirname(to), { recursive: true });
  symlinkSync(relative(dirname(to), target), to);
}

export function unnestWorkspacePackages(out: string): string[] {
  const root = resolve(out);
  const moved: string[] = [];
  const used = new Set<string>();
  for (const { entryModules, name } of findInjected(root)) {
    const base = name.replace(/^@[^/]+\//, '');
    let folder = base;
    for (let n = 2; used.has(folder) || existsSync(join(root, 'packages', folder)); n++) folder = `${base}-${n}`;
    used.add(folder);
    const target = join(root, 'packages', folder);
    const source = join(entryModules, name);

    mkdirSync(dirname(target), { recursive: true });
    renameSync(source, target);
    symlinkSync(relative(dirname(source), target), source);

    // The dependencies pnpm linked beside the package, now inside it (minus the package itself).
    const ownModules = join(target, 'node_modules');
    for (const top of readdirSync(entryModules)) {
      const p = join(entryModules, top);
      if (top.startsWith('@') && !isLink(p) && isDir(p)) {
        for (const sub of readdirSync(p)) {
          if (`${top}/${sub}` === name) continue;
          const q = join(p, sub);
          if (isLink(q)) copyLink(q, join(ownModules, top, sub));
        }
      } else if (isLink(p) && top !== name) {
        copyLink(p, join(ownModules, top));
      }
    }
    rmSync(join(target, 'test'), { recursive: true, force: true });
    moved.push(`${name} -> packages/${folder}`);
  }
  rmSync(join(root, 'test'), { recursive: true, force: true });
  return moved;
}

/** Reads the name of the deployed service, for the log line only. */
function serviceName(out: string): string {
  try {
    return (JSON.parse(readFileSync(join(out, 'package.json'), 'utf8')) as { name?: string }).name ?? out;
  } catch {
    return out;
  }
}

if (import.meta.main) {
  const out = process.argv[2];
  if (!out) {
    process.stderr.write('usage: node deploy/unnest-workspace-packages.ts <pnpm-deploy-output-dir>\n');
    process.exit(2);
  }
  const moved = unnestWorkspacePackages(out);
  process.stdout.write(`${serviceName(out)}: ${moved.length} workspace package(s) moved out of node_modules\n`);
  for (const line of moved) process.stdout.write(`  ${line}\n`);
}
