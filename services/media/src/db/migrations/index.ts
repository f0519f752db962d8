import { Migration001ImageJobs } from './migration-001-image-jobs.ts';
import { Migration002ClaimLeases } from './migration-002-claim-leases.ts';
import { Migration003IdempotencyClaims } from './migration-003-idempotency-claims.ts';

/** Applied in order; names are stored in the schema's migrations table. */
export const mediaMigrations = [
  { name: 'Migration001ImageJobs', class: Migration001ImageJobs },
  { name: 'Migration002ClaimLeases', class: Migration002ClaimLeases },
  { name: 'Migration003IdempotencyClaims', class: Migration003IdempotencyClaims },
];
