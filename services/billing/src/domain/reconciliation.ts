import { GatewayError } from '@gw/errors';
import type { EntityManager } from '@mikro-orm/postgresql';

export async function listReconciliations(em: EntityManager) {
  return em.execute<{ key_id: string; request_id: string; marked_at: Date }[]>(
    'select key_id, request_id, marked_at from reconciliation where resolved_at is null order by marked_at',
  );
}

/**
 * Resolves a key's open reconciliation items and records the resolution in the ledger: an
 * `adjustment` entry charging what the operator determined (possibly 0), referenced by the
 * items it closes, so the ledger explains the unblocking even when no credits move.
 */
export async function resolveReconciliation(
  em: EntityManager,
  keyId: string,
  chargeCredits: bigint,
  note: string,
): Promise<{ resolved: number; balanceAfter: bigint }> {
  if (chargeCredits < 0n) throw new GatewayError('invalid_request', 'charge_credits cannot be negative.');
  return em.transactional(async (tx) => {
    const key = await tx.execute<{ account_id: string }[]>('select account_id from api_key where id = ?', [keyId]);
    const accountId = key[0]?.account_id;
    if (!accountId) throw new GatewayError('not_found', 'No such API key.');
    const wallet = await tx.execute<{ balance: string }[]>('select balance from wallet where account_id = ? for update', [accountId]);
    const items = await tx.execute<{ id: string }[]>(
      `update reconciliation set resolved_at = now(), resolution = ? where key_id = ? and resolved_at is null returning id::text`,
      [note || 'resolved', keyId],
    );
    if (items.length === 0) throw new GatewayError('not_found', 'This key has no open reconciliation.');
    const balance = BigInt(wallet[0]!.balance);
    const charge = chargeCredits > balance ? balance : chargeCredits;
    const after = balance - charge;
    await tx.execute('update wallet set balance = ?, updated_at = now() where account_id = ?', [after, accountId]);
    await tx.execute(
      `insert into ledger_entry (account_id, kind, amount, balance_after, reference, key_id)
       values (?, 'adjustment', ?, ?, ?, ?)`,
      [accountId, -charge, after, `reconcile:${keyId}:${items.map((i) => i.id).join(',')}`, keyId],
    );
    return { resolved: items.length, balanceAfter: after };
  });
}
