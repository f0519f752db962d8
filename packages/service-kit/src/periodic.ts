import type { Logger } from './logger.ts';

export interface PeriodicOptions {
  /** Names the work in the log line of a failed round (`<name> failed`). */
  name: string;
  /** The pause between the end of one round and the start of the next. */
  intervalMs: number;
  logger: Pick<Logger, 'warn'>;
  /** The first round at once (the default), or only after a first `intervalMs`. */
  runAtStart?: boolean;
}

/**
 * The one loop of periodic background work (sweeps, purges, syncs, worker rounds): runs `round`,
 * then again `intervalMs` after each round ends, so rounds never overlap however slow one is. A
 * failed round is logged and the schedule goes on. The timer does not keep the process alive.
 * Returns the stop function: no round starts after it, and it waits for the round in progress.
 */
export function startPeriodic(opts: PeriodicOptions, round: () => Promise<unknown>): () => Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();
  let stopped = false;
  const schedule = () => {
    timer = setTimeout(() => (current = run()), opts.intervalMs);
    timer.unref();
  };
  const run = async (): Promise<void> => {
    try {
      await round();
    } catch (err) {
      opts.logger.warn({ err }, `${opts.name} failed`);
    }
    if (!stopped) schedule();
  };
  if (opts.runAtStart === false) schedule();
  else current = run();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await current;
  };
}
