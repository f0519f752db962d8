import { Migration001Initial } from './migration-001-initial.ts';
import { Migration002Money } from './migration-002-money.ts';
import { Migration003KeyWindows } from './migration-003-key-windows.ts';
import { Migration004RateInApplyOps } from './migration-004-rate-in-apply-ops.ts';
import { Migration005ReplayBeforeRate } from './migration-005-replay-before-rate.ts';
import { Migration006ApplyBatch } from './migration-006-apply-batch.ts';
import { Migration007RateLongestWait } from './migration-007-rate-longest-wait.ts';
import { Migration008KeyStateInAuthorize } from './migration-008-key-state-in-authorize.ts';
import { Migration009FewerStatementsPerHold } from './migration-009-fewer-statements-per-hold.ts';

/** Applied in order; names are stored in the schema's migrations table. */
export const billingMigrations = [
  { name: 'Migration001Initial', class: Migration001Initial },
  { name: 'Migration002Money', class: Migration002Money },
  { name: 'Migration003KeyWindows', class: Migration003KeyWindows },
  { name: 'Migration004RateInApplyOps', class: Migration004RateInApplyOps },
  { name: 'Migration005ReplayBeforeRate', class: Migration005ReplayBeforeRate },
  { name: 'Migration006ApplyBatch', class: Migration006ApplyBatch },
  { name: 'Migration007RateLongestWait', class: Migration007RateLongestWait },
  { name: 'Migration008KeyStateInAuthorize', class: Migration008KeyStateInAuthorize },
  { name: 'Migration009FewerStatementsPerHold', class: Migration009FewerStatementsPerHold },
];
