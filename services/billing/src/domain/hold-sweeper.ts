import { create } from '@bufbuild/protobuf';
import { billingV1 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import { startPeriodic, type Logger } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { RequestMoney } from './requests.ts';

/** How long holds live without their owner: the lease, and the age past which any open hold goes. */
export interface HoldLifetimes {
  /** A lease lasts this long after its owner's last renewal (and after a hold's creation). */
  leaseMs: number;
  /** An open hold older than this belongs to no live request, leased or not. */
  maxAgeMs: number;
}

/**
 * Renews the lease of a hold owner until `now + leaseMs`: one row per owner, whatever the number
 * of its holds. Answers the lease's end.
 */
export async function renewLease(em: EntityManager, owner: string, leaseMs: number, now: Date): Promise<Date> {
  if (owner === '' || owner.length > 200) throw new GatewayError('invalid_request', 'A lease owner is 1 to 200 characters.');
  const until = new Date(now.getTime() + leaseMs);
  await em.execute(
    `insert into "hold_owner" ("owner", "lease_until") values (?, ?)
     on conflict ("owner") do update set "lease_until" = greatest("hold_owner"."lease_until", excluded."lease_until")`,
    [owner, until],
  );
  return until;
}

/**
 * Releases the holds no live request will settle: those whose owner's lease lapsed (the gateway or
 * video-jobs process that made them died), and any open hold older than `maxAgeMs` (no owner
 * named, or an owner alive that lost track of it). A new hold counts as leased for `leaseMs` from
 * its creation, so a hold made just before its owner's first renewal is not taken for an orphan.
 * `leases: false` applies the age rule only: the sweeper cannot tell a dead owner from one whose
 * renewals failed while billing or its database was away. Releasing is idempotent (a settle that
 * comes after it is a replay that charges nothing), and each hold goes through `apply_groups`, so the
 * ledger moves exactly as for a release by its owner. Owners with no lease for a day are forgotten.
 */
export async function releaseOrphanHolds(
  em: EntityManager,
  money: RequestMoney,
  lifetimes: HoldLifetimes,
  now: Date,
  logger: Logger,
  leases = true,
): Promise<number> {
  const lapsed = new Date(now.getTime() - lifetimes.leaseMs);
  const stale = await em.execute<{ request_id: string; account_id: string; lease_owner: string | null }[]>(
    `select h."request_id", h."account_id", h."lease_owner" from "hold" h
       left join "hold_owner" o on o."owner" = h."lease_owner"
      where h."status" = 'open'
        and (h."created_at" < ?
             or (?::boolean and h."lease_owner" is not null and h."created_at" < ? and coalesce(o."lease_until" < ?, true)))
      order by h."created_at" limit 500`,
    [new Date(now.getTime() - lifetimes.maxAgeMs), leases, lapsed, now],
  );
  for (const h of stale) {
    await money.release(create(billingV1.ReleaseRequestSchema, { requestId: h.request_id, accountId: h.account_id }));
    logger.warn({ holdId: h.request_id, owner: h.lease_owner }, h.lease_owner ? 'released a hold whose owner stopped renewing its lease' : 'released a stale hold');
  }
  await em.execute(`delete from "hold_owner" where "lease_until" < ?`, [new Date(now.getTime() - 86_400_000)]);
  return stale.length;
}

/**
 * Runs the sweep `intervalMs` after start and after each sweep; returns the stop function. Leases are judged only once the
 * sweeper has run without failing for a whole lease (`leaseMs`): after billing starts, or after its
 * database was away, owners first get a lease's time to renew.
 */
export function startHoldSweeper(
  sweep: (leases: boolean) => Promise<unknown>,
  opts: { intervalMs: number; leaseMs: number; now: () => Date },
  logger: Logger,
): () => Promise<void> {
  let healthySince = opts.now().getTime();
  return startPeriodic({ name: 'hold sweep', intervalMs: opts.intervalMs, logger, runAtStart: false }, async () => {
    try {
      await sweep(opts.now().getTime() - healthySince >= opts.leaseMs);
    } catch (err) {
      healthySince = opts.now().getTime();
      throw err;
    }
  });
}
