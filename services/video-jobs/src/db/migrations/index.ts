import { Migration001VideoJobs } from './migration-001-video-jobs.ts';

/** Applied in order; names are stored in the schema's migrations table. */
export const videoJobsMigrations = [{ name: 'Migration001VideoJobs', class: Migration001VideoJobs }];
