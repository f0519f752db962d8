import { startPeriodic, type Logger } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { deliverWebhooks, queueAlertEvents, type SenderOptions } from './domain/alerts.ts';

/**
 * The alert sender: every `intervalMs`, the crossings the ledger trigger recorded go to the outbox
 * (NATS, once each) and the due webhook deliveries are attempted. Rounds never overlap; several
 * replicas share the work (rows are claimed with `skip locked`). Returns the stop function.
 */
export function startAlertSender(
  orm: MikroORM,
  opts: SenderOptions & { intervalMs: number },
  logger: Pick<Logger, 'warn'>,
  now: () => Date = () => new Date(),
): () => Promise<void> {
  return startPeriodic({ name: 'alert sender', intervalMs: opts.intervalMs, logger }, async () => {
    while ((await queueAlertEvents(orm)) > 0);
    await deliverWebhooks(orm, opts, now);
  });
}
