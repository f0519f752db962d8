import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Gives back what start-up grew and no longer needs, once, before the service takes requests, in a
 * service started with `STARTUP_GC=true` (`pnpm start` sets it for every service; scripts/system.ts).
 *
 * Loading ~1,000 modules makes V8 grow the young generation to its maximum (64 MiB on a large
 * machine) and keep it, plus the pages it freed, for the life of the process: 25-45 MiB of each
 * service's idle memory. V8's own memory reducer would give them back at idle, but it judges
 * idleness by allocation rate against GC speed and, on a busy machine, never does.
 *
 * This is one full, memory-reducing collection (V8's "last resort" GC, as on memory pressure): the
 * young generation starts again at its minimum and the freed pages go back to the system (V8
 * releases them a few seconds later). The minimum matters on the request path: the young
 * generation then regrows only as far as what survives a scavenge needs, and a server's request
 * garbage hardly survives, so from V8's 1 MiB the edge, text and billing scavenged far more often
 * and spent 25-30% more CPU per streamed request (the shared bench, docs/benchmarks.md). They run
 * with `--min-semi-space-size=8`, which this collection respects. `gc` is taken from a fresh
 * context so the service's own global scope gets no `gc`.
 */
export function collectStartupGarbage(): void {
  if (process.env.STARTUP_GC !== 'true') return;
  setFlagsFromString('--expose-gc');
  // A Node that no longer exposes `gc` this way starts the service all the same (the kit's test fails).
  const gc = runInNewContext('typeof gc === "function" ? gc : undefined') as ((options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void) | undefined;
  gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
