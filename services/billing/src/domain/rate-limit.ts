import { GatewayError } from '@gw/errors';
import type { EntityManager } from '@mikro-orm/postgresql';

export interface RateDefaults {
  perSecond: number;
  perMinute: number;
}

/** The public refusal for a limit `count_rate` reported. */
export function rateLimitError(limitType: string, retryAfterSeconds: number): GatewayError {
  const per = limitType === 'per_second' ? 'second' : 'minute';
  return new GatewayError('rate_limit_exceeded', `Too many requests per ${per} for this account.`, {
    limit_type: limitType,
    retry_after_seconds: retryAfterSeconds,
  });
}

/**
 * Fixed one-second and one-minute windows per account, counted by the database function
 * `count_rate` on an unlogged table (shared by every billing and gateway replica; nothing waits for
 * a disk flush). Every request counts, refused ones included, so a client hammering past the limit
 * stays limited. Text requests are counted the same way inside `apply_ops` instead.
 */
export async function checkRateLimit(em: EntityManager, accountId: string, nowMs: number, defaults: RateDefaults): Promise<void> {
  const rows = await em.execute<{ found: boolean; limit_type: string | null; retry_after: number | null }[]>(
    `select exists (select 1 from account where id = ?) as found, r.limit_type, r.retry_after
       from count_rate(?, ?, ?, ?) r`,
    [accountId, accountId, nowMs, defaults.perSecond, defaults.perMinute],
  );
  const row = rows[0];
  if (!row?.found) throw new GatewayError('not_found', 'No such account.');
  if (row.limit_type) throw rateLimitError(row.limit_type, row.retry_after ?? 1);
}

export async function setAccountRateLimit(
  em: EntityManager,
  accountId: string,
  perSecond: number,
  perMinute: number,
  defaults: RateDefaults,
): Promise<{ perSecond: number; perMinute: number }> {
  if (perSecond < 0 || perMinute < 0) throw new GatewayError('invalid_request', 'Rate limits cannot be negative.');
  const rows = await em.execute<{ s: number; m: number }[]>(
    `update account set rate_per_second = nullif(?, 0), rate_per_minute = nullif(?, 0) where id = ?
     returning coalesce(rate_per_second, ?) as s, coalesce(rate_per_minute, ?) as m`,
    [perSecond, perMinute, accountId, defaults.perSecond, defaults.perMinute],
  );
  const row = rows[0];
  if (!row) throw new GatewayError('not_found', 'No such account.');
  return { perSecond: row.s, perMinute: row.m };
}
