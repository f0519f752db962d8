import { performance } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from './logger.ts';
import { startPeriodic } from './periodic.ts';

const mib = (bytes: number) => Math.round(bytes / 1_048_576);

type Gc = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/**
 * One full, memory-reducing collection (V8's "last resort" GC, as on memory pressure): the young
 * generation starts again at its minimum and the freed pages go back to the system (V8 releases
 * them a few seconds later). A plain full GC gives back neither. `gc` is taken from a fresh
 * context so the service's own global scope gets no `gc`. A Node that no longer exposes `gc` this
 * way runs the service all the same (the kit's test fails).
 */
function collectLastResort(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('typeof gc === "function" ? gc : undefined') as Gc | undefined;
  gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/**
 * Gives back what start-up grew and no longer needs, once, before the service takes requests, in a
 * service started with `STARTUP_GC=true` (`pnpm start` sets it for every service; scripts/system.ts).
 *
 * Loading ~1,000 modules makes V8 grow the young generation to its maximum (64 MiB on a large
 * machine) and keep it, plus the pages it freed, for the life of the process: 25-45 MiB of each
 * service's idle memory. V8's own memory reducer would give them back at idle, but it judges
 * idleness by allocation rate against GC speed and, on a busy machine, never does.
 *
 * The young generation's minimum matters on the request path: it then regrows only as far as what
 * survives a scavenge needs, and a server's request garbage hardly survives, so from V8's 1 MiB the
 * edge, text and billing scavenged far more often and spent 25-30% more CPU per streamed request
 * (the shared bench, docs/benchmarks.md). They run with `--min-semi-space-size=8`, which this
 * collection respects.
 */
export function collectStartupGarbage(): void {
  if (process.env.STARTUP_GC !== 'true') return;
  collectLastResort();
}

/** When a busy spell's memory is given back: how long and how quiet the service must have been, and how much it grew. */
export interface IdleCollectionLimits {
  /** Checks over which the event loop's utilization is averaged. */
  windowChecks: number;
  /** Average utilization over the window under which the service counts as quiet (0 to 1). */
  quietUtilization: number;
  /** Growth of the resident set (bytes) below which there is nothing worth a pause. */
  minGrowthBytes: number;
}

/**
 * Checks every 5 s: two minutes, averaged, because an idle service's own timers (a sweep, a lease
 * renewal) make a check now and then busier than the rest (billing at idle: 0.7-3.1 % per 5 s,
 * 1.1 % on average).
 */
const IDLE_COLLECTION: IdleCollectionLimits = { windowChecks: 24, quietUtilization: 0.03, minGrowthBytes: 16 * 1024 * 1024 };

/**
 * Decides, check by check, when to collect: when the event loop's utilization, averaged over the
 * last `windowChecks` checks, is under `quietUtilization`, and the resident set is `minGrowthBytes`
 * or more above the lowest it has been since the last collection (or since the first check). The
 * window and the lowest start again after a collection (the lowest from the next check on, as V8
 * gives the pages back a few seconds after it): one collection per busy spell, and none again until
 * the service grows anew, whatever part of its memory no collection can give back.
 */
export class IdleCollection {
  readonly #limits: IdleCollectionLimits;
  #window: number[] = [];
  #lowest: number | undefined;

  constructor(limits: IdleCollectionLimits = IDLE_COLLECTION) {
    this.#limits = limits;
  }

  /** One check: the event loop's utilization since the last one and the resident set now. True: collect now. */
  check(utilization: number, rssBytes: number): boolean {
    this.#lowest = Math.min(this.#lowest ?? rssBytes, rssBytes);
    this.#window.push(utilization);
    if (this.#window.length > this.#limits.windowChecks) this.#window.shift();
    const full = this.#window.length === this.#limits.windowChecks;
    const average = this.#window.reduce((sum, u) => sum + u, 0) / this.#window.length;
    return full && average < this.#limits.quietUtilization && rssBytes - this.#lowest >= this.#limits.minGrowthBytes;
  }

  /** Told after a collection: quiet and growth count again from here. */
  collected(): void {
    this.#lowest = undefined;
    this.#window = [];
  }
}

/**
 * Gives back what a busy spell grew once the service is quiet again, in a service started with
 * `IDLE_GC=true` (`pnpm start` sets it for every service; scripts/system.ts). Its timer does not
 * keep the process alive.
 *
 * Under load V8 grows the heap well past what stays alive (the edge: 218 MiB of heap for 34 MiB
 * live after the shared bench) and keeps it when the load ends: it collects again only when
 * something allocates, and its memory reducer, which would give the pages back at idle, judges
 * idleness by allocation rate and on a busy machine never runs (above). So a service stayed at its
 * peak: the edge, text and billing at 150-230 MiB resident for good after one burst, against
 * 90-110 MiB before it (docs/benchmarks.md, "Memory after load").
 *
 * Every `intervalMs` it reads the event loop's utilization and the resident set; when the loop was
 * under 3 % busy on average over the last 24 checks (two minutes at the default 5 s) and the
 * resident set is 16 MiB or more above its lowest since the last collection, it runs the
 * memory-reducing collection once (16, not more: V8's own collections took the edge back from 330
 * MiB to 122 after a load, 20 MiB above its start, and a full collection further, to 109). The
 * pause (93-230 ms for the edge, text and billing after the shared bench's loads) falls where the
 * service had nothing to do. Two minutes, because the collection also costs the next burst its warm
 * start: with it after each quiet spell of 25 s, the chat loads in between stayed at the CPU per
 * request of the first, where without it each ran cheaper than the one before (about 25 % cheaper
 * by the third; docs/benchmarks.md, "Memory after load"). Traffic with short pauses never pays it;
 * a service left quiet for minutes gives back what it no longer needs. It shrinks the young
 * generation to its minimum, so on the request path it needs the same floor as start-up's
 * (`--min-semi-space-size`).
 */
export function collectGarbageWhenIdle(logger: Pick<Logger, 'info' | 'warn'>, intervalMs = 5_000): void {
  if (process.env.IDLE_GC !== 'true') return;
  const decide = new IdleCollection();
  let last = performance.eventLoopUtilization();
  startPeriodic({ name: 'idle memory collection', intervalMs, logger, runAtStart: false }, async () => {
    const now = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(now, last);
    last = now;
    const rss = process.memoryUsage.rss();
    if (!decide.check(utilization, rss)) return;
    const heap = getHeapStatistics().total_heap_size;
    const started = performance.now();
    collectLastResort();
    decide.collected();
    logger.info(
      { rssMiB: mib(rss), heapBeforeMiB: mib(heap), heapAfterMiB: mib(getHeapStatistics().total_heap_size), pauseMs: Math.round(performance.now() - started) },
      'quiet after a busy spell: gave back its memory',
    );
  });
}
