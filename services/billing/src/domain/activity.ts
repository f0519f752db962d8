import { GatewayError } from '@gw/errors';
import { isTimeZone } from '@gw/service-kit';
import type { EntityManager } from '@mikro-orm/postgresql';
import { getAccount } from './account-profile.ts';
import { keyDetails } from './account-keys.ts';
import { requireUuid } from './inputs.ts';
import { DEFAULT_PAGE, MAX_PAGE } from './ledger-history.ts';
import { dayNumber } from './usage-report.ts';

/**
 * The account's requests as a log, one row per billed request: its hold (when, which key, endpoint
 * and model), how it ended (settled, released, refunded or still open) and its usage record.
 * Requests refused before a hold (auth, rate limit, balance) cost nothing and are not listed.
 */

export const ACTIVITY_STATUSES = ['succeeded', 'failed', 'refunded', 'in_progress'] as const;
export type ActivityStatus = (typeof ACTIVITY_STATUSES)[number];

export interface ActivityQuery {
  accountId: string;
  /** Empty for every key. */
  keyId: string;
  /** Empty for every model. */
  model: string;
  /** Empty for every status. */
  status: string;
  /** Empty for no bound. */
  fromDate: string;
  toDate: string;
  /** Empty for the account's zone. */
  timeZone: string;
  /** The last request id of the previous page; empty for the newest. */
  cursor: string;
  limit: number;
}

export interface ActivityRow {
  request_id: string;
  client_request_id: string | null;
  key_id: string | null;
  endpoint: string;
  model: string;
  input_tokens: string;
  output_tokens: string;
  units: string;
  credits: string;
  status: ActivityStatus;
  latency_ms: string;
  created_at: Date;
}

export interface ActivityPage {
  items: ActivityRow[];
  nextCursor: string;
  timeZone: string;
}

const STATUS = `case when h.status = 'open' then 'in_progress' when h.status = 'released' then 'failed'
                     when h.refunded > 0 then 'refunded' else 'succeeded' end`;

export async function listActivity(em: EntityManager, q: ActivityQuery): Promise<ActivityPage> {
  requireUuid(q.accountId, 'account');
  const size = q.limit === 0 ? DEFAULT_PAGE : q.limit;
  if (size < 1 || size > MAX_PAGE) throw new GatewayError('invalid_request', `limit is 1 to ${MAX_PAGE}.`);
  if (q.status !== '' && !(ACTIVITY_STATUSES as readonly string[]).includes(q.status)) {
    throw new GatewayError('invalid_request', `status is one of ${ACTIVITY_STATUSES.join(', ')}.`);
  }
  if (q.fromDate !== '' && q.toDate !== '' && dayNumber('to_date', q.toDate) < dayNumber('from_date', q.fromDate)) {
    throw new GatewayError('invalid_request', 'to_date is before from_date.');
  }
  if (q.fromDate !== '') dayNumber('from_date', q.fromDate);
  if (q.toDate !== '') dayNumber('to_date', q.toDate);
  if (q.timeZone !== '' && !isTimeZone(q.timeZone)) throw new GatewayError('invalid_request', 'time_zone is not a known IANA time zone.');
  const tz = q.timeZone || (await getAccount(em, q.accountId)).time_zone;
  // A key filter must name a key of this account: another account's key is `not_found`.
  const keyId = q.keyId === '' ? null : (await keyDetails(em, q.accountId, requireUuid(q.keyId, 'API key'))).id;
  if (q.cursor !== '') {
    const found = await em.execute('select 1 from hold where request_id = ? and account_id = ?', [q.cursor, q.accountId]);
    if (found.length === 0) throw new GatewayError('invalid_request', 'cursor is not a request of this account.');
  }
  // One row more than the page tells whether an older page exists.
  const rows = await em.execute<ActivityRow[]>(
    `select * from (
       select h.request_id, h.client_request_id, h.key_id, h.endpoint, h.model,
              coalesce(u.input_tokens, 0)::text as input_tokens, coalesce(u.output_tokens, 0)::text as output_tokens,
              coalesce(u.total_tokens + u.images + u.seconds, 0)::text as units,
              (case h.status when 'open' then h.amount when 'settled' then h.charged - h.refunded else 0 end)::text as credits,
              ${STATUS} as status,
              coalesce(round(extract(epoch from h.settled_at - h.created_at) * 1000), 0)::bigint::text as latency_ms,
              h.created_at
         from hold h
         left join usage_record u on u.request_id = h.request_id
        where h.account_id = ?
          and (?::uuid is null or h.key_id = ?::uuid)
          and (?::text is null or h.model = ?::text)
          and (?::date is null or h.created_at >= (?::date)::timestamp at time zone ?)
          and (?::date is null or h.created_at < (?::date + 1)::timestamp at time zone ?)
          and (?::text is null or (h.created_at, h.request_id) < (select c.created_at, c.request_id from hold c where c.request_id = ?))
     ) a
     where (?::text is null or a.status = ?::text)
     order by a.created_at desc, a.request_id desc
     limit ?`,
    [
      q.accountId,
      keyId,
      keyId,
      q.model || null,
      q.model || null,
      q.fromDate || null,
      q.fromDate || null,
      tz,
      q.toDate || null,
      q.toDate || null,
      tz,
      q.cursor || null,
      q.cursor || null,
      q.status || null,
      q.status || null,
      size + 1,
    ],
  );
  const more = rows.length > size;
  const items = more ? rows.slice(0, size) : rows;
  return { items, nextCursor: more ? items[items.length - 1]!.request_id : '', timeZone: tz };
}
