-- Webhooks and schedules (docs/triggers.md), src/webhooks/ and src/schedules/.
-- Dedicated tables rather than resource kinds: a webhook is addressed by its multi-segment URL
-- path (one URL space for the whole installation, no namespace), a schedule by a name unique per
-- user; neither fits the engine's `<namespace>/<name>` addressing.
create table webhooks (
  id uuid primary key default gen_random_uuid(),
  -- the path below /webhooks/, unique across the installation (it is a URL)
  path text not null unique check (path ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,62}){0,7}$'),
  http_method text not null default 'POST' check (http_method in ('GET', 'POST', 'PUT', 'DELETE', 'PATCH')),
  function_namespace text not null,
  function_name text not null,
  requires_auth boolean not null default true,
  default_values jsonb not null default '{}'::jsonb,
  description text not null default '',
  is_active boolean not null default true,
  owner_id uuid not null references users (id) on delete cascade,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index webhooks_owner on webhooks (owner_id);

create table schedules (
  id uuid primary key default gen_random_uuid(),
  name text not null,
  owner_id uuid not null references users (id) on delete cascade,
  schedule_type text not null check (schedule_type in ('function', 'agent')),
  target_namespace text not null,
  target_name text not null,
  cron_expression text not null,
  timezone text not null default 'UTC',
  input_data jsonb not null default '{}'::jsonb,
  content text,
  description text not null default '',
  is_active boolean not null default true,
  -- bumped on every change; the schedule actor ignores messages older than what it has seen
  version integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (owner_id, name)
);

-- One row per fired (schedule, tick): the idempotency anchor of a tick and its run history. The
-- job's own status is read from `executions` (the job mirror) by job_id.
create table schedule_runs (
  schedule_id uuid not null references schedules (id) on delete cascade,
  tick timestamptz not null,
  job_id uuid,
  chat_id uuid,
  -- `fired` (handed to the job system), or `refused` (the owner could not run the target then)
  outcome text not null default 'fired' check (outcome in ('fired', 'refused')),
  error text,
  fired_at timestamptz not null default now(),
  primary key (schedule_id, tick)
);
create index schedule_runs_recent on schedule_runs (schedule_id, tick desc);
