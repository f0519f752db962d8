import { Migration001Initial } from './migration-001-initial.ts';
import { Migration002Baseline } from './migration-002-baseline.ts';
import { Migration003RequestActivity } from './migration-003-request-activity.ts';
import { Migration004HoldLeases } from './migration-004-hold-leases.ts';
import { Migration005AlertsAudit } from './migration-005-alerts-audit.ts';
import { Migration006AlertTestDeliveries } from './migration-006-alert-test-deliveries.ts';
import { Migration007HotPathConstraints } from './migration-007-hot-path-constraints.ts';

/**
 * Applied in order; names are stored in the schema's migrations table. 002 is the baseline that
 * replaced migrations 002-009 before any release (a database migrated with those takes it as
 * applied). The SQL functions are repeatable migrations (`../functions/`), applied after these.
 */
export const billingMigrations = [
  { name: 'Migration001Initial', class: Migration001Initial },
  { name: 'Migration002Baseline', class: Migration002Baseline },
  { name: 'Migration003RequestActivity', class: Migration003RequestActivity },
  { name: 'Migration004HoldLeases', class: Migration004HoldLeases },
  { name: 'Migration005AlertsAudit', class: Migration005AlertsAudit },
  { name: 'Migration006AlertTestDeliveries', class: Migration006AlertTestDeliveries },
  { name: 'Migration007HotPathConstraints', class: Migration007HotPathConstraints },
];
