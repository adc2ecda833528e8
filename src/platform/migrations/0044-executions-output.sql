-- What a function printed in its last attempt (stdout and stderr, at most 64 KB: the sandbox
-- runner's cap), from the job state's `output`; GET /executions/{id} answers it as `output`. Null
-- when it printed nothing (and for agents). The mirror's write carries the new column.
alter table executions add column output text;

create or replace function executions_upsert(p_rows jsonb) returns void
language plpgsql set plan_cache_mode = force_generic_plan as $$
begin
  insert into executions (id, pool, kind, namespace, name, user_id, status, attempts, trigger_type, trigger_id, chat_id, parent_id, depth,
    input_data, output_data, output, error, worker, retry_of, callback_url, in_dlq, state_rev, created_at, started_at, finished_at, updated_at)
  select r.id, r.pool, r.kind, r.namespace, r.name, r.user_id, r.status, r.attempts, r.trigger_type, r.trigger_id, r.chat_id, r.parent_id, r.depth,
    r.input_data, r.output_data, r.output, r.error, r.worker, r.retry_of, r.callback_url, r.in_dlq, r.state_rev, r.created_at, r.started_at, r.finished_at, now()
  from jsonb_to_recordset(p_rows) as r(id uuid, pool text, kind text, namespace text, name text, user_id uuid, status text,
    attempts integer, trigger_type text, trigger_id text, chat_id text, parent_id uuid, depth integer, input_data jsonb, output_data jsonb,
    output text, error text, worker text, retry_of uuid, callback_url text, in_dlq boolean, state_rev bigint, created_at timestamptz,
    started_at timestamptz, finished_at timestamptz)
  on conflict (id) do update set status = excluded.status, attempts = excluded.attempts, output_data = excluded.output_data,
    output = excluded.output, error = excluded.error, worker = excluded.worker, in_dlq = excluded.in_dlq or executions.in_dlq,
    state_rev = excluded.state_rev, started_at = excluded.started_at, finished_at = excluded.finished_at, updated_at = now()
  where executions.state_rev < excluded.state_rev;
end
$$;
