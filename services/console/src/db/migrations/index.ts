import { Migration001Initial } from './migration-001-initial.ts';
import { Migration002LoginAttempts } from './migration-002-login-attempts.ts';
import { Migration003LinkPurposesNotices } from './migration-003-link-purposes-notices.ts';
import { Migration004Roles } from './migration-004-roles.ts';
import { Migration005SessionDevices } from './migration-005-session-devices.ts';
import { Migration006Totp } from './migration-006-totp.ts';
import { Migration007AccountSecurity } from './migration-007-account-security.ts';
import { Migration008Audit } from './migration-008-audit.ts';
import { Migration009Passkeys } from './migration-009-passkeys.ts';

/** Applied in order; names are stored in the schema's migrations table. */
export const consoleMigrations = [
  { name: 'Migration001Initial', class: Migration001Initial },
  { name: 'Migration002LoginAttempts', class: Migration002LoginAttempts },
  { name: 'Migration003LinkPurposesNotices', class: Migration003LinkPurposesNotices },
  { name: 'Migration004Roles', class: Migration004Roles },
  { name: 'Migration005SessionDevices', class: Migration005SessionDevices },
  { name: 'Migration006Totp', class: Migration006Totp },
  { name: 'Migration007AccountSecurity', class: Migration007AccountSecurity },
  { name: 'Migration008Audit', class: Migration008Audit },
  { name: 'Migration009Passkeys', class: Migration009Passkeys },
];
