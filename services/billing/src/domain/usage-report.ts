import { GatewayError } from '@gw/errors';
import { isTimeZone } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';
import { keyDetails } from './account-keys.ts';
import { requireUuid } from './inputs.ts';
import { getAccount } from './account-profile.ts';

/**
 * Usage of an account over whole calendar days, aggregated by Postgres from `usage_record`. Days
 * are those of the account's time zone (DECISIONS.md: per-key windows are calendar periods there,
 * so the dashboard's days match the limits' days), or of a zone the caller names.
 */

export type UsageGroup = 'day' | 'model' | 'key';

export interface UsageReportQuery {
  accountId: string;
  /** Empty for the whole account. */
  keyId: string;
  fromDate: string;
  toDate: string;
  groupBy: UsageGroup;
  /** Empty for the account's zone. */
  timeZone: string;
}

/** Sums as decimal strings (Postgres numeric), exact at any size. */
export interface UsageSums {
  requests: string;
  input_tokens: string;
  output_tokens: string;
  total_tokens: string;
  images: string;
  video_seconds: string;
  credits: string;
}

export interface UsageReport {
  rows: Array<UsageSums & { grp: string }>;
  totals: UsageSums;
  timeZone: string;
}

/** A year and a day: a leap year's whole span. Keeps one report's work bounded. */
export const MAX_REPORT_DAYS = 366;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Days since the epoch of a `YYYY-MM-DD` calendar date, or `invalid_request`. */
export function dayNumber(name: string, value: string): number {
  const m = DATE.exec(value);
  if (!m) throw new GatewayError('invalid_request', `${name} must be a date YYYY-MM-DD.`);
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const ms = Date.UTC(y, mo - 1, d);
  const back = new Date(ms);
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d) {
    throw new GatewayError('invalid_request', `${name} is not a calendar date.`);
  }
  return ms / 86_400_000;
}

const SUMS = `count(*)::text as requests, coalesce(sum(input_tokens), 0)::text as input_tokens,
  coalesce(sum(output_tokens), 0)::text as output_tokens, coalesce(sum(total_tokens), 0)::text as total_tokens,
  coalesce(sum(images), 0)::text as images, coalesce(sum(seconds), 0)::text as video_seconds,
  coalesce(sum(credits), 0)::text as credits`;

const ZERO: UsageSums = { requests: '0', input_tokens: '0', output_tokens: '0', total_tokens: '0', images: '0', video_seconds: '0', credits: '0' };

/** Postgres refuses a zone its tz database lacks (SQLSTATE 22023), though Intl knew the name. */
function unknownZone(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '22023';
}

export async function usageReport(em: EntityManager, q: UsageReportQuery): Promise<UsageReport> {
  try {
    return await aggregate(em, q);
  } catch (err) {
    if (unknownZone(err)) throw new GatewayError('invalid_request', 'time_zone is not a known IANA time zone.');
    throw err;
  }
}

async function aggregate(em: EntityManager, q: UsageReportQuery): Promise<UsageReport> {
  requireUuid(q.accountId, 'account');
  const from = dayNumber('from_date', q.fromDate);
  const to = dayNumber('to_date', q.toDate);
  if (to < from) throw new GatewayError('invalid_request', 'to_date is before from_date.');
  if (to - from + 1 > MAX_REPORT_DAYS) throw new GatewayError('invalid_request', `A report covers at most ${MAX_REPORT_DAYS} days.`);
  if (q.timeZone !== '' && !isTimeZone(q.timeZone)) throw new GatewayError('invalid_request', 'time_zone is not a known IANA time zone.');
  const tz = q.timeZone || (await getAccount(em, q.accountId)).time_zone;
  // A key filter must name a key of this account: another account's key is `not_found`.
  const keyId = q.keyId === '' ? null : (await keyDetails(em, q.accountId, requireUuid(q.keyId, 'API key'))).id;

  // The period's bounds are local midnights turned into instants, so the range scan uses the
  // (account_id, created_at) / (key_id, created_at) indexes.
  const filtered = `select * from usage_record
     where account_id = ? and (?::uuid is null or key_id = ?::uuid)
       and created_at >= (?::date)::timestamp at time zone ? and created_at < (?::date + 1)::timestamp at time zone ?`;
  const params = [q.accountId, keyId, keyId, q.fromDate, tz, q.toDate, tz];

  let rows: UsageReport['rows'];
  if (q.groupBy === 'day') {
    rows = await em.execute(
      `with agg as (
         select (created_at at time zone ?)::date as day, ${SUMS} from (${filtered}) u group by 1)
       select d::date::text as grp,
              coalesce(a.requests, '0') as requests, coalesce(a.input_tokens, '0') as input_tokens,
              coalesce(a.output_tokens, '0') as output_tokens, coalesce(a.total_tokens, '0') as total_tokens,
              coalesce(a.images, '0') as images, coalesce(a.video_seconds, '0') as video_seconds,
              coalesce(a.credits, '0') as credits
         from generate_series(?::date, ?::date, interval '1 day') d
         left join agg a on a.day = d::date
        order by d`,
      [tz, ...params, q.fromDate, q.toDate],
    );
  } else {
    const column = q.groupBy === 'model' ? 'model' : `coalesce(key_id::text, '')`;
    rows = await em.execute(
      `select ${column} as grp, ${SUMS} from (${filtered}) u group by 1 order by sum(credits) desc, 1`,
      params,
    );
  }
  const totals = (await em.execute<UsageSums[]>(`select ${SUMS} from (${filtered}) u`, params))[0] ?? ZERO;
  return { rows, totals, timeZone: tz };
}
