import type { MikroORM } from '@mikro-orm/postgresql';
import { recordStatementSpan } from './query-spans.ts';

/** A statement Postgres parses and plans once per connection, then runs by name. */
export interface PreparedStatement {
  /** Unique per statement text within the service. */
  name: string;
  /** With `$1`… parameters. */
  text: string;
}

/** What is used of `pg`'s pool: the one MikroORM holds. */
interface PgPool {
  query<R>(query: { name: string; text: string; values: unknown[] }): Promise<{ rows: R[] }>;
}

const pools = new WeakMap<MikroORM, Promise<PgPool>>();

/**
 * Runs a prepared statement on the ORM's own connection pool (its own schema's search path),
 * outside any ORM transaction, as one autocommitted statement, traced like every other
 * statement. For the hottest path only, where building the statement through the ORM (it
 * inlines every parameter into the SQL text) costs more than running it: values travel as bind
 * parameters, and the plan is reused.
 */
export async function runPrepared<R>(orm: MikroORM, statement: PreparedStatement, values: unknown[]): Promise<R[]> {
  let pool = pools.get(orm);
  if (!pool) {
    pool = (orm.em.getConnection() as unknown as { getNativeClient(): Promise<PgPool> }).getNativeClient();
    pools.set(orm, pool);
  }
  const started = Date.now();
  let failed = false;
  try {
    return (await (await pool).query<R>({ name: statement.name, text: statement.text, values })).rows;
  } catch (err) {
    failed = true;
    throw err;
  } finally {
    recordStatementSpan(orm.config.get('schema') as string, statement.text, started, Date.now(), failed);
  }
}
