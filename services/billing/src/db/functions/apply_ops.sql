-- apply_ops(account, ops, now): the one place where request money moves. Applies a batch of
-- operations on one account in one statement, so in one transaction that takes the wallet row
-- lock once. Each op is idempotent by its request id: a replay returns the first outcome and
-- moves nothing.
--
-- ops: jsonb array, each one of
--   {"op":"authorize","request_id","key_id","amount","worst_tokens","text","endpoint","model","unit","price",
--    "lease_owner"?,"rate_now_ms"?,"rate_per_second"?,"rate_per_minute"?}
--   {"op":"settle","request_id","units","input_tokens","output_tokens","reconcile"}
--   {"op":"release","request_id"}
--   {"op":"refund","request_id"}
-- Returns a jsonb array of results in the same order:
--   {"ok":true,"balance_after","held"?,"credit_charged"?,"credit_refunded"?,"replay"?}
--   {"ok":false,"code","limit_type"?,"period"?,"retry_after_seconds"?}
--
-- Statements cost more than their work on the request path, so a hold learns whether it exists
-- already and its key's state in one statement, the rate windows are counted here (with the
-- account's limits read with its wallet), usage windows are kept only for keys with limits
-- (a hold records whether it was counted: "windowed"), and a key's last use is written only when
-- older than a minute.
create or replace function "apply_ops"(p_account uuid, p_ops jsonb, p_now timestamptz) returns jsonb
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
  v_units numeric;
  v_tokens bigint;
  v_delta bigint;
  v_req text;
  v_key uuid;
  v_used uuid[] := '{}';
  v_rate record;
  v_per_second integer;
  v_per_minute integer;
  v_count_second integer;
  v_count_minute integer;
  v_replay_account uuid;
  v_replay_amount bigint;
  v_revoked boolean;
  v_expired boolean;
  v_limited boolean;
  v_blocked boolean;
  v_stale boolean;
begin
  -- One lock per batch: every change to this account's money and key windows happens under it.
  select w."balance", a."time_zone", a."rate_per_second", a."rate_per_minute" into v_balance, v_tz, v_per_second, v_per_minute
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
      v_key := (v_op->>'key_id')::uuid;
      -- What a hold needs to know besides the wallet, in one statement (on the request path a
      -- statement costs more than its work here): whether it exists already (a request sent again,
      -- maybe within this batch) and its key's state, as this transaction sees it (a settle earlier
      -- in the batch may have opened a reconciliation).
      select h."account_id", h."amount", coalesce(k."revoked_at" is not null, false), coalesce(k."expires_at" <= p_now, false),
             exists (select 1 from "key_limit" l where l."key_id" = k."id"),
             exists (select 1 from "reconciliation" r where r."key_id" = k."id" and r."resolved_at" is null),
             coalesce(k."last_used_at" is null or k."last_used_at" < p_now - interval '1 minute', false)
        into v_replay_account, v_replay_amount, v_revoked, v_expired, v_limited, v_blocked, v_stale
        from (select 1) as one
        left join "hold" h on h."request_id" = v_req
        left join "api_key" k on k."id" = v_key;
      -- A request sent again (its first answer was lost) finds its hold, before anything counts it.
      if v_replay_account is not null then
        v_results := v_results || jsonb_build_object('ok', v_replay_account = p_account, 'replay', true,
          'balance_after', v_balance::text, 'held', v_replay_amount::text,
          'code', case when v_replay_account = p_account then null else 'invalid_request' end);
        continue;
      end if;
      -- A key revoked or expired is refused before anything counts or holds (auth comes first).
      if v_revoked or v_expired then
        v_results := v_results || jsonb_build_object('ok', false,
          'code', case when v_revoked then 'auth_revoked' else 'auth_expired' end);
        continue;
      end if;
      -- The account rate limit, counted when the caller asks (the gateway's hot path): every
      -- request counts once, refused ones included; refused here, nothing is held. The windows
      -- as count_rate keeps them, with the account's own limits read with its wallet.
      if v_op ? 'rate_now_ms' then
        insert into "rate_window" as w ("account_id", "kind", "window_start", "count")
          values (p_account, 'second', (v_op->>'rate_now_ms')::bigint / 1000, 1)
          on conflict ("account_id", "kind") do update
            set "count" = case when w."window_start" = excluded."window_start" then w."count" + 1 else 1 end,
                "window_start" = excluded."window_start"
          returning "count" into v_count_second;
        insert into "rate_window" as w ("account_id", "kind", "window_start", "count")
          values (p_account, 'minute', (v_op->>'rate_now_ms')::bigint / 60000, 1)
          on conflict ("account_id", "kind") do update
            set "count" = case when w."window_start" = excluded."window_start" then w."count" + 1 else 1 end,
                "window_start" = excluded."window_start"
          returning "count" into v_count_minute;
        select * into v_rate from "rate_verdict"(v_count_second, v_count_minute,
          coalesce(v_per_second, (v_op->>'rate_per_second')::integer),
          coalesce(v_per_minute, (v_op->>'rate_per_minute')::integer), (v_op->>'rate_now_ms')::bigint);
        if v_rate.limit_type is not null then
          v_results := v_results || jsonb_build_object('ok', false, 'code', 'rate_limit_exceeded',
            'limit_type', v_rate.limit_type, 'retry_after_seconds', v_rate.retry_after);
          continue;
        end if;
      end if;
      v_amount := (v_op->>'amount')::bigint;

      if (v_op->>'text')::boolean and v_blocked then
        v_fail := jsonb_build_object('ok', false, 'code', 'api_key_quota_reconciliation_required');
      end if;

      if v_fail is null and v_limited then
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
                          "model", "status", "day_start", "month_start", "created_at", "windowed", "lease_owner")
        values (v_req, p_account, v_key, v_amount, coalesce((v_op->>'worst_tokens')::bigint, 0), v_op->>'unit',
                (v_op->>'price')::bigint, v_op->>'endpoint', v_op->>'model', 'open', v_day, v_month, p_now,
                v_limited, v_op->>'lease_owner');
      insert into "ledger_entry" ("account_id", "kind", "amount", "balance_after", "reference", "key_id", "created_at")
        values (p_account, 'hold', -v_amount, v_balance, 'hold:' || v_req, v_key, p_now);
      if v_limited then
        insert into "key_usage_window" as u ("key_id", "period", "window_start", "spent", "requests", "tokens_reserved")
          select v_key, p.period, p.start, v_amount, 1, coalesce((v_op->>'worst_tokens')::bigint, 0)
            from (values ('daily', v_day), ('monthly', v_month), ('lifetime', date '1970-01-01')) as p(period, start)
          on conflict ("key_id", "period", "window_start") do update
            set "spent" = u."spent" + excluded."spent", "requests" = u."requests" + 1,
                "tokens_reserved" = u."tokens_reserved" + excluded."tokens_reserved";
      end if;
      if v_key is not null and v_stale and not v_key = any(v_used) then
        v_used := v_used || v_key;
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
      -- The charge is the usage at the price and unit stored with the hold: the caller sends usage
      -- only. Success without usage (reconcile) is charged as zero units: the minimum.
      v_units := case when v_op->>'op' = 'settle' and not coalesce((v_op->>'reconcile')::boolean, false)
                      then coalesce((v_op->>'units')::numeric, 0) else 0 end;
      v_tokens := case when v_hold."unit" = 'million_tokens' then v_units::bigint else 0 end;
      -- The hold is the worst case; a charge above it takes at most what the wallet still has
      -- (compared in numeric, so no usage can overflow it).
      v_charge := case when v_op->>'op' = 'settle'
                       then least("credits_for"(v_hold."unit", v_units, v_hold."price"), v_hold."amount" + v_balance)
                       else 0 end;
      v_delta := v_hold."amount" - v_charge;
      v_balance := v_balance + v_delta;
      update "hold" set "status" = case when v_op->>'op' = 'settle' then 'settled' else 'released' end,
                        "charged" = v_charge, "balance_after" = v_balance, "settled_at" = p_now
        where "request_id" = v_req;
      insert into "ledger_entry" ("account_id", "kind", "amount", "balance_after", "reference", "key_id", "created_at")
        values (p_account, case when v_op->>'op' = 'settle' then 'settle' else 'release' end, v_delta, v_balance,
                v_op->>'op' || ':' || v_req, v_hold."key_id", p_now);
      if v_hold."windowed" then
        -- Settle against the windows the hold was counted in, even across midnight.
        update "key_usage_window" u
           set "spent" = u."spent" - v_delta,
               "tokens" = u."tokens" + v_tokens,
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
                  v_tokens, case when v_hold."unit" = 'image' then least(v_units, 2147483647)::int else 0 end,
                  case when v_hold."unit" = 'second' then least(v_units, 2147483647)::int else 0 end, v_charge, p_now);
        if coalesce((v_op->>'reconcile')::boolean, false) and v_hold."key_id" is not null then
          insert into "reconciliation" ("key_id", "request_id", "marked_at") values (v_hold."key_id", v_req, p_now);
        end if;
      end if;
      v_results := v_results || jsonb_build_object('ok', true, 'credit_charged', v_charge::text, 'balance_after', v_balance::text,
                                                   'unit', v_hold."unit");

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
      if v_hold."windowed" then
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
  -- Last use is for people (the dashboard): a minute's precision, written only when older.
  if cardinality(v_used) > 0 then
    update "api_key" set "last_used_at" = p_now
     where "id" = any(v_used) and ("last_used_at" is null or "last_used_at" < p_now - interval '1 minute');
  end if;
  return v_results;
end
$fn$
