import { randomBytes, randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { billingV1 } from '@gw/contracts';
import { createOrm, runMigrations, type RepeatableMigration } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { billingEntities } from '../src/db/entities.ts';
import { billingFunctions } from '../src/db/functions/index.ts';
import { billingMigrations } from '../src/db/migrations/index.ts';
import { RequestMoney } from '../src/domain/requests.ts';
import { account, expectAuditClean } from './support.ts';

const OLD_CHAIN = [
  'Migration002Money',
  'Migration003KeyWindows',
  'Migration004RateInApplyOps',
  'Migration005ReplayBeforeRate',
  'Migration006ApplyBatch',
  'Migration007RateLongestWait',
  'Migration008KeyStateInAuthorize',
  'Migration009FewerStatementsPerHold',
];
const FUNCTIONS = billingFunctions.map((f) => f.name);
const opened: MikroORM[] = [];
afterAll(() => Promise.all(opened.map((o) => o.close())));

/** Billing's ORM on `schema` (a new one when not given) with these repeatable migrations. */
async function orm(schema = `billing_m${randomBytes(4).toString('hex')}`, repeatable: RepeatableMigration[] = billingFunctions): Promise<MikroORM> {
  const o = await createOrm({ databaseUrl: inject('databaseUrl'), schema, entities: billingEntities, migrations: billingMigrations, repeatable });
  opened.push(o);
  return o;
}

const schemaOf = (o: MikroORM) => o.config.get('schema')!;

async function functionsIn(o: MikroORM): Promise<string[]> {
  const rows = await o.em
    .fork()
    .execute<{ proname: string }[]>(`select p.proname from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = ? order by 1`, [schemaOf(o)]);
  return rows.map((r) => r.proname);
}

/** One text request held and settled through `apply_ops`: the functions work on this schema. */
async function billedRequest(o: MikroORM): Promise<bigint> {
  const { accountId, keyId } = await account(o, 1_000n);
  const money = new RequestMoney(o);
  const requestId = randomUUID();
  await money.authorize(
    create(billingV1.AuthorizeRequestSchema, {
      requestId,
      accountId,
      keyId,
      endpoint: 'chat/completions',
      model: 'm',
      unit: billingV1.BillingUnit.MILLION_TOKENS,
      pricePerUnit: 1_000_000n,
      worstUnits: 100n,
      text: true,
    }),
  );
  const settled = await money.settle(
    create(billingV1.SettleRequestSchema, { requestId, accountId, units: 7n }),
  );
  await expectAuditClean(o);
  return settled.creditCharged;
}

/** A repeatable migration whose function answers `n`. */
function probe(n: number): RepeatableMigration {
  return { name: 'probe', sql: `create or replace function "probe"() returns integer language sql immutable as $fn$ select ${n} $fn$` };
}

async function answer(o: MikroORM): Promise<number> {
  return (await o.em.fork().execute<{ v: number }[]>('select "probe"() as v'))[0]!.v;
}

describe("billing's migrations: a baseline, then its SQL functions as repeatable migrations", () => {
  it('a fresh database gets the versioned migrations, then every function; a second run applies nothing', async () => {
    const o = await orm();
    const applied = await runMigrations(o);
    expect(applied).toEqual(expect.arrayContaining(['Migration001Initial', 'Migration002Baseline']));
    // The functions come after every versioned migration, in their order.
    const versionedEnd = Math.max(...billingMigrations.map((m) => applied.indexOf(m.name)));
    expect(applied.slice(versionedEnd + 1)).toEqual(FUNCTIONS.map((n) => `repeatable:${n}`));
    expect(await functionsIn(o)).toEqual(expect.arrayContaining(FUNCTIONS));
    expect(await billedRequest(o)).toBe(7n);
    expect(await runMigrations(o)).toEqual([]);
  });

  it('a function whose file changed is applied again, and only that one', async () => {
    const schema = `billing_m${randomBytes(4).toString('hex')}`;
    const first = await orm(schema, [...billingFunctions, probe(1)]);
    await runMigrations(first);
    expect(await answer(first)).toBe(1);

    const same = await orm(schema, [...billingFunctions, probe(1)]);
    expect(await runMigrations(same)).toEqual([]);

    const changed = await orm(schema, [...billingFunctions, probe(2)]);
    expect(await runMigrations(changed)).toEqual(['repeatable:probe']);
    expect(await answer(changed)).toBe(2);
    const rows = await changed.em.fork().execute<{ name: string }[]>(`select "name" from "repeatable_migrations" order by "name"`);
    expect(rows.map((r) => r.name)).toEqual([...FUNCTIONS, 'probe'].sort());
  });

  it('replicas migrating at once take turns: each function is applied once', async () => {
    const schema = `billing_m${randomBytes(4).toString('hex')}`;
    const replicas = await Promise.all([orm(schema), orm(schema), orm(schema)]);
    const runs = await Promise.all(replicas.map((o) => runMigrations(o)));
    const all = runs.flat();
    for (const n of FUNCTIONS) expect(all.filter((a) => a === `repeatable:${n}`)).toHaveLength(1);
    expect(all.filter((a) => a === 'Migration002Baseline')).toHaveLength(1);
  });

  it('a database migrated with the old chain (002-009) takes the baseline as applied and gets the functions', async () => {
    // The old chain built exactly the baseline's schema (compared column by column, index by index
    // and constraint by constraint when the chain was squashed); what it leaves behind that the
    // baseline must recognise is its names in the migrations table, and no repeatable_migrations.
    const o = await orm();
    await runMigrations(o);
    const em = o.em.fork();
    await em.execute(`delete from "mikro_orm_migrations" where "name" = 'Migration002Baseline'`);
    for (const name of OLD_CHAIN) {
      await em.execute(`insert into "mikro_orm_migrations" ("name", "executed_at") values (?, now())`, [name]);
    }
    await em.execute(`drop table "repeatable_migrations"`);
    await em.execute(`drop function "credits_for"(text, numeric, numeric)`);

    const upgraded = await orm(schemaOf(o));
    expect(await runMigrations(upgraded)).toEqual(['Migration002Baseline', ...FUNCTIONS.map((n) => `repeatable:${n}`)]);
    expect(await functionsIn(upgraded)).toEqual(expect.arrayContaining(FUNCTIONS));
    expect(await billedRequest(upgraded)).toBe(7n);
  });

  it('a database whose old chain stopped after 002 gets what 003 added (the hold\'s windowed column)', async () => {
    const o = await orm();
    await runMigrations(o);
    const em = o.em.fork();
    await em.execute(`delete from "mikro_orm_migrations" where "name" = 'Migration002Baseline'`);
    await em.execute(`insert into "mikro_orm_migrations" ("name", "executed_at") values ('Migration002Money', now())`);
    await em.execute(`drop index "hold_key_idx"`);
    await em.execute(`alter table "hold" drop column "windowed"`);

    const upgraded = await orm(schemaOf(o));
    expect(await runMigrations(upgraded)).toEqual(['Migration002Baseline']);
    const cols = await upgraded.em
      .fork()
      .execute<{ n: string }[]>(`select count(*)::text as n from information_schema.columns where table_schema = ? and table_name = 'hold' and column_name = 'windowed'`, [schemaOf(o)]);
    expect(cols[0]!.n).toBe('1');
    expect(await billedRequest(upgraded)).toBe(7n);
  });
});
