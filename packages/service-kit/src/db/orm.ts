import { createHash } from 'node:crypto';
import type { MigrationObject } from '@mikro-orm/core';
import type { EntityClass, MikroORM } from '@mikro-orm/postgresql';
import { QuerySpanLogger } from './query-spans.ts';

/** A service's migration, in the order it must run. */
export type NamedMigration = MigrationObject;

/**
 * A repeatable migration: SQL that can run again and again (`create or replace function ...`),
 * applied after the versioned migrations whenever its text changed since it was last applied.
 */
export interface RepeatableMigration {
  name: string;
  sql: string;
}

export interface OrmOptions {
  databaseUrl: string;
  /** The service's own schema; every unqualified table name resolves to it. */
  schema: string;
  entities: EntityClass<object>[];
  migrations: NamedMigration[];
  /** Applied in this order after `migrations`, each again whenever its checksum changes. */
  repeatable?: RepeatableMigration[];
  poolMax?: number;
}

const repeatables = new WeakMap<MikroORM, RepeatableMigration[]>();

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * MikroORM on the service's own schema. Each connection's search_path is that schema only, so a
 * service cannot read another's tables by accident, and the schema generator ignores every other
 * schema (schema diffs must never touch a neighbour). The outbox and processed-event tables of
 * the bus live in every service schema and come first in its migrations.
 */
export async function createOrm(opts: OrmOptions): Promise<MikroORM> {
  if (!SCHEMA_NAME.test(opts.schema)) throw new Error(`invalid schema name ${opts.schema}`);
  // Loaded here, not with the kit: a process without a database (the edge, text) never loads the
  // ORM, its SQL builder or the driver (about 10 MiB of heap and more resident memory).
  const [{ MikroORM }, { Migrator }, { kitMigrations }, { kitEntities }] = await Promise.all([
    import('@mikro-orm/postgresql'),
    import('@mikro-orm/migrations'),
    import('./kit-migrations.ts'),
    import('../bus/outbox-entities.ts'),
  ]);
  const orm = await MikroORM.init({
    clientUrl: opts.databaseUrl,
    // Every connection starts with the service schema as its only search path (libpq `options`).
    driverOptions: { options: `-c search_path=${opts.schema}` },
    schema: opts.schema,
    entities: [...kitEntities, ...opts.entities],
    extensions: [Migrator],
    migrations: {
      migrationsList: [...kitMigrations, ...opts.migrations],
      schema: opts.schema,
      tableName: 'mikro_orm_migrations',
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      // The runner logs what it applied through the service logger.
      silent: true,
    },
    schemaGenerator: { ignoreSchema: ['public'] },
    pool: { min: 0, max: opts.poolMax ?? 10 },
    // Statements become spans (no text, no parameters); nothing is printed.
    loggerFactory: () => new QuerySpanLogger(opts.schema),
    debug: false,
    allowGlobalContext: false,
  });
  repeatables.set(orm, opts.repeatable ?? []);
  return orm;
}

/**
 * Creates the schema when missing and applies pending migrations, then the repeatable ones whose
 * SQL changed (their SHA-256 is kept in `repeatable_migrations`); returns the names applied
 * (repeatable ones as `repeatable:<name>`). Replicas starting together take turns: a
 * transaction-scoped advisory lock on the schema's name is held (on its own connection) while one
 * of them migrates, and the others then find nothing left to apply. The repeatable ones run in
 * that lock's transaction, so they commit together or not at all.
 */
export async function runMigrations(orm: MikroORM): Promise<string[]> {
  const schema = orm.config.get('schema');
  return orm.em.fork().transactional(async (tx) => {
    await tx.execute('select pg_advisory_xact_lock(hashtext(?))', [`migrate:${schema}`]);
    await orm.em.getConnection().execute(`create schema if not exists "${schema}"`);
    const applied = (await orm.migrator.up()).map((m) => m.name);
    await tx.execute(`create table if not exists "repeatable_migrations" (
      "name" text primary key, "checksum" text not null, "applied_at" timestamptz not null default now())`);
    const done = new Map(
      (await tx.execute<{ name: string; checksum: string }[]>('select "name", "checksum" from "repeatable_migrations"')).map((r) => [r.name, r.checksum]),
    );
    for (const r of repeatables.get(orm) ?? []) {
      const checksum = createHash('sha256').update(r.sql).digest('hex');
      if (done.get(r.name) === checksum) continue;
      await tx.execute(r.sql);
      await tx.execute(
        `insert into "repeatable_migrations" ("name", "checksum") values (?, ?)
         on conflict ("name") do update set "checksum" = excluded."checksum", "applied_at" = now()`,
        [r.name, checksum],
      );
      applied.push(`repeatable:${r.name}`);
    }
    return applied;
  });
}
