import { runMigrationsCommand } from '@gw/service-kit';
import { billingEntities } from './db/entities.ts';
import { billingMigrations } from './db/migrations/index.ts';

await runMigrationsCommand({ schema: 'billing', entities: billingEntities, migrations: billingMigrations });
