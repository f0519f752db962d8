import { Migration001VideoJobs } from './migration-001-video-jobs.ts';
import { Migration002IdempotencyClaims } from './migration-002-idempotency-claims.ts';

/** Applied in order; names are stored in the schema's migrations table. */
export const videoJobsMigrations = [
  { name: 'Migration001VideoJobs', class: Migration001VideoJobs },
  { name: 'Migration002IdempotencyClaims', class: Migration002IdempotencyClaims },
];
