-- apply_batch: the money operations of several accounts in one statement, so one transaction and
-- one commit (apply_groups). Answers an object from each group's position (1-based, as sent) to its
-- results. Waits at most 200 ms for any lock: timed out, the batch fails as a whole and the batcher
-- applies each account on its own (apply_ops), so only the locked account waits. A setting of the
-- function, so it ends with it. PL/pgSQL, as apply_ops: a session keeps it compiled (an SQL
-- function with settings is planned again on every call).
create or replace function "apply_batch"(p_groups jsonb, p_now timestamptz) returns jsonb
language plpgsql set search_path from current set lock_timeout = '200ms' as $fn$
begin
  return "apply_groups"(p_groups, p_now);
end
$fn$
