-- alert_on_entry: the account's alerts, checked for a ledger entry in the transaction that writes
-- it (so under the wallet's lock, once per entry, never twice, in the order of the entries).
-- apply_groups (the request path) calls it for the entries of accounts that have alerts, known
-- from the wallet lock it takes once per batch; the trigger below calls it for every entry other
-- writers make (top-ups, charges, adjustments), where an account without alerts costs one index
-- probe.
--
-- Low balance: an armed alert whose threshold the entry's balance_after is below alerts and is
-- disarmed; a top-up that leaves the balance at or above the threshold arms it again. The balance
-- is the one requests are refused against: open holds included.
--
-- Monthly budget: the credits charged in the calendar month of the entry (the account's time
-- zone): a settle's charge, a charge or adjustment taken from the wallet, less refunds. Each
-- percentage alerts once a month, when the month's spending reaches it; a new month starts again.
--
-- Each crossing is one `alert_event` row: its webhook body, delivered and published on NATS by
-- billing's alert sender (`src/domain/alerts.ts`).
create or replace function "alert_on_entry"(p_entry "ledger_entry") returns void
language plpgsql set search_path from current as $fn$
declare
  v_alert "alert"%rowtype;
  v_spend bigint := 0;
  v_tz text;
  v_month date;
  v_spent bigint;
  v_fired integer[];
  v_pct integer;
  v_id text;
  v_data jsonb;
begin
  if not exists (select 1 from "alert" where "account_id" = p_entry."account_id" and "cleared_at" is null) then
    return;
  end if;
  if p_entry."kind" = 'settle' then
    select coalesce(h."charged", 0) into v_spend from "hold" h where h."request_id" = substr(p_entry."reference", 8);
  elsif p_entry."kind" = 'refund' then
    v_spend := -p_entry."amount";
  elsif p_entry."kind" in ('charge', 'adjustment') and p_entry."amount" < 0 then
    v_spend := -p_entry."amount";
  end if;
  select a."time_zone" into v_tz from "account" a where a."id" = p_entry."account_id";
  v_month := date_trunc('month', p_entry."created_at" at time zone v_tz)::date;

  for v_alert in select * from "alert" where "account_id" = p_entry."account_id" and "cleared_at" is null
                   order by "id" for update loop
    if v_alert."low_balance" > 0 then
      if v_alert."low_armed" and p_entry."balance_after" < v_alert."low_balance" then
        v_id := 'alrt_' || replace(gen_random_uuid()::text, '-', '');
        v_data := jsonb_build_object('alert_id', v_alert."id", 'account_id', p_entry."account_id",
          'balance', p_entry."balance_after", 'threshold', v_alert."low_balance");
        insert into "alert_event" ("id", "alert_id", "account_id", "type", "payload", "next_attempt_at", "created_at")
          values (v_id, v_alert."id", p_entry."account_id", 'alert.low_balance',
                  jsonb_build_object('type', 'alert.low_balance', 'timestamp', p_entry."created_at", 'data', v_data),
                  p_entry."created_at", p_entry."created_at");
        update "alert" set "low_armed" = false where "id" = v_alert."id";
      elsif not v_alert."low_armed" and p_entry."kind" = 'top_up' and p_entry."balance_after" >= v_alert."low_balance" then
        update "alert" set "low_armed" = true where "id" = v_alert."id";
      end if;
    end if;

    if v_alert."monthly_budget" > 0 and (v_spend <> 0 or v_alert."budget_month" is distinct from v_month) then
      if v_alert."budget_month" is distinct from v_month then
        v_spent := v_spend;
        v_fired := '{}';
      else
        v_spent := v_alert."budget_spent" + v_spend;
        v_fired := v_alert."budget_fired";
      end if;
      for v_pct in select t from unnest(v_alert."budget_thresholds") as t order by t loop
        if not v_pct = any(v_fired) and v_spent * 100 >= v_alert."monthly_budget" * v_pct then
          v_fired := v_fired || v_pct;
          v_id := 'alrt_' || replace(gen_random_uuid()::text, '-', '');
          v_data := jsonb_build_object('alert_id', v_alert."id", 'account_id', p_entry."account_id",
            'balance', p_entry."balance_after", 'budget', v_alert."monthly_budget", 'percent', v_pct,
            'spent', v_spent, 'month', to_char(v_month, 'YYYY-MM'));
          insert into "alert_event" ("id", "alert_id", "account_id", "type", "payload", "next_attempt_at", "created_at")
            values (v_id, v_alert."id", p_entry."account_id", 'alert.budget_threshold',
                    jsonb_build_object('type', 'alert.budget_threshold', 'timestamp', p_entry."created_at", 'data', v_data),
                    p_entry."created_at", p_entry."created_at");
        end if;
      end loop;
      update "alert" set "budget_month" = v_month, "budget_spent" = v_spent, "budget_fired" = v_fired
       where "id" = v_alert."id";
    end if;
  end loop;
end
$fn$;

create or replace function "alert_on_ledger"() returns trigger
language plpgsql set search_path from current as $fn$
begin
  perform "alert_on_entry"(new);
  return null;
end
$fn$;

-- apply_groups sets billing.alerts_checked around its one insert of a batch's entries: the
-- condition is evaluated without calling a function per row.
create or replace trigger "alert_on_ledger" after insert on "ledger_entry"
  for each row when (current_setting('billing.alerts_checked', true) is distinct from 'on')
  execute function "alert_on_ledger"();
