import { randomUUID } from 'node:crypto';
import { GatewayError } from '@gw/errors';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Account, Wallet } from '../db/entities.ts';
import { isUniqueViolation } from '../db/pg-errors.ts';

export async function createAccount(em: EntityManager, name: string): Promise<string> {
  if (name.trim() === '') throw new GatewayError('invalid_request', 'An account needs a name.');
  const id = randomUUID();
  // The wallet references the account, so the account row must be written first.
  await em.transactional(async (tx) => {
    tx.create(Account, { id, name });
    await tx.flush();
    tx.create(Wallet, { accountId: id, balance: 0n, updatedAt: new Date() });
    await tx.flush();
  });
  return id;
}

export async function getBalance(em: EntityManager, accountId: string): Promise<bigint> {
  const wallet = await em.findOne(Wallet, { accountId }, { disableIdentityMap: true });
  if (!wallet) throw new GatewayError('not_found', 'No such account.');
  return BigInt(wallet.balance);
}

/**
 * Adds credits, exactly once per reference: one statement updates the wallet and appends the
 * ledger entry; the ledger's unique reference turns a replay (even a concurrent one) into a no-op.
 */
export async function topUp(
  em: EntityManager,
  accountId: string,
  credits: bigint,
  reference: string,
): Promise<{ balance: bigint; applied: boolean }> {
  if (credits <= 0n) throw new GatewayError('invalid_request', 'A top-up must add a positive number of credits.');
  if (reference.trim() === '') throw new GatewayError('invalid_request', 'A top-up needs a reference.');
  const ref = `top_up:${reference}`;
  try {
    const rows = await em.execute<{ balance: string }[]>(
      `with w as (
         update wallet set balance = balance + ?, updated_at = now()
         where account_id = ? and not exists (select 1 from ledger_entry where reference = ?)
         returning balance)
       , l as (insert into ledger_entry (account_id, kind, amount, balance_after, reference)
         select ?, 'top_up', ?, balance, ? from w)
       select balance from w`,
      [credits, accountId, ref, accountId, credits, ref],
    );
    const row = rows[0];
    if (row) return { balance: BigInt(row.balance), applied: true };
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
  }
  return { balance: await getBalance(em, accountId), applied: false };
}
