import { isPositiveInt64 } from '@gw/contracts';
import { GatewayError } from '@gw/errors';
import type { EntityManager } from '@mikro-orm/postgresql';
import { requireUuid } from './inputs.ts';

/**
 * The ledger as an account owner reads it. The ledger itself records every request twice: a hold
 * of the worst case before the provider call and a settlement that returns the unused part. Shown
 * raw, a 3-credit request would read "-60, +57"; here a settled request is one `charge` of what it
 * cost (at the settlement, with the balance the wallet had then), a released hold (nothing
 * charged) is left out, and a hold still open shows as `hold`. Top-ups, refunds and adjustments
 * are shown as they are.
 */

export interface LedgerRow {
  id: string;
  kind: string;
  amount: string;
  balance_after: string;
  created_at: Date;
  key_id: string | null;
  model: string | null;
  reference: string;
}

export interface LedgerPage {
  items: LedgerRow[];
  nextCursor: string;
}

export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 200;

export async function listLedger(em: EntityManager, accountId: string, cursor: string, limit: number): Promise<LedgerPage> {
  requireUuid(accountId, 'account');
  if (cursor !== '' && !isPositiveInt64(cursor)) throw new GatewayError('invalid_request', 'cursor is not a ledger position.');
  const size = limit === 0 ? DEFAULT_PAGE : limit;
  if (size < 1 || size > MAX_PAGE) throw new GatewayError('invalid_request', `limit is 1 to ${MAX_PAGE}.`);
  // One row more than the page tells whether an older page exists. References are
  // `<kind>:<request id>` for request money (request ids may contain ':', so the prefix is cut by length).
  const rows = await em.execute<LedgerRow[]>(
    `select e.id::text as id,
            case e.kind when 'settle' then 'charge' else e.kind end as kind,
            (case e.kind when 'settle' then -h.charged else e.amount end)::text as amount,
            e.balance_after::text as balance_after, e.created_at, e.key_id, h.model,
            case when e.kind in ('hold', 'settle', 'refund') then h.request_id
                 when e.kind = 'top_up' then substr(e.reference, length('top_up:') + 1)
                 else e.reference end as reference
       from ledger_entry e
       left join hold h on e.kind in ('hold', 'settle', 'refund')
            and h.request_id = substr(e.reference, length(split_part(e.reference, ':', 1)) + 2)
      where e.account_id = ? and (?::bigint is null or e.id < ?::bigint)
        and e.kind <> 'release'
        and (e.kind <> 'hold' or h.status = 'open')
        and (e.kind <> 'settle' or h.charged > 0)
      order by e.id desc
      limit ?`,
    [accountId, cursor || null, cursor || null, size + 1],
  );
  const more = rows.length > size;
  const items = more ? rows.slice(0, size) : rows;
  return { items, nextCursor: more ? items[items.length - 1]!.id : '' };
}
