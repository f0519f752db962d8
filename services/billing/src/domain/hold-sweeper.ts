import { create } from '@bufbuild/protobuf';
import { billingV1 } from '@gw/contracts';
import type { Logger } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { RequestMoney } from './requests.ts';

/**
 * Releases holds that outlived any request (the gateway that made them crashed, or its release
 * call failed). A hold older than `maxAgeMs` cannot belong to a live request: the longest
 * request (a text stream) is bounded well below it. Releasing is idempotent, so a late settle
 * of the same hold is a replay and changes nothing.
 */
export async function releaseStaleHolds(em: EntityManager, money: RequestMoney, maxAgeMs: number, now: Date, logger: Logger): Promise<number> {
  const stale = await em.execute<{ request_id: string; account_id: string }[]>(
    `select request_id, account_id from hold where status = 'open' and created_at < ? order by created_at limit 500`,
    [new Date(now.getTime() - maxAgeMs)],
  );
  for (const h of stale) {
    await money.release(create(billingV1.ReleaseRequestSchema, { requestId: h.request_id, accountId: h.account_id }));
    logger.warn({ holdId: h.request_id }, 'released a stale hold');
  }
  return stale.length;
}

/** Runs the sweep every `intervalMs`; returns the stop function. */
export function startHoldSweeper(run: () => Promise<unknown>, intervalMs: number, logger: Logger): () => Promise<void> {
  let current: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    current = run().catch((err: unknown) => logger.warn({ err }, 'hold sweep failed'));
  }, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await current;
  };
}
