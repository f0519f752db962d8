-- Sets one limit of a key under its wallet lock (the lock apply_ops takes, so no request of the
-- account runs meanwhile). When it is the key's first limit, the key's usage windows are rebuilt
-- from its holds, counted the way apply_ops counts them, and its open holds become windowed.
create or replace function "set_key_limit"(p_key uuid, p_type text, p_period text, p_value bigint, p_now timestamptz) returns void
language plpgsql set search_path from current as $fn$
declare
  v_account uuid;
  v_tz text;
  v_day date;
  v_month date;
begin
  select k."account_id", a."time_zone" into v_account, v_tz from "api_key" k join "account" a on a."id" = k."account_id" where k."id" = p_key;
  if not found then
    raise exception 'no such API key' using errcode = 'P0002';
  end if;
  perform 1 from "wallet" where "account_id" = v_account for update;
  if not exists (select 1 from "key_limit" where "key_id" = p_key) then
    v_day := (p_now at time zone v_tz)::date;
    v_month := date_trunc('month', p_now at time zone v_tz)::date;
    delete from "key_usage_window" where "key_id" = p_key;
    insert into "key_usage_window" ("key_id", "period", "window_start", "spent", "requests", "tokens", "tokens_reserved")
    select p_key, p.period, p.start,
           coalesce(sum(case h."status" when 'open' then h."amount" when 'settled' then coalesce(h."charged", 0) - h."refunded" else 0 end), 0),
           count(h."request_id") filter (where h."status" <> 'released'),
           coalesce(sum(u."total_tokens") filter (where h."status" = 'settled'), 0),
           coalesce(sum(h."worst_tokens") filter (where h."status" = 'open'), 0)
      from (values ('daily', v_day), ('monthly', v_month), ('lifetime', date '1970-01-01')) as p(period, start)
      left join "hold" h on h."key_id" = p_key and (p.period = 'lifetime'
             or (p.period = 'daily' and h."day_start" = v_day) or (p.period = 'monthly' and h."month_start" = v_month))
      left join "usage_record" u on u."request_id" = h."request_id"
     group by p.period, p.start;
    update "hold" set "windowed" = true where "key_id" = p_key and "status" = 'open';
  end if;
  insert into "key_limit" ("key_id", "limit_type", "period", "value") values (p_key, p_type, p_period, p_value)
    on conflict ("key_id", "limit_type", "period") do update set "value" = excluded."value";
end
$fn$
