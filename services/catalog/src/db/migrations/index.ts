import { Migration001Initial } from './migration-001-initial.ts';
import { Migration002RoutesAndSync } from './migration-002-routes-and-sync.ts';
import { Migration004FirstByteTimeout } from './migration-004-first-byte-timeout.ts';
import { Migration003Aliases } from './migration-003-aliases.ts';
import { Migration005Audit } from './migration-005-audit.ts';

/** Applied in order; names are stored in the schema's migrations table. */
export const catalogMigrations = [
  { name: 'Migration001Initial', class: Migration001Initial },
  { name: 'Migration002RoutesAndSync', class: Migration002RoutesAndSync },
  { name: 'Migration003Aliases', class: Migration003Aliases },
  { name: 'Migration004FirstByteTimeout', class: Migration004FirstByteTimeout },
  { name: 'Migration005Audit', class: Migration005Audit },
];
