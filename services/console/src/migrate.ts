import { runMigrationsCommand } from '@gw/service-kit';
import { consoleEntities } from './db/entities.ts';
import { consoleMigrations } from './db/migrations/index.ts';
import { CONSOLE_SCHEMA } from './db/orm.ts';

// `node services/console/src/migrate.ts`: applies the console's pending migrations and exits
// (deployments run it as a job and start the service with MIGRATE_ON_START=false).
await runMigrationsCommand({ schema: CONSOLE_SCHEMA, entities: consoleEntities, migrations: consoleMigrations });
