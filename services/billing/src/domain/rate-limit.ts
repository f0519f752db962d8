import { GatewayError } from '@gw/errors';
import type { EntityManager } from '@mikro-orm/postgresql';

export interface RateDefaults {
  perSecond: number;
  perMinute: number;
}

/**
 * Fixed one-second and one-minute windows per account, counted in one statement on an unlogged
 * table (shared by every billing and gateway replica; nothing waits for a disk flush). Every
 * request counts, refused ones included, so a client hammering past the limit stays limited.
 */
export async function checkRateLimit(em: EntityManager, accountId: string, nowMs: number, defaults: RateDefaults): Promise<void> {
  const second = Math.floor(nowMs / 1000);
  const minute = Math.floor(nowMs / 60_000);
  const rows = await em.execute<{ kind: 'second' | 'minute'; count: number; per_second: number; per_minute: number }[]>(
    `with lim as (
       select coalesce(rate_per_second, ?) as per_second, coalesce(rate_per_minute, ?) as per_minute
       from account where id = ?)
     , up as (
       insert into rate_window as w (account_id, kind, window_start, count)
       select ?, k.kind, k.start, 1 from lim, (values ('second', ?::bigint), ('minute', ?::bigint)) as k(kind, start)
       on conflict (account_id, kind) do update
         set count = case when w.window_start = excluded.window_start then w.count + 1 else 1 end,
             window_start = excluded.window_start
       returning kind, count)
     select up.kind, up.count, lim.per_second, lim.per_minute from up, lim`,
    [defaults.perSecond, defaults.perMinute, accountId, accountId, second, minute],
  );
  if (rows.length === 0) throw new GatewayError('not_found', 'No such account.');
  const over = (kind: 'second' | 'minute') => {
    const row = rows.find((r) => r.kind === kind)!;
    return row.count > (kind === 'second' ? row.per_second : row.per_minute);
  };
  if (over('second')) {
    throw new GatewayError('rate_limit_exceeded', 'Too many requests per second for this account.', {
      limit_type: 'per_second',
      retry_after_seconds: 1,
    });
  }
  if (over('minute')) {
    const retry = Math.max(1, Math.ceil(((minute + 1) * 60_000 - nowMs) / 1000));
    throw new GatewayError('rate_limit_exceeded', 'Too many requests per minute for this account.', {
      limit_type: 'per_minute',
      retry_after_seconds: retry,
    });
  }
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
