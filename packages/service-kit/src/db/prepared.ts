import type { MikroORM } from '@mikro-orm/postgresql';
import { nativePool } from './native-pool.ts';
import { recordStatementSpan } from './query-spans.ts';

/** A statement Postgres parses and plans once per connection, then runs by name. */
export interface PreparedStatement {
  /** Unique per statement text within the service. */
  name: string;
  /** With `$1`… parameters. */
  text: string;
}

/**
 * Runs a prepared statement on the ORM's own connection pool (its own schema's search path),
 * outside any ORM transaction, as one autocommitted statement, traced like every other
 * statement. For the hottest path only, where building the statement through the ORM (it
 * inlines every parameter into the SQL text) costs more than running it: values travel as bind
 * parameters, and the plan is reused.
 */
export async function runPrepared<R>(orm: MikroORM, statement: PreparedStatement, values: unknown[]): Promise<R[]> {
  const pool = await nativePool(orm);
  const started = Date.now();
  let failed = false;
  try {
    return (await pool.query<R>({ name: statement.name, text: statement.text, values })).rows;
  } catch (err) {
    failed = true;
    throw err;
  } finally {
    recordStatementSpan(orm.config.get('schema') as string, statement.text, started, Date.now(), failed);
  }
}
