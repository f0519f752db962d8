import { rename, writeFile } from 'node:fs/promises';
import { buildSimulator } from './app.ts';

/**
 * Runs the provider simulator as a process. Env: SIM_HOST (default 127.0.0.1), SIM_PORT (default 8090,
 * 0 = any free port), READY_FILE (receives the base URL once listening), SIM_VIDEO_DELAY_MS, LOG_LEVEL.
 */
const host = process.env.SIM_HOST ?? '127.0.0.1';
const port = Number(process.env.SIM_PORT ?? 8090);
const videoDelay = process.env.SIM_VIDEO_DELAY_MS;

const app = buildSimulator({
  logger: { level: process.env.LOG_LEVEL ?? 'info' },
  videoDelayMs: videoDelay === undefined ? undefined : Number(videoDelay),
});

let closing = false;
async function shutdown(signal: string): Promise<void> {
  if (closing) return;
  closing = true;
  app.log.info({ signal }, 'shutting down');
  try {
    await app.close();
    process.exit(0);
  } catch (err) {
    app.log.error({ err }, 'shutdown failed');
    process.exit(1);
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

try {
  await app.listen({ host, port });
  const address = app.server.address();
  const boundPort = typeof address === 'object' && address !== null ? address.port : port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${boundPort}`;
  const readyFile = process.env.READY_FILE;
  if (readyFile) {
    // Write then rename, so a reader polling the file never sees a partial URL.
    await writeFile(`${readyFile}.tmp`, url);
    await rename(`${readyFile}.tmp`, readyFile);
  }
  app.log.info({ url }, 'provider simulator listening');
} catch (err) {
  app.log.error({ err }, 'provider simulator failed to start');
  process.exit(1);
}
