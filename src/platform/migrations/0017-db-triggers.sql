-- Database triggers (docs/triggers.md), src/db-triggers/ and actors/db-trigger/.
-- A table rather than a resource kind: a trigger is addressed by a name unique per user (like a
-- schedule), not by `<namespace>/<name>`.
create table db_triggers (
  id uuid primary key default gen_random_uuid(),
  name text not null,
  owner_id uuid not null references users (id) on delete cascade,
  database_connection_id uuid not null,
  schema_name text not null default 'public',
  table_name text not null,
  -- INSERT, UPDATE or both (what the poll column can show)
  operations text[] not null default '{INSERT}',
  function_namespace text not null,
  function_name text not null,
  poll_column text not null,
  poll_interval_seconds integer not null default 10 check (poll_interval_seconds between 1 and 3600),
  batch_size integer not null default 100 check (batch_size between 1 and 10000),
  description text not null default '',
  is_active boolean not null default true,
  -- the bookmark: the poll column's value as text (cast back to the column's type when compared);
  -- null until the first activation sets it to MAX(poll_column)
  last_poll_value text,
  -- the first activation happened: a null last_poll_value then means "from the first row" (the
  -- table was empty)
  bookmark_set boolean not null default false,
  -- a batch decided but not yet known to be enqueued: the bookmark it ends at. A retried poll reads
  -- exactly (last_poll_value, pending_until] again, so it enqueues the same job id
  pending_until text,
  -- bumped whenever the bookmark is reset (table, column or connection changed): part of job ids
  bookmark_epoch integer not null default 0,
  error_message text,
  last_polled_at timestamptz,
  -- the highest actor-lease revision that polled this trigger: writes carry theirs and are refused
  -- when it is lower (`where fence <= $fence`), so a host that lost its lease moves nothing
  fence bigint not null default 0,
  -- bumped on every change; the actor ignores messages older than what it has seen
  version integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (owner_id, name)
);

-- Existing installations: the default Users role manages its own database triggers (new ones get
-- it from src/bootstrap.ts). Using a connection still needs `platform.database-connections/<name>.use:all`.
update roles set permissions = permissions
  || '{"platform.database-triggers.create:own": true, "platform.database-triggers.read:own": true, "platform.database-triggers.update:own": true, "platform.database-triggers.delete:own": true}'::jsonb
where name = 'Users';
