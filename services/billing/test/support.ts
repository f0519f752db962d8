import { randomBytes } from 'node:crypto';
import { GatewayError } from '@gw/errors';
import { createOrm, runMigrations } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { inject } from 'vitest';
import { billingEntities } from '../src/db/entities.ts';
import { billingFunctions } from '../src/db/functions/index.ts';
import { billingMigrations } from '../src/db/migrations/index.ts';
import { createAccount, topUp } from '../src/domain/accounts.ts';
import { createApiKey } from '../src/domain/api-keys.ts';
import { auditLedger } from '../src/domain/audit.ts';

/** Billing's real schema, migrated, in a schema of its own inside this run's database. */
export async function billingOrm(): Promise<MikroORM> {
  const orm = await createOrm({
    databaseUrl: inject('databaseUrl'),
    schema: `billing_t${randomBytes(4).toString('hex')}`,
    entities: billingEntities,
    migrations: billingMigrations,
    repeatable: billingFunctions,
  });
  await runMigrations(orm);
  return orm;
}

export async function account(orm: MikroORM, credits: bigint): Promise<{ accountId: string; keyId: string }> {
  const em = orm.em.fork();
  const accountId = await createAccount(em, 'test');
  if (credits > 0n) await topUp(em, accountId, credits, `seed-${accountId}`);
  const { keyId } = await createApiKey(em, accountId, 'k', null);
  return { accountId, keyId };
}

export async function expectAuditClean(orm: MikroORM): Promise<void> {
  const { problems, accounts } = await auditLedger(orm.em.fork());
  if (accounts === 0) throw new Error('audit saw no accounts');
  if (problems.length > 0) throw new Error(`ledger audit failed: ${JSON.stringify(problems, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`);
}

/** The domain error a call was refused with; anything else (success included) fails the test. */
export async function refusal(p: Promise<unknown>): Promise<GatewayError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof GatewayError)) throw new Error(`expected a GatewayError, got ${String(err)}`);
  return err;
}
