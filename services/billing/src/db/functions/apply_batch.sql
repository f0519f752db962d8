-- apply_batch: the money operations of several accounts in one statement, so one transaction and
-- one commit. Each account's operations run through apply_ops unchanged. Accounts are taken in one
-- fixed order (their ids), so two batches that share accounts lock wallets in the same order and
-- wait for each other instead of deadlocking. Answers an object from each group's position
-- (1-based, as sent) to its apply_ops results. Waits at most 200 ms for any lock: timed out, the
-- batch fails as a whole and the batcher applies each account on its own, so only the locked
-- account waits. Set inside the function, whose own settings end with it.
create or replace function "apply_batch"(p_groups jsonb, p_now timestamptz) returns jsonb
language plpgsql set search_path from current as $fn$
declare
  v_out jsonb := '{}'::jsonb;
  v_group record;
begin
  perform set_config('lock_timeout', '200ms', true);
  for v_group in
    select g.value, g.position from jsonb_array_elements(p_groups) with ordinality as g(value, position)
     order by (g.value->>'account')::uuid
  loop
    v_out := v_out || jsonb_build_object(v_group.position::text,
      "apply_ops"((v_group.value->>'account')::uuid, v_group.value->'ops', p_now));
  end loop;
  return v_out;
end
$fn$
