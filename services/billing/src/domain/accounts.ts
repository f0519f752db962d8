import { randomUUID } from 'node:crypto';
import { GatewayError } from '@gw/errors';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Account, Wallet } from '../db/entities.ts';
import { isOutOfRange, isUniqueViolation } from '../db/pg-errors.ts';
import { checkedName, requireUuid } from './inputs.ts';

export async function createAccount(em: EntityManager, rawName: string): Promise<string> {
  const name = checkedName(rawName, 'account', true);
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
  requireUuid(accountId, 'account');
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
  requireUuid(accountId, 'account');
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
    if (isOutOfRange(err)) throw new GatewayError('invalid_request', 'The top-up would take the balance past the largest amount a wallet holds.');
    if (!isUniqueViolation(err)) throw err;
  }
  // Not applied: the reference was used. A repeat of the same top-up moves nothing, as it should;
  // the same reference for another account or amount is an operator's mistake, said out loud.
  const [first] = await em.execute<{ account_id: string; amount: string }[]>('select account_id, amount::text from ledger_entry where reference = ?', [ref]);
  if (first && (first.account_id !== accountId || BigInt(first.amount) !== credits)) {
    throw new GatewayError('invalid_request', `The reference ${JSON.stringify(reference)} was used for another top-up (${first.amount} credits to account ${first.account_id}).`);
  }
  return { balance: await getBalance(em, accountId), applied: false };
}
