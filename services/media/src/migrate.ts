import { runMigrationsCommand } from '@gw/service-kit';
import { mediaEntities } from './db/entities.ts';
import { mediaMigrations } from './db/migrations/index.ts';

await runMigrationsCommand({ schema: 'media', entities: mediaEntities, migrations: mediaMigrations });
