import { createOrm } from '@gw/service-kit';
import type { MikroORM } from '@mikro-orm/postgresql';
import { consoleEntities } from './entities.ts';
import { consoleMigrations } from './migrations/index.ts';

export const CONSOLE_SCHEMA = 'console';

/** The console's ORM on its own schema (tests pass a scratch schema name). */
export function consoleOrm(databaseUrl: string, schema = CONSOLE_SCHEMA, poolMax = 5): Promise<MikroORM> {
  return createOrm({ databaseUrl, schema, entities: consoleEntities, migrations: consoleMigrations, poolMax });
}
