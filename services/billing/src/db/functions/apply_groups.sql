-- apply_groups(groups, now): the one place where request money moves. Applies the operations of
-- one or more accounts in one statement (so one transaction, one commit), set-based: a batch costs
-- about ten statements however many operations it carries, where one statement per row written
-- cost Postgres more than the rows themselves (executor start-up, constraint set-up, triggers).
--
-- groups: jsonb array of {"account": uuid, "ops": [...]}; each op one of
--   {"op":"authorize","request_id","key_id","amount","worst_tokens","text","endpoint","model","unit","price",
--    "lease_owner"?,"client_request_id"?,"rate_now_ms"?,"rate_per_second"?,"rate_per_minute"?}
--   {"op":"settle","request_id","units","input_tokens","output_tokens","reconcile"}
--   {"op":"release","request_id"}
--   {"op":"refund","request_id"}
-- Answers an object from each group's position (1-based, as sent) to its results, in op order:
--   {"ok":true,"balance_after","held"?,"credit_charged"?,"credit_refunded"?,"replay"?}
--   {"ok":false,"code","limit_type"?,"period"?,"retry_after_seconds"?}
--
-- How: (1) every wallet of the batch is locked in one statement, in account order (two batches
-- that share accounts wait for each other instead of deadlocking), with what the accounts need
-- (zone, rate limits, whether they have alerts); (2) what the operations refer to is read in two
-- statements, after the locks: the holds of their request ids and the state of their keys; (3) each
-- operation is decided in order in memory, exactly as one at a time would be (a hold made earlier
-- in the batch is a replay later, a settle sees the holds before it, balances run on); (4) the
-- rows are written once per table: holds, closed holds, ledger entries, usage records, wallets,
-- rate windows. Each op is idempotent by its request id: a replay answers the first outcome and
-- moves nothing. Rare paths keep statements of their own: keys with limits (their usage windows),
-- reconciliation marks, a rate refusal's wait, refunds' usage records.
-- Its statements run with generic plans of index probes: planning them again on every call (the
-- custom plans Postgres tries first and keeps when a generic plan of an array parameter looks
-- dearer) cost more than running them, and a generic plan made while a table was small (a new
-- database) must not stay a sequential scan of it for the life of the session.
create or replace function "apply_groups"(p_groups jsonb, p_now timestamptz) returns jsonb
language plpgsql set search_path from current set plan_cache_mode = force_generic_plan set enable_seqscan = off as $fn$
declare
  v_out_keys text[] := '{}';
  v_out_vals jsonb[] := '{}';
  v_accounts jsonb;     -- account -> {balance, tz, rps, rpm, alerts}
  v_holds jsonb;        -- request id -> hold, as stored before this batch
  v_keys jsonb;         -- key id -> {revoked, expired, limited, blocked, stale}
  -- The holds this batch makes, and the stored holds it changes: the batch's view of a hold is
  -- the latest of these, then v_holds. Arrays, appended and updated in place.
  v_new_ids text[] := '{}';
  v_new jsonb[] := '{}';
  v_changed_ids text[] := '{}';
  v_changed jsonb[] := '{}';
  v_entries jsonb[] := '{}';      -- ledger entries, in order
  v_usage jsonb[] := '{}';        -- usage records
  v_refunded text[] := '{}';      -- usage records charged back
  v_marked uuid[] := '{}';        -- keys this batch marked for reconciliation
  v_used uuid[] := '{}';
  v_alerting uuid[] := '{}';
  v_wallet_ids uuid[] := '{}';
  v_wallet_balances bigint[] := '{}';
  v_rate_ids uuid[] := '{}';
  v_rate_second bigint[] := '{}';  -- window start, count, per account: four arrays in step
  v_rate_second_count integer[] := '{}';
  v_rate_minute bigint[] := '{}';
  v_rate_minute_count integer[] := '{}';
  v_rate_read boolean;   -- the account's windows are locked (the first counted op did it)
  v_rate_dirty boolean;  -- counted further in memory: written back with the batch
  v_second bigint;
  v_second_count integer;
  v_minute bigint;
  v_minute_count integer;
  v_order integer[];     -- the groups' positions, in account order
  v_group jsonb;
  v_position integer;
  v_ops jsonb;
  v_i integer;
  v_done text;
  v_account uuid;
  v_acct jsonb;
  v_results jsonb[];
  v_start_balance bigint;
  v_balance bigint;
  v_tz text;
  v_day date;
  v_month date;
  v_op jsonb;
  v_hold jsonb;
  v_at integer;
  v_key jsonb;
  v_lim record;
  v_fail jsonb;
  v_amount bigint;
  v_charge bigint;
  v_units numeric;
  v_tokens bigint;
  v_delta bigint;
  v_req text;
  v_key_id uuid;
  v_kind text;
  v_now_ms bigint;
  v_per_second integer;
  v_per_minute integer;
  v_verdict record;
  v_ids bigint[];
  v_entry "ledger_entry"%rowtype;
  v_account_ids uuid[] := '{}';
  v_request_ids text[] := '{}';
  v_key_ids uuid[] := '{}';
begin
  -- Arrays, so each read below is an index probe per id whatever the planner guesses of the JSON.
  -- What the batch refers to, gathered without a statement (a lone request pays for none).
  for v_i in 0 .. jsonb_array_length(p_groups) - 1 loop
    v_group := p_groups->v_i;
    v_account_ids := v_account_ids || (v_group->>'account')::uuid;
    v_ops := v_group->'ops';
    for v_at in 0 .. jsonb_array_length(v_ops) - 1 loop
      v_op := v_ops->v_at;
      v_request_ids := v_request_ids || (v_op->>'request_id');
      if v_op->>'op' = 'authorize' and v_op->>'key_id' is not null then
        v_key_ids := v_key_ids || (v_op->>'key_id')::uuid;
      end if;
    end loop;
  end loop;
  v_order := case when cardinality(v_account_ids) = 1 then array[1]
                  else array(select o from unnest(v_account_ids) with ordinality as a(id, o) order by a.id) end;
  -- (1) The wallets, locked in account order.
  select coalesce(jsonb_object_agg(l."account_id", jsonb_build_object('balance', l."balance", 'tz', l."time_zone",
           'rps', l."rate_per_second", 'rpm', l."rate_per_minute",
           'alerts', exists (select 1 from "alert" x where x."account_id" = l."account_id" and x."cleared_at" is null))), '{}')
    into v_accounts
    from (select w."account_id", w."balance", a."time_zone", a."rate_per_second", a."rate_per_minute"
            from "wallet" w join "account" a on a."id" = w."account_id"
           where w."account_id" = any(v_account_ids)
           order by w."account_id" for update of w) l;

  -- (2) What the operations refer to, as this transaction sees it under those locks.
  select (select coalesce(jsonb_object_agg(h."request_id", to_jsonb(h)), '{}') from "hold" h where h."request_id" = any(v_request_ids)),
         (select coalesce(jsonb_object_agg(k."id", jsonb_build_object(
                   'revoked', k."revoked_at" is not null, 'expired', coalesce(k."expires_at" <= p_now, false),
                   'limited', exists (select 1 from "key_limit" l where l."key_id" = k."id"),
                   'blocked', exists (select 1 from "reconciliation" r where r."key_id" = k."id" and r."resolved_at" is null),
                   'stale', k."last_used_at" is null or k."last_used_at" < p_now - interval '1 minute')), '{}')
            from "api_key" k where k."id" = any(v_key_ids))
    into v_holds, v_keys;

  -- (3) Each operation, in order: accounts in the order they were locked.
  foreach v_position in array v_order loop
    v_group := p_groups->(v_position - 1);
    v_ops := v_group->'ops';
    v_account := (v_group->>'account')::uuid;
    v_acct := v_accounts->(v_account::text);
    v_out_keys := v_out_keys || v_position::text;
    if v_acct is null then
      v_out_vals := v_out_vals ||
        (select coalesce(jsonb_agg(jsonb_build_object('ok', false, 'code', 'not_found')), '[]') from jsonb_array_elements(v_ops));
      continue;
    end if;
    v_start_balance := (v_acct->>'balance')::bigint;
    v_balance := v_start_balance;
    v_tz := v_acct->>'tz';
    v_day := (p_now at time zone v_tz)::date;
    v_month := date_trunc('month', p_now at time zone v_tz)::date;
    if (v_acct->>'alerts')::boolean then
      v_alerting := v_alerting || v_account;
    end if;
    v_results := '{}';
    v_rate_read := false;
    v_rate_dirty := false;

    for v_i in 0 .. jsonb_array_length(v_ops) - 1 loop
      v_op := v_ops->v_i;
      v_req := v_op->>'request_id';
      -- This batch's view of the hold: made or changed earlier in the batch, else as stored.
      v_at := array_position(v_new_ids, v_req);
      if v_at is not null then
        v_hold := v_new[v_at];
      else
        v_at := array_position(v_changed_ids, v_req);
        v_hold := case when v_at is not null then v_changed[v_at] else v_holds->v_req end;
        v_at := null;
      end if;
      v_fail := null;

      if v_op->>'op' = 'authorize' then
        v_key_id := (v_op->>'key_id')::uuid;
        v_key := coalesce(v_keys->(v_key_id::text), '{}'::jsonb);
        -- A hold names a key that exists (the hold's row has no foreign key: this is its check, and
        -- the same failure).
        if v_key_id is not null and v_keys->(v_key_id::text) is null then
          raise exception 'no such API key: %', v_key_id using errcode = 'foreign_key_violation';
        end if;
        -- A request sent again (its first answer was lost, or twice in this batch) finds its hold,
        -- before anything counts it.
        if v_hold is not null then
          v_results := v_results || jsonb_build_object('ok', (v_hold->>'account_id')::uuid = v_account, 'replay', true,
            'balance_after', v_balance::text, 'held', v_hold->>'amount',
            'code', case when (v_hold->>'account_id')::uuid = v_account then null else 'invalid_request' end);
          continue;
        end if;
        -- A key revoked or expired is refused before anything counts or holds (auth comes first).
        if coalesce((v_key->>'revoked')::boolean, false) or coalesce((v_key->>'expired')::boolean, false) then
          v_results := v_results || jsonb_build_object('ok', false,
            'code', case when (v_key->>'revoked')::boolean then 'auth_revoked' else 'auth_expired' end);
          continue;
        end if;
        -- The account rate limit, counted when the caller asks (the gateway's hot path): every
        -- request counts once, refused ones included; refused here, nothing is held. The account's
        -- two windows are read and locked once per batch, counted here (a window of another second
        -- or minute starts again at one) and written back with the batch.
        if v_op ? 'rate_now_ms' then
          v_now_ms := (v_op->>'rate_now_ms')::bigint;
          if not v_rate_read then
            -- The first counted op of the account in this batch counts itself in the stored
            -- windows and locks them; the ones after it count in memory.
            with w as (
              insert into "rate_window" as w ("account_id", "kind", "window_start", "count")
                values (v_account, 'second', v_now_ms / 1000, 1), (v_account, 'minute', v_now_ms / 60000, 1)
                on conflict ("account_id", "kind") do update
                  set "count" = case when w."window_start" = excluded."window_start" then w."count" + 1 else 1 end,
                      "window_start" = excluded."window_start"
                returning w."kind", w."window_start", w."count")
            select max(w."window_start") filter (where w."kind" = 'second'), max(w."count") filter (where w."kind" = 'second'),
                   max(w."window_start") filter (where w."kind" = 'minute'), max(w."count") filter (where w."kind" = 'minute')
              into v_second, v_second_count, v_minute, v_minute_count from w;
            v_rate_read := true;
          else
            v_second_count := case when v_second = v_now_ms / 1000 then v_second_count + 1 else 1 end;
            v_second := v_now_ms / 1000;
            v_minute_count := case when v_minute = v_now_ms / 60000 then v_minute_count + 1 else 1 end;
            v_minute := v_now_ms / 60000;
            v_rate_dirty := true;
          end if;
          v_per_second := coalesce((v_acct->>'rps')::integer, (v_op->>'rate_per_second')::integer);
          v_per_minute := coalesce((v_acct->>'rpm')::integer, (v_op->>'rate_per_minute')::integer);
          -- rate_verdict says which limit refuses and the wait; asked only past a limit.
          if v_second_count > v_per_second or v_minute_count > v_per_minute then
            select * into v_verdict from "rate_verdict"(v_second_count, v_minute_count, v_per_second, v_per_minute, v_now_ms);
            if v_verdict.limit_type is not null then
              v_results := v_results || jsonb_build_object('ok', false, 'code', 'rate_limit_exceeded',
                'limit_type', v_verdict.limit_type, 'retry_after_seconds', v_verdict.retry_after);
              continue;
            end if;
          end if;
        end if;
        v_amount := (v_op->>'amount')::bigint;

        if (v_op->>'text')::boolean and (coalesce((v_key->>'blocked')::boolean, false) or v_key_id = any(v_marked)) then
          v_fail := jsonb_build_object('ok', false, 'code', 'api_key_quota_reconciliation_required');
        end if;

        if v_fail is null and coalesce((v_key->>'limited')::boolean, false) then
          for v_lim in
            select l."limit_type", l."period", l."value",
                   coalesce(u."spent", 0) as spent, coalesce(u."requests", 0) as requests,
                   coalesce(u."tokens", 0) + coalesce(u."tokens_reserved", 0) as tokens
              from "key_limit" l
              left join "key_usage_window" u on u."key_id" = l."key_id" and u."period" = l."period"
                and u."window_start" = case l."period" when 'daily' then v_day when 'monthly' then v_month else date '1970-01-01' end
             where l."key_id" = v_key_id
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
        v_new_ids := v_new_ids || v_req;
        v_new := v_new || jsonb_build_object('request_id', v_req, 'account_id', v_account, 'key_id', v_key_id, 'amount', v_amount,
          'worst_tokens', coalesce((v_op->>'worst_tokens')::bigint, 0), 'unit', v_op->>'unit', 'price', (v_op->>'price')::bigint,
          'endpoint', v_op->>'endpoint', 'model', v_op->>'model', 'status', 'open', 'refunded', 0,
          'day_start', v_day, 'month_start', v_month, 'created_at', p_now,
          'windowed', coalesce((v_key->>'limited')::boolean, false), 'client_request_id', v_op->>'client_request_id',
          'lease_owner', v_op->>'lease_owner');
        v_entries := v_entries || jsonb_build_object('account_id', v_account, 'kind', 'hold', 'amount', -v_amount,
          'balance_after', v_balance, 'reference', 'hold:' || v_req, 'key_id', v_key_id, 'created_at', p_now);
        if coalesce((v_key->>'limited')::boolean, false) then
          insert into "key_usage_window" as u ("key_id", "period", "window_start", "spent", "requests", "tokens_reserved")
            select v_key_id, p.period, p.start, v_amount, 1, coalesce((v_op->>'worst_tokens')::bigint, 0)
              from (values ('daily', v_day), ('monthly', v_month), ('lifetime', date '1970-01-01')) as p(period, start)
            on conflict ("key_id", "period", "window_start") do update
              set "spent" = u."spent" + excluded."spent", "requests" = u."requests" + 1,
                  "tokens_reserved" = u."tokens_reserved" + excluded."tokens_reserved";
        end if;
        if v_key_id is not null and coalesce((v_key->>'stale')::boolean, false) and not v_key_id = any(v_used) then
          v_used := v_used || v_key_id;
        end if;
        v_results := v_results || jsonb_build_object('ok', true, 'held', v_amount::text, 'balance_after', v_balance::text);
        continue;

      elsif v_op->>'op' in ('settle', 'release') then
        if v_hold is null or (v_hold->>'account_id')::uuid <> v_account then
          v_results := v_results || jsonb_build_object('ok', false, 'code', 'not_found');
          continue;
        end if;
        if v_hold->>'status' <> 'open' then
          v_results := v_results || jsonb_build_object('ok', true, 'replay', true,
            'credit_charged', coalesce((v_hold->>'charged')::bigint, 0)::text, 'balance_after', v_hold->>'balance_after');
          continue;
        end if;
        -- The charge is the usage at the price and unit stored with the hold: the caller sends usage
        -- only. Success without usage (reconcile) is charged as zero units: the minimum.
        v_units := case when v_op->>'op' = 'settle' and not coalesce((v_op->>'reconcile')::boolean, false)
                        then coalesce((v_op->>'units')::numeric, 0) else 0 end;
        v_tokens := case when v_hold->>'unit' = 'million_tokens' then v_units::bigint else 0 end;
        -- The hold is the worst case; a charge above it takes at most what the wallet still has
        -- (compared in numeric, so no usage can overflow it).
        v_charge := case when v_op->>'op' = 'settle'
                         then least("credits_for"(v_hold->>'unit', v_units, (v_hold->>'price')::numeric), (v_hold->>'amount')::bigint + v_balance)
                         else 0 end;
        v_delta := (v_hold->>'amount')::bigint - v_charge;
        v_balance := v_balance + v_delta;
        v_kind := case when v_op->>'op' = 'settle' then 'settled' else 'released' end;
        v_hold := v_hold || jsonb_build_object('status', v_kind, 'charged', v_charge, 'balance_after', v_balance, 'settled_at', p_now);
        v_entries := v_entries || jsonb_build_object('account_id', v_account, 'kind', v_op->>'op', 'amount', v_delta,
          'balance_after', v_balance, 'reference', (v_op->>'op') || ':' || v_req, 'key_id', v_hold->'key_id', 'created_at', p_now);
        if (v_hold->>'windowed')::boolean then
          -- Settle against the windows the hold was counted in, even across midnight.
          update "key_usage_window" u
             set "spent" = u."spent" - v_delta,
                 "tokens" = u."tokens" + v_tokens,
                 "tokens_reserved" = greatest(0, u."tokens_reserved" - (v_hold->>'worst_tokens')::bigint),
                 "requests" = u."requests" - case when v_op->>'op' = 'release' then 1 else 0 end
           where u."key_id" = (v_hold->>'key_id')::uuid
             and (u."period", u."window_start") in (('daily', (v_hold->>'day_start')::date), ('monthly', (v_hold->>'month_start')::date),
                                                    ('lifetime', date '1970-01-01'));
        end if;
        if v_op->>'op' = 'settle' then
          v_usage := v_usage || jsonb_build_object('request_id', v_req, 'account_id', v_account, 'key_id', v_hold->'key_id',
            'model', v_hold->'model', 'endpoint', v_hold->'endpoint',
            'input_tokens', coalesce((v_op->>'input_tokens')::bigint, 0), 'output_tokens', coalesce((v_op->>'output_tokens')::bigint, 0),
            'total_tokens', v_tokens, 'images', case when v_hold->>'unit' = 'image' then least(v_units, 2147483647)::int else 0 end,
            'seconds', case when v_hold->>'unit' = 'second' then least(v_units, 2147483647)::int else 0 end,
            'credits', v_charge, 'created_at', p_now);
          if coalesce((v_op->>'reconcile')::boolean, false) and v_hold->>'key_id' is not null then
            insert into "reconciliation" ("key_id", "request_id", "marked_at") values ((v_hold->>'key_id')::uuid, v_req, p_now);
            v_marked := v_marked || (v_hold->>'key_id')::uuid;
          end if;
        end if;
        v_results := v_results || jsonb_build_object('ok', true, 'credit_charged', v_charge::text, 'balance_after', v_balance::text,
                                                     'unit', v_hold->>'unit');

      elsif v_op->>'op' = 'refund' then
        if v_hold is null or (v_hold->>'account_id')::uuid <> v_account or v_hold->>'status' <> 'settled' then
          v_results := v_results || jsonb_build_object('ok', false, 'code', 'not_found');
          continue;
        end if;
        if (v_hold->>'refunded')::bigint > 0 or coalesce((v_hold->>'charged')::bigint, 0) = 0 then
          v_results := v_results || jsonb_build_object('ok', true, 'replay', true,
            'credit_refunded', v_hold->>'refunded', 'balance_after', v_balance::text);
          continue;
        end if;
        v_charge := (v_hold->>'charged')::bigint;
        v_balance := v_balance + v_charge;
        v_hold := v_hold || jsonb_build_object('refunded', v_charge);
        v_refunded := v_refunded || v_req;
        v_entries := v_entries || jsonb_build_object('account_id', v_account, 'kind', 'refund', 'amount', v_charge,
          'balance_after', v_balance, 'reference', 'refund:' || v_req, 'key_id', v_hold->'key_id', 'created_at', p_now);
        if (v_hold->>'windowed')::boolean then
          update "key_usage_window" u set "spent" = u."spent" - v_charge
           where u."key_id" = (v_hold->>'key_id')::uuid
             and (u."period", u."window_start") in (('daily', (v_hold->>'day_start')::date), ('monthly', (v_hold->>'month_start')::date),
                                                    ('lifetime', date '1970-01-01'));
        end if;
        v_results := v_results || jsonb_build_object('ok', true, 'credit_refunded', v_charge::text, 'balance_after', v_balance::text);

      else
        v_results := v_results || jsonb_build_object('ok', false, 'code', 'invalid_request');
        continue;
      end if;

      -- A settle, release or refund changed the hold: where this batch keeps it.
      v_at := array_position(v_new_ids, v_req);
      if v_at is not null then
        v_new[v_at] := v_hold;
      else
        v_at := array_position(v_changed_ids, v_req);
        if v_at is not null then
          v_changed[v_at] := v_hold;
        else
          v_changed_ids := v_changed_ids || v_req;
          v_changed := v_changed || v_hold;
        end if;
      end if;
    end loop;

    v_out_vals := v_out_vals || to_jsonb(v_results);
    if v_balance <> v_start_balance then
      v_wallet_ids := v_wallet_ids || v_account;
      v_wallet_balances := v_wallet_balances || v_balance;
    end if;
    if v_rate_dirty then
      v_rate_ids := v_rate_ids || v_account;
      v_rate_second := v_rate_second || v_second;
      v_rate_second_count := v_rate_second_count || v_second_count;
      v_rate_minute := v_rate_minute || v_minute;
      v_rate_minute_count := v_rate_minute_count || v_minute_count;
    end if;
  end loop;

  -- (4) The rows, once per table. Holds made in this batch are inserted as the batch left them
  -- (closed already, if a later op closed them); stored holds are updated.
  if cardinality(v_new) > 0 then
    insert into "hold" ("request_id", "account_id", "key_id", "amount", "worst_tokens", "unit", "price", "endpoint", "model",
                        "status", "charged", "refunded", "balance_after", "day_start", "month_start", "created_at", "settled_at",
                        "windowed", "client_request_id", "lease_owner")
    select h."request_id", h."account_id", h."key_id", h."amount", h."worst_tokens", h."unit", h."price", h."endpoint", h."model",
           h."status", h."charged", h."refunded", h."balance_after", h."day_start", h."month_start", h."created_at", h."settled_at",
           h."windowed", h."client_request_id", h."lease_owner"
      from unnest(v_new) as n(j) cross join lateral jsonb_populate_record(null::"hold", n.j) as h;
  end if;
  if cardinality(v_changed) > 0 then
    update "hold" t
       set "status" = h."status", "charged" = h."charged", "balance_after" = h."balance_after",
           "settled_at" = h."settled_at", "refunded" = h."refunded"
      from unnest(v_changed) as c(j) cross join lateral jsonb_populate_record(null::"hold", c.j) as h
     where t."request_id" = h."request_id";
  end if;
  if cardinality(v_entries) > 0 then
    -- The entries of accounts with alerts are checked by alert_on_entry below, in order; the
    -- ledger's trigger checks only the entries other writers make.
    v_done := set_config('billing.alerts_checked', 'on', true);
    if cardinality(v_alerting) = 0 then
      insert into "ledger_entry" ("account_id", "kind", "amount", "balance_after", "reference", "key_id", "created_at")
      select x."account_id", x."kind", x."amount", x."balance_after", x."reference", x."key_id", x."created_at"
        from unnest(v_entries) with ordinality as e(j, ord) cross join lateral jsonb_populate_record(null::"ledger_entry", e.j) as x
       order by e.ord;
    else
      with e as (
        insert into "ledger_entry" ("account_id", "kind", "amount", "balance_after", "reference", "key_id", "created_at")
        select x."account_id", x."kind", x."amount", x."balance_after", x."reference", x."key_id", x."created_at"
          from unnest(v_entries) with ordinality as e(j, ord) cross join lateral jsonb_populate_record(null::"ledger_entry", e.j) as x
         order by e.ord
        returning "id", "account_id")
      select array_agg(e."id") filter (where e."account_id" = any(v_alerting)) into v_ids from e;
    end if;
    v_done := set_config('billing.alerts_checked', '', true);
    if v_ids is not null then
      for v_entry in select * from "ledger_entry" where "id" = any(v_ids) order by "id" loop
        perform "alert_on_entry"(v_entry);
      end loop;
    end if;
  end if;
  if cardinality(v_usage) > 0 then
    insert into "usage_record" ("request_id", "account_id", "key_id", "model", "endpoint", "input_tokens", "output_tokens",
                                "total_tokens", "images", "seconds", "credits", "created_at")
    select u."request_id", u."account_id", u."key_id", u."model", u."endpoint", u."input_tokens", u."output_tokens",
           u."total_tokens", u."images", u."seconds", case when u."request_id" = any(v_refunded) then 0 else u."credits" end, u."created_at"
      from unnest(v_usage) as n(j) cross join lateral jsonb_populate_record(null::"usage_record", n.j) as u;
  end if;
  if cardinality(v_refunded) > 0 then
    update "usage_record" set "credits" = 0 where "request_id" = any(v_refunded);
  end if;
  if cardinality(v_wallet_ids) = 1 then
    update "wallet" set "balance" = v_wallet_balances[1], "updated_at" = p_now where "account_id" = v_wallet_ids[1];
  elsif cardinality(v_wallet_ids) > 1 then
    update "wallet" w set "balance" = b.balance, "updated_at" = p_now
      from unnest(v_wallet_ids, v_wallet_balances) as b(account_id, balance)
     where w."account_id" = b.account_id;
  end if;
  if cardinality(v_rate_ids) > 0 then
    update "rate_window" w
       set "window_start" = case w."kind" when 'second' then r.second else r.minute end,
           "count" = case w."kind" when 'second' then r.second_count else r.minute_count end
      from unnest(v_rate_ids, v_rate_second, v_rate_second_count, v_rate_minute, v_rate_minute_count)
           as r(account_id, second, second_count, minute, minute_count)
     where w."account_id" = r.account_id;
  end if;
  -- Last use is for people (the dashboard): a minute's precision, written only when older.
  if cardinality(v_used) > 0 then
    update "api_key" set "last_used_at" = p_now
     where "id" = any(v_used) and ("last_used_at" is null or "last_used_at" < p_now - interval '1 minute');
  end if;
  if cardinality(v_out_keys) = 1 then
    return jsonb_build_object(v_out_keys[1], v_out_vals[1]);
  end if;
  return coalesce((select jsonb_object_agg(k, v) from unnest(v_out_keys, v_out_vals) as o(k, v)), '{}'::jsonb);
end
$fn$
