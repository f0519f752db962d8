import type { Logger } from '@gw/service-kit';

/**
 * Runs `round` now and then `intervalMs` after each round ends (rounds never overlap). A failed
 * round is logged and the schedule goes on. Returns the stop function, which waits for the round
 * in progress.
 */
export function startPeriodic(name: string, round: () => Promise<unknown>, intervalMs: number, logger: Logger): () => Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();
  let stopped = false;
  const run = async (): Promise<void> => {
    try {
      await round();
    } catch (err) {
      logger.warn({ err }, `${name} failed`);
    }
    if (!stopped) timer = setTimeout(() => (current = run()), intervalMs);
  };
  current = run();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await current;
  };
}
