import { Migration } from '@mikro-orm/migrations';

/**
 * `count_rate` of migration 004 with one change: when a request passes both the second and the
 * minute limit, it reports the minute (`per_minute`, with the seconds left in the minute). The
 * second came first, so a client told to retry after 1 s was refused again, and that refusal
 * counted too.
 */
export class Migration007RateLongestWait extends Migration {
  override async up(): Promise<void> {
    this.addSql(COUNT_RATE);
  }
}

const COUNT_RATE = `
create or replace function "count_rate"(p_account uuid, p_now_ms bigint, p_default_second integer, p_default_minute integer,
                                        out limit_type text, out retry_after integer)
language plpgsql set search_path from current as $fn$
declare
  v_second bigint := p_now_ms / 1000;
  v_minute bigint := p_now_ms / 60000;
  v_per_second integer;
  v_per_minute integer;
  v_count_second integer;
  v_count_minute integer;
begin
  select coalesce("rate_per_second", p_default_second), coalesce("rate_per_minute", p_default_minute)
    into v_per_second, v_per_minute from "account" where "id" = p_account;
  insert into "rate_window" as w ("account_id", "kind", "window_start", "count") values (p_account, 'second', v_second, 1)
    on conflict ("account_id", "kind") do update
      set "count" = case when w."window_start" = excluded."window_start" then w."count" + 1 else 1 end,
          "window_start" = excluded."window_start"
    returning "count" into v_count_second;
  insert into "rate_window" as w ("account_id", "kind", "window_start", "count") values (p_account, 'minute', v_minute, 1)
    on conflict ("account_id", "kind") do update
      set "count" = case when w."window_start" = excluded."window_start" then w."count" + 1 else 1 end,
          "window_start" = excluded."window_start"
    returning "count" into v_count_minute;
  -- The axis with the longer wait blocks: retrying after the second's wait would still be refused.
  if v_count_minute > v_per_minute then
    limit_type := 'per_minute';
    retry_after := greatest(1, ceil(((v_minute + 1) * 60000 - p_now_ms) / 1000.0)::integer);
  elsif v_count_second > v_per_second then
    limit_type := 'per_second';
    retry_after := 1;
  end if;
end
$fn$`;
