import { runMigrationsCommand } from '@gw/service-kit';
import { catalogEntities } from './db/entities.ts';
import { catalogMigrations } from './db/migrations/index.ts';

await runMigrationsCommand({ schema: 'catalog', entities: catalogEntities, migrations: catalogMigrations });
