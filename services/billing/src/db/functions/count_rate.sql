-- Counts one request in the account's current one-second and one-minute windows (fixed windows on
-- the unlogged rate_window table) and answers which limit it passes, if any, with the seconds to
-- wait. Limits: the account's own, else the defaults given. The stand-alone check of the routes
-- whose rate limit is not deferred into Authorize (apply_ops counts the same windows itself).
create or replace function "count_rate"(p_account uuid, p_now_ms bigint, p_default_second integer, p_default_minute integer,
                                        out limit_type text, out retry_after integer)
language plpgsql set search_path from current as $fn$
declare
  v_per_second integer;
  v_per_minute integer;
  v_count_second integer;
  v_count_minute integer;
begin
  select coalesce("rate_per_second", p_default_second), coalesce("rate_per_minute", p_default_minute)
    into v_per_second, v_per_minute from "account" where "id" = p_account;
  insert into "rate_window" as w ("account_id", "kind", "window_start", "count") values (p_account, 'second', p_now_ms / 1000, 1)
    on conflict ("account_id", "kind") do update
      set "count" = case when w."window_start" = excluded."window_start" then w."count" + 1 else 1 end,
          "window_start" = excluded."window_start"
    returning "count" into v_count_second;
  insert into "rate_window" as w ("account_id", "kind", "window_start", "count") values (p_account, 'minute', p_now_ms / 60000, 1)
    on conflict ("account_id", "kind") do update
      set "count" = case when w."window_start" = excluded."window_start" then w."count" + 1 else 1 end,
          "window_start" = excluded."window_start"
    returning "count" into v_count_minute;
  select v."limit_type", v."retry_after" into limit_type, retry_after
    from "rate_verdict"(v_count_second, v_count_minute, v_per_second, v_per_minute, p_now_ms) v;
end
$fn$
