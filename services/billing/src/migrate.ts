import { runMigrationsCommand } from '@gw/service-kit';
import { billingEntities } from './db/entities.ts';
import { billingFunctions } from './db/functions/index.ts';
import { billingMigrations } from './db/migrations/index.ts';

await runMigrationsCommand({ schema: 'billing', entities: billingEntities, migrations: billingMigrations, repeatable: billingFunctions });
