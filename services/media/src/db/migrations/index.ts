import { Migration001ImageJobs } from './migration-001-image-jobs.ts';

/** Applied in order; names are stored in the schema's migrations table. */
export const mediaMigrations = [{ name: 'Migration001ImageJobs', class: Migration001ImageJobs }];
