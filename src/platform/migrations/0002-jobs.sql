-- Execution history (mirrored from the JOB_STATE bucket, which decides; research §4.11), delayed-job
-- timers (NATS 2.9 has no scheduled delivery) and the dead letter queue index.
create table executions (
  id uuid primary key,
  pool text not null check (pool in ('fn', 'agent', 'subagent')),
  kind text not null,
  namespace text not null,
  name text not null,
  user_id uuid,
  status text not null,
  attempts integer not null default 0,
  trigger_type text not null default 'api',
  trigger_id text not null default 'runtime-api',
  chat_id text,
  parent_id uuid,
  depth integer not null default 0,
  input_data jsonb,
  output_data jsonb,
  error text,
  worker text,
  retry_of uuid,
  callback_url text,
  callback_status text,
  callback_response_code integer,
  in_dlq boolean not null default false,
  -- KV revision of the state this row reflects: the mirror applies a state only when it is newer,
  -- so at-least-once, out-of-order delivery from the KV stream is harmless.
  state_rev bigint not null default 0,
  created_at timestamptz not null default now(),
  started_at timestamptz,
  finished_at timestamptz,
  updated_at timestamptz not null default now()
);
create index executions_status_idx on executions (status, created_at desc);
create index executions_user_idx on executions (user_id, created_at desc);
create index executions_running_idx on executions (started_at) where status = 'running';

create table job_timers (
  job_id uuid primary key,
  due_at timestamptz not null,
  dispatched_at timestamptz
);
create index job_timers_due_idx on job_timers (due_at) where dispatched_at is null;

create table dlq_entries (
  job_id uuid primary key,
  pool text not null,
  seq bigint not null,
  error text,
  attempts integer not null,
  created_at timestamptz not null default now(),
  retried_as uuid
);
