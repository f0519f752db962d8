// Plain JavaScript on purpose: loading this file must not start Node's TypeScript stripper.
//
// Node strips the types of a .ts module with a WebAssembly build of SWC (amaro) that it loads on
// the first .ts import and keeps for the life of the process: about 20-30 MiB of resident memory
// per service that only ever served start-up. `pnpm start` (and the end-to-end tests) strip every
// source once, in the parent (`warmTsCache`), into a cache keyed by the source's hash; each
// service then runs with `--import scripts/ts-cache-hook.mjs`, which serves its .ts modules from
// that cache and so never loads the stripper. A source missing from the cache (edited after the
// warm-up) is stripped as Node would, and cached. Stripping keeps every position (types become
// spaces), so stack traces point at the .ts lines as before.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
/** Where stripped sources are kept (git-ignored with node_modules); TS_CACHE_DIR moves it. */
export const TS_CACHE_DIR = process.env.TS_CACHE_DIR ?? join(ROOT, 'node_modules', '.cache', 'ts-strip');
/** The `--import` a service is started with to use the cache. */
export const TS_CACHE_HOOK = join(import.meta.dirname, 'ts-cache-hook.mjs');

/** The cache file of a source: its hash, with Node's version (another Node may strip differently). */
export function cacheFileOf(source, dir = TS_CACHE_DIR) {
  return join(dir, `${createHash('sha256').update(process.version).update(source).digest('hex')}.js`);
}

/** Runs `f` without Node's one-time notice that stripTypeScriptTypes is experimental (the loader uses the same stripper). */
function quietly(f) {
  const emit = process.emitWarning;
  process.emitWarning = (warning, ...rest) => {
    if (!String(warning).includes('stripTypeScriptTypes')) emit.call(process, warning, ...rest);
  };
  try {
    return f();
  } finally {
    process.emitWarning = emit;
  }
}

/** The source with its types stripped, from the cache, or stripped now (and cached). */
export function strippedSource(source, dir = TS_CACHE_DIR) {
  const file = cacheFileOf(source, dir);
  try {
    return readFileSync(file, 'utf8');
  } catch {
    const js = quietly(() => stripTypeScriptTypes(source, { mode: 'strip' }));
    // Written aside and renamed: a process reading the cache never sees half a file.
    const part = `${file}.${process.pid}.part`;
    try {
      mkdirSync(dir, { recursive: true });
      writeFileSync(part, js);
      renameSync(part, file);
    } catch {
      rmSync(part, { force: true });
    }
    return js;
  }
}

function* tsFiles(dir) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
    const path = join(dir, e.name);
    if (e.isDirectory()) yield* tsFiles(path);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') && !e.name.endsWith('.test.ts')) yield path;
  }
}

/**
 * Strips every source the services run (services/* and packages/*, `src` folders) into the cache
 * and drops cached files a day old that no source has any more. Returns how many it stripped now.
 */
export function warmTsCache(dir = TS_CACHE_DIR) {
  const wanted = new Set();
  let stripped = 0;
  for (const group of ['services', 'packages']) {
    for (const pkg of readdirSync(join(ROOT, group))) {
      for (const path of tsFiles(join(ROOT, group, pkg, 'src'))) {
        const source = readFileSync(path, 'utf8');
        const file = cacheFileOf(source, dir);
        wanted.add(file);
        try {
          statSync(file);
        } catch {
          strippedSource(source, dir);
          stripped++;
        }
      }
    }
  }
  const dayAgo = Date.now() - 24 * 60 * 60_000;
  for (const name of readdirSync(dir)) {
    const file = join(dir, name);
    if (!wanted.has(file) && statSync(file).mtimeMs < dayAgo) rmSync(file, { force: true });
  }
  return stripped;
}
