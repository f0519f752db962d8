// `node --import scripts/ts-cache-hook.mjs services/<svc>/src/main.ts`: the service's TypeScript
// modules come from the stripped-source cache (scripts/ts-cache.mjs) instead of Node's stripper.
import { readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';
import { strippedSource } from './ts-cache.mjs';

registerHooks({
  load(url, context, nextLoad) {
    // Only what Node would strip itself: ES modules in .ts files outside node_modules.
    if (context.format !== 'module-typescript' || !url.startsWith('file:') || url.includes('/node_modules/')) return nextLoad(url, context);
    return { format: 'module', source: strippedSource(readFileSync(fileURLToPath(url), 'utf8')), shortCircuit: true };
  },
});
