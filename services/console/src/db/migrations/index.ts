import { Migration001Initial } from './migration-001-initial.ts';
import { Migration002LoginAttempts } from './migration-002-login-attempts.ts';

/** Applied in order; names are stored in the schema's migrations table. */
export const consoleMigrations = [
  { name: 'Migration001Initial', class: Migration001Initial },
  { name: 'Migration002LoginAttempts', class: Migration002LoginAttempts },
];
