import type { Logger } from 'pino';

export type ShutdownStep = () => Promise<unknown> | unknown;

/**
 * Graceful shutdown on SIGTERM/SIGINT: runs the steps in order (stop accepting work, drain
 * in-flight calls, close NATS and the database, flush telemetry), each failure logged and the
 * next still run, then exits 0. The whole sequence is bounded by `timeoutMs`; a second signal, or
 * the bound, exits at once with 1.
 */
export function onShutdown(logger: Logger, timeoutMs: number, steps: ShutdownStep[]): void {
  let started = false;
  const handler = (signal: NodeJS.Signals) => {
    if (started) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    started = true;
    logger.info({ signal }, 'shutting down');
    const bound = setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown took too long: exiting');
      process.exit(1);
    }, timeoutMs);
    bound.unref();
    void (async () => {
      for (const step of steps) {
        try {
          await step();
        } catch (err) {
          logger.error({ err }, 'shutdown step failed');
        }
      }
      logger.info('stopped');
      process.exit(0);
    })();
  };
  process.once('SIGTERM', handler);
  process.once('SIGINT', handler);
}
