import { readFileSync } from 'node:fs';
import type { RepeatableMigration } from '@gw/service-kit';

/**
 * Billing's SQL functions, one file each, applied as repeatable migrations: after the versioned
 * migrations, in this order, and again whenever a file's text changes. Each file must be safe to
 * run again (`create or replace function`); a change of a function's arguments or result type
 * drops the old one first in the same file (`drop function if exists ...`).
 */
const NAMES = ['credits_for', 'rate_verdict', 'count_rate', 'alert_on_ledger', 'apply_groups', 'apply_ops', 'apply_batch', 'set_key_limit'] as const;

export const billingFunctions: RepeatableMigration[] = NAMES.map((name) => ({
  name,
  sql: readFileSync(new URL(`./${name}.sql`, import.meta.url), 'utf8'),
}));
