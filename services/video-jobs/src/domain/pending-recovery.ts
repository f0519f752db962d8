import { GatewayError } from '@gw/errors';
import { deleteExpiredClaims, hasClaim, type Logger } from '@gw/service-kit';
import { LockMode, type MikroORM } from '@mikro-orm/postgresql';
import type { Clock } from '../clock.ts';
import { VideoJob } from '../db/video-job.entity.ts';
import { resolveCharge, type BillingPort } from './billing-port.ts';
import { markAbandoned, markQueued } from './pending-transitions.ts';

export interface RecoveryDeps {
  orm: MikroORM;
  billing: BillingPort;
  clock: Clock;
  logger: Logger;
  /** Only jobs `pending` for longer than this are touched: a live creation is far quicker. */
  graceMs: number;
}

const BATCH = 50;

/**
 * One round of the recovery sweep: every job a crash (or an unanswered billing call) left `pending`
 * is finished — its settled charge stands, so it becomes `queued` and runs — or cancelled — an
 * unsettled hold is released, the job `abandoned` and its Idempotency-Key freed. A charged job is
 * finished only when its client can find it: its request's answer was an error (or never came),
 * so only an Idempotency-Key leads back to it (a retry answers 409 with its id). Without one it
 * could never be polled or downloaded, so its charge is refunded and it is cancelled. Each job is
 * handled in its own transaction under `for update skip locked`, so replicas share the work and
 * never handle one job twice at once. Billing being unreachable ends the round; the next retries.
 * Also deletes expired Idempotency-Key claims. Returns the number of jobs resolved.
 */
export async function recoverPendingJobs(deps: RecoveryDeps): Promise<number> {
  const cutoff = new Date(deps.clock().getTime() - deps.graceMs);
  const candidates = await deps.orm.em
    .fork()
    .find(VideoJob, { status: 'pending', createdAt: { $lt: cutoff } }, { fields: ['id'], orderBy: { createdAt: 'asc' }, limit: BATCH });
  let resolved = 0;
  for (const { id } of candidates) {
    try {
      if (await resolveOne(deps, id)) resolved++;
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err; // billing unreachable: retry the whole round later
      deps.logger.error({ jobId: id, err }, 'a pending video job could not be resolved');
    }
  }
  await deleteExpiredClaims(deps.orm.em.fork(), deps.clock());
  return resolved;
}

async function resolveOne(deps: RecoveryDeps, id: string): Promise<boolean> {
  return deps.orm.em.fork().transactional(async (tx) => {
    const job = await tx.findOne(VideoJob, { id, status: 'pending' }, { lockMode: LockMode.PESSIMISTIC_PARTIAL_WRITE });
    if (!job) return false; // finished meanwhile, or another replica holds it
    const charge = await resolveCharge(deps.billing, job);
    const now = deps.clock();
    if (charge && (await hasClaim(tx, id))) {
      await markQueued(tx, id, charge.creditCharged, now);
      deps.logger.info({ jobId: id, credits: charge.creditCharged.toString() }, 'finished an interrupted video job creation');
    } else if (charge) {
      // Refunded before it is cancelled: a crash in between leaves it pending, and the next round
      // refunds again, which billing applies once.
      await deps.billing.refund({ requestId: id, accountId: job.accountId });
      await markAbandoned(tx, id, now);
      deps.logger.info({ jobId: id, credits: charge.creditCharged.toString() }, 'refunded and cancelled an interrupted video job creation its client cannot find');
    } else {
      await markAbandoned(tx, id, now);
      deps.logger.info({ jobId: id }, 'cancelled an interrupted video job creation without a charge');
    }
    return true;
  });
}
