import { Migration001Initial } from './migration-001-initial.ts';

/** Applied in order; names are stored in the schema's migrations table. */
export const consoleMigrations = [{ name: 'Migration001Initial', class: Migration001Initial }];
