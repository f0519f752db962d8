import type { EntityManager } from '@mikro-orm/postgresql';

export interface AuditProblem {
  accountId: string;
  balance: bigint;
  ledgerSum: bigint;
  reason: string;
}

/**
 * The ledger invariants, for every account: the balance equals the sum of its entries, no entry
 * left a negative balance, every open hold has its hold entry, and every settled or released
 * hold has exactly one closing entry.
 */
export async function auditLedger(em: EntityManager): Promise<{ accounts: number; problems: AuditProblem[] }> {
  const rows = await em.execute<{ account_id: string; balance: string; ledger_sum: string; reason: string | null }[]>(
    `with sums as (
       select w.account_id, w.balance, coalesce(sum(l.amount), 0) as ledger_sum,
              bool_or(l.balance_after < 0) as went_negative
         from wallet w left join ledger_entry l on l.account_id = w.account_id
        group by w.account_id, w.balance)
     , holds as (
       select h.account_id,
              bool_or(not exists (select 1 from ledger_entry e where e.reference = 'hold:' || h.request_id)) as missing_hold,
              bool_or(h.status <> 'open' and (select count(*) from ledger_entry e
                 where e.reference in ('settle:' || h.request_id, 'release:' || h.request_id)) <> 1) as bad_close
         from hold h group by h.account_id)
     select s.account_id, s.balance::text, s.ledger_sum::text,
            case when s.balance <> s.ledger_sum then 'balance differs from the sum of ledger entries'
                 when s.balance < 0 or s.went_negative then 'negative balance'
                 when h.missing_hold then 'a hold has no ledger entry'
                 when h.bad_close then 'a closed hold does not have exactly one closing entry'
            end as reason
       from sums s left join holds h on h.account_id = s.account_id`,
  );
  return {
    accounts: rows.length,
    problems: rows
      .filter((r) => r.reason !== null)
      .map((r) => ({ accountId: r.account_id, balance: BigInt(r.balance), ledgerSum: BigInt(r.ledger_sum), reason: r.reason! })),
  };
}
