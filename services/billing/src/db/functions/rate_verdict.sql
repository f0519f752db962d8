-- Which limit refuses a request, from its windows' counts with it counted: the axis with the
-- longer wait (retrying after the second's wait would still be refused). SQL, immutable and
-- without settings, so Postgres can inline it into the statement that calls it. The one
-- definition of a rate refusal, used by count_rate and apply_ops.
create or replace function "rate_verdict"(p_count_second integer, p_count_minute integer, p_per_second integer,
                                          p_per_minute integer, p_now_ms bigint)
returns table (limit_type text, retry_after integer)
language sql immutable as $fn$
  select case when p_count_minute > p_per_minute then 'per_minute' when p_count_second > p_per_second then 'per_second' end,
         case when p_count_minute > p_per_minute then greatest(1, ceil(((p_now_ms / 60000 + 1) * 60000 - p_now_ms) / 1000.0)::integer)
              when p_count_second > p_per_second then 1 end
$fn$
