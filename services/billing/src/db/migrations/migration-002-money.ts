import { Migration } from '@mikro-orm/migrations';

/**
 * Holds, settlements, per-key limits, usage records, rate windows, operator switches and
 * reconciliation, plus `apply_ops`: the one place where request money moves.
 *
 * `apply_ops(account, ops, now)` applies a batch of operations on one account in one statement,
 * so in one transaction that takes the wallet row lock once. The billing service coalesces
 * concurrent operations of a hot account into such batches (one lock and one commit for many
 * requests) and a lone request still costs a single round trip. Each op is idempotent by its
 * request id: a replay returns the first outcome and moves nothing.
 */
export class Migration002Money extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "account"
      add column "rate_per_second" integer check ("rate_per_second" > 0),
      add column "rate_per_minute" integer check ("rate_per_minute" > 0),
      add column "time_zone" text not null default 'Asia/Ho_Chi_Minh'`);
    this.addSql(`alter table "api_key" add column "last_used_at" timestamptz`);

    this.addSql(`create table "key_limit" (
      "key_id" uuid not null references "api_key" ("id"),
      "limit_type" text not null check ("limit_type" in ('spending', 'requests', 'tokens')),
      "period" text not null check ("period" in ('daily', 'monthly', 'lifetime')),
      "value" bigint not null check ("value" >= 0),
      primary key ("key_id", "limit_type", "period")
    )`);
    // Usage of a key per calendar window (in the account's time zone); lifetime uses 1970-01-01.
    // `spent` counts open holds at their held amount until they settle (so spending never
    // overshoots); `tokens_reserved` is the worst case of in-flight text requests.
    this.addSql(`create table "key_usage_window" (
      "key_id" uuid not null references "api_key" ("id"),
      "period" text not null check ("period" in ('daily', 'monthly', 'lifetime')),
      "window_start" date not null,
      "spent" bigint not null default 0,
      "requests" bigint not null default 0,
      "tokens" bigint not null default 0,
      "tokens_reserved" bigint not null default 0,
      primary key ("key_id", "period", "window_start")
    )`);
    this.addSql(`create table "hold" (
      "request_id" text primary key,
      "account_id" uuid not null references "account" ("id"),
      "key_id" uuid references "api_key" ("id"),
      "amount" bigint not null check ("amount" >= 0),
      "worst_tokens" bigint not null default 0,
      "unit" text not null check ("unit" in ('million_tokens', 'image', 'second')),
      "price" bigint not null check ("price" >= 0),
      "endpoint" text not null,
      "model" text not null,
      "status" text not null check ("status" in ('open', 'settled', 'released')),
      "charged" bigint check ("charged" >= 0),
      "refunded" bigint not null default 0 check ("refunded" >= 0),
      "balance_after" bigint,
      "day_start" date not null,
      "month_start" date not null,
      "created_at" timestamptz not null,
      "settled_at" timestamptz
    )`);
    this.addSql(`create index "hold_open_idx" on "hold" ("created_at") where "status" = 'open'`);
    this.addSql(`create table "usage_record" (
      "request_id" text primary key references "hold" ("request_id"),
      "account_id" uuid not null references "account" ("id"),
      "key_id" uuid references "api_key" ("id"),
      "model" text not null,
      "endpoint" text not null,
      "input_tokens" bigint not null default 0,
      "output_tokens" bigint not null default 0,
      "total_tokens" bigint not null default 0,
      "images" integer not null default 0,
      "seconds" integer not null default 0,
      "credits" bigint not null,
      "created_at" timestamptz not null
    )`);
    this.addSql(`create index "usage_record_key_idx" on "usage_record" ("key_id", "created_at")`);
    this.addSql(`create index "usage_record_account_idx" on "usage_record" ("account_id", "created_at")`);
    // Rate windows lose nothing that matters on a crash, so the table skips the WAL: no commit
    // waits for a disk flush on this hot path.
    this.addSql(`create unlogged table "rate_window" (
      "account_id" uuid not null,
      "kind" text not null check ("kind" in ('second', 'minute')),
      "window_start" bigint not null,
      "count" integer not null,
      primary key ("account_id", "kind")
    )`);
    this.addSql(`create table "switch" (
      "name" text primary key check ("name" in ('maintenance', 'ai_requests')),
      "on" boolean not null,
      "updated_at" timestamptz not null default now()
    )`);
    this.addSql(`create table "reconciliation" (
      "id" bigserial primary key,
      "key_id" uuid not null references "api_key" ("id"),
      "request_id" text not null unique,
      "marked_at" timestamptz not null,
      "resolved_at" timestamptz,
      "resolution" text
    )`);
    this.addSql(`create index "reconciliation_open_idx" on "reconciliation" ("key_id") where "resolved_at" is null`);

    this.addSql(APPLY_OPS);
  }

  override async down(): Promise<void> {
    this.addSql('drop function if exists "apply_ops"(uuid, jsonb, timestamptz)');
    this.addSql('drop table if exists "reconciliation", "switch", "rate_window", "usage_record", "hold", "key_usage_window", "key_limit"');
    this.addSql('alter table "api_key" drop column "last_used_at"');
    this.addSql('alter table "account" drop column "rate_per_second", drop column "rate_per_minute", drop column "time_zone"');
  }
}

/**
 * ops: jsonb array, each one of
 *   {"op":"authorize","request_id","key_id","amount","worst_tokens","text","endpoint","model","unit","price"}
 *   {"op":"settle","request_id","unit","price","charge","input_tokens","output_tokens","total_tokens","images","seconds","reconcile"}
 *   {"op":"release","request_id"}
 *   {"op":"refund","request_id"}
 * Returns a jsonb array of results in the same order:
 *   {"ok":true,"balance_after","credit_charged"?,"credit_refunded"?,"replay"?}
 *   {"ok":false,"code","limit_type"?,"period"?}
 */
const APPLY_OPS = `
create function "apply_ops"(p_account uuid, p_ops jsonb, p_now timestamptz) returns jsonb
language plpgsql set search_path from current as $fn$
declare
  v_balance bigint;
  v_tz text;
  v_day date;
  v_month date;
  v_results jsonb := '[]'::jsonb;
  v_op jsonb;
  v_hold "hold"%rowtype;
  v_lim record;
  v_win record;
  v_fail jsonb;
  v_amount bigint;
  v_charge bigint;
  v_delta bigint;
  v_req text;
  v_key uuid;
begin
  -- One lock per batch: every change to this account's money and key windows happens under it.
  select w."balance", a."time_zone" into v_balance, v_tz
    from "wallet" w join "account" a on a."id" = w."account_id"
    where w."account_id" = p_account for update of w;
  if not found then
    return (select jsonb_agg(jsonb_build_object('ok', false, 'code', 'not_found')) from jsonb_array_elements(p_ops));
  end if;
  v_day := (p_now at time zone v_tz)::date;
  v_month := date_trunc('month', p_now at time zone v_tz)::date;

  for v_op in select value from jsonb_array_elements(p_ops) loop
    v_req := v_op->>'request_id';
    v_fail := null;

    if v_op->>'op' = 'authorize' then
      select * into v_hold from "hold" where "request_id" = v_req;
      if found then
        v_results := v_results || jsonb_build_object('ok', v_hold."account_id" = p_account, 'replay', true,
          'balance_after', v_balance::text, 'held', v_hold."amount"::text,
          'code', case when v_hold."account_id" = p_account then null else 'invalid_request' end);
        continue;
      end if;
      v_key := (v_op->>'key_id')::uuid;
      v_amount := (v_op->>'amount')::bigint;

      if (v_op->>'text')::boolean and exists (
        select 1 from "reconciliation" where "key_id" = v_key and "resolved_at" is null) then
        v_fail := jsonb_build_object('ok', false, 'code', 'api_key_quota_reconciliation_required');
      end if;

      if v_fail is null then
        for v_lim in
          select l."limit_type", l."period", l."value",
                 coalesce(u."spent", 0) as spent, coalesce(u."requests", 0) as requests,
                 coalesce(u."tokens", 0) + coalesce(u."tokens_reserved", 0) as tokens
            from "key_limit" l
            left join "key_usage_window" u on u."key_id" = l."key_id" and u."period" = l."period"
              and u."window_start" = case l."period" when 'daily' then v_day when 'monthly' then v_month else date '1970-01-01' end
           where l."key_id" = v_key
           order by case l."limit_type" when 'requests' then 0 when 'spending' then 1 else 2 end,
                    case l."period" when 'daily' then 0 when 'monthly' then 1 else 2 end
        loop
          if (v_lim."limit_type" = 'requests' and v_lim.requests + 1 > v_lim."value")
             or (v_lim."limit_type" = 'spending' and v_lim.spent + v_amount > v_lim."value")
             or (v_lim."limit_type" = 'tokens' and (v_op->>'text')::boolean and v_lim.tokens >= v_lim."value") then
            v_fail := jsonb_build_object('ok', false, 'code', 'api_key_limit_exceeded',
              'limit_type', v_lim."limit_type", 'period', v_lim."period");
            exit;
          end if;
        end loop;
      end if;

      if v_fail is null and v_balance < v_amount then
        v_fail := jsonb_build_object('ok', false, 'code', 'insufficient_balance');
      end if;
      if v_fail is not null then
        v_results := v_results || v_fail;
        continue;
      end if;

      v_balance := v_balance - v_amount;
      insert into "hold" ("request_id", "account_id", "key_id", "amount", "worst_tokens", "unit", "price", "endpoint",
                          "model", "status", "day_start", "month_start", "created_at")
        values (v_req, p_account, v_key, v_amount, coalesce((v_op->>'worst_tokens')::bigint, 0), v_op->>'unit',
                (v_op->>'price')::bigint, v_op->>'endpoint', v_op->>'model', 'open', v_day, v_month, p_now);
      insert into "ledger_entry" ("account_id", "kind", "amount", "balance_after", "reference", "key_id", "created_at")
        values (p_account, 'hold', -v_amount, v_balance, 'hold:' || v_req, v_key, p_now);
      if v_key is not null then
        insert into "key_usage_window" as u ("key_id", "period", "window_start", "spent", "requests", "tokens_reserved")
          select v_key, p.period, p.start, v_amount, 1, coalesce((v_op->>'worst_tokens')::bigint, 0)
            from (values ('daily', v_day), ('monthly', v_month), ('lifetime', date '1970-01-01')) as p(period, start)
          on conflict ("key_id", "period", "window_start") do update
            set "spent" = u."spent" + excluded."spent", "requests" = u."requests" + 1,
                "tokens_reserved" = u."tokens_reserved" + excluded."tokens_reserved";
        update "api_key" set "last_used_at" = p_now where "id" = v_key;
      end if;
      v_results := v_results || jsonb_build_object('ok', true, 'held', v_amount::text, 'balance_after', v_balance::text);

    elsif v_op->>'op' in ('settle', 'release') then
      select * into v_hold from "hold" where "request_id" = v_req and "account_id" = p_account;
      if not found then
        v_results := v_results || jsonb_build_object('ok', false, 'code', 'not_found');
        continue;
      end if;
      if v_hold."status" <> 'open' then
        v_results := v_results || jsonb_build_object('ok', true, 'replay', true,
          'credit_charged', coalesce(v_hold."charged", 0)::text, 'balance_after', v_hold."balance_after"::text);
        continue;
      end if;
      if v_op->>'op' = 'settle' and (v_op->>'unit' is distinct from v_hold."unit"
                                     or (v_op->>'price')::bigint is distinct from v_hold."price") then
        v_results := v_results || jsonb_build_object('ok', false, 'code', 'invalid_request');
        continue;
      end if;
      v_charge := case when v_op->>'op' = 'settle' then (v_op->>'charge')::bigint else 0 end;
      -- The hold is the worst case; a charge above it takes at most what the wallet still has.
      if v_charge > v_hold."amount" + v_balance then
        v_charge := v_hold."amount" + v_balance;
      end if;
      v_delta := v_hold."amount" - v_charge;
      v_balance := v_balance + v_delta;
      update "hold" set "status" = case when v_op->>'op' = 'settle' then 'settled' else 'released' end,
                        "charged" = v_charge, "balance_after" = v_balance, "settled_at" = p_now
        where "request_id" = v_req;
      insert into "ledger_entry" ("account_id", "kind", "amount", "balance_after", "reference", "key_id", "created_at")
        values (p_account, case when v_op->>'op' = 'settle' then 'settle' else 'release' end, v_delta, v_balance,
                v_op->>'op' || ':' || v_req, v_hold."key_id", p_now);
      if v_hold."key_id" is not null then
        -- Settle against the windows the hold was counted in, even across midnight.
        update "key_usage_window" u
           set "spent" = u."spent" - v_delta,
               "tokens" = u."tokens" + coalesce((v_op->>'total_tokens')::bigint, 0),
               "tokens_reserved" = greatest(0, u."tokens_reserved" - v_hold."worst_tokens"),
               "requests" = u."requests" - case when v_op->>'op' = 'release' then 1 else 0 end
         where u."key_id" = v_hold."key_id"
           and (u."period", u."window_start") in (('daily', v_hold."day_start"), ('monthly', v_hold."month_start"),
                                                  ('lifetime', date '1970-01-01'));
      end if;
      if v_op->>'op' = 'settle' then
        insert into "usage_record" ("request_id", "account_id", "key_id", "model", "endpoint", "input_tokens",
                                    "output_tokens", "total_tokens", "images", "seconds", "credits", "created_at")
          values (v_req, p_account, v_hold."key_id", v_hold."model", v_hold."endpoint",
                  coalesce((v_op->>'input_tokens')::bigint, 0), coalesce((v_op->>'output_tokens')::bigint, 0),
                  coalesce((v_op->>'total_tokens')::bigint, 0), coalesce((v_op->>'images')::int, 0),
                  coalesce((v_op->>'seconds')::int, 0), v_charge, p_now);
        if coalesce((v_op->>'reconcile')::boolean, false) and v_hold."key_id" is not null then
          insert into "reconciliation" ("key_id", "request_id", "marked_at") values (v_hold."key_id", v_req, p_now);
        end if;
      end if;
      v_results := v_results || jsonb_build_object('ok', true, 'credit_charged', v_charge::text, 'balance_after', v_balance::text);

    elsif v_op->>'op' = 'refund' then
      select * into v_hold from "hold" where "request_id" = v_req and "account_id" = p_account;
      if not found or v_hold."status" <> 'settled' then
        v_results := v_results || jsonb_build_object('ok', false, 'code', 'not_found');
        continue;
      end if;
      if v_hold."refunded" > 0 or coalesce(v_hold."charged", 0) = 0 then
        v_results := v_results || jsonb_build_object('ok', true, 'replay', true,
          'credit_refunded', v_hold."refunded"::text, 'balance_after', v_balance::text);
        continue;
      end if;
      v_balance := v_balance + v_hold."charged";
      update "hold" set "refunded" = v_hold."charged" where "request_id" = v_req;
      insert into "ledger_entry" ("account_id", "kind", "amount", "balance_after", "reference", "key_id", "created_at")
        values (p_account, 'refund', v_hold."charged", v_balance, 'refund:' || v_req, v_hold."key_id", p_now);
      update "usage_record" set "credits" = 0 where "request_id" = v_req;
      if v_hold."key_id" is not null then
        update "key_usage_window" u set "spent" = u."spent" - v_hold."charged"
         where u."key_id" = v_hold."key_id"
           and (u."period", u."window_start") in (('daily', v_hold."day_start"), ('monthly', v_hold."month_start"),
                                                  ('lifetime', date '1970-01-01'));
      end if;
      v_results := v_results || jsonb_build_object('ok', true, 'credit_refunded', v_hold."charged"::text, 'balance_after', v_balance::text);

    else
      v_results := v_results || jsonb_build_object('ok', false, 'code', 'invalid_request');
    end if;
  end loop;

  update "wallet" set "balance" = v_balance, "updated_at" = p_now where "account_id" = p_account;
  return v_results;
end
$fn$`;
