import { startPeriodic } from '@gw/service-kit';
import type { Logger } from 'pino';

/**
 * Deletes what can no longer be used (ended sessions, finished throttle windows, spent or expired
 * set-password tokens) every `intervalMs`. Lookups already ignore such rows; this only keeps the
 * tables small. Returns the function that stops it (and waits for a round in progress).
 */
export function startHousekeeping(tasks: Record<string, () => Promise<number>>, intervalMs: number, logger: Logger): () => Promise<void> {
  return startPeriodic({ name: 'housekeeping', intervalMs, logger, runAtStart: false }, async () => {
    for (const [name, task] of Object.entries(tasks)) {
      try {
        const removed = await task();
        if (removed > 0) logger.debug({ task: name, removed }, 'housekeeping');
      } catch (err) {
        logger.warn({ err, task: name }, 'housekeeping failed');
      }
    }
  });
}
