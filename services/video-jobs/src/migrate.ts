import { runMigrationsCommand } from '@gw/service-kit';
import { videoJobsEntities } from './db/entities.ts';
import { videoJobsMigrations } from './db/migrations/index.ts';

await runMigrationsCommand({ schema: 'video_jobs', entities: videoJobsEntities, migrations: videoJobsMigrations });
