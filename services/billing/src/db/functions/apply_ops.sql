-- apply_ops(account, ops, now): the operations of one account, as apply_groups applies them (see
-- there for the ops and their results), inside the caller's transaction and with no bound on its
-- lock waits: event handlers, and the request path's fallback when a batch failed as a whole.
-- Answers the results in op order.
create or replace function "apply_ops"(p_account uuid, p_ops jsonb, p_now timestamptz) returns jsonb
language plpgsql set search_path from current as $fn$
begin
  return "apply_groups"(jsonb_build_array(jsonb_build_object('account', p_account, 'ops', p_ops)), p_now)->'1';
end
$fn$
