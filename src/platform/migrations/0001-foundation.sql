-- Users, roles and the generic resource table. Every <namespace>/<name> kind lives in `resources`
-- (one description per kind drives it); runtime data gets its own tables in later migrations.
-- gen_random_uuid() is built in since Postgres 13: no extension (and no superuser) needed.

create table users (
  id uuid primary key default gen_random_uuid(),
  email text not null,
  password_hash text,
  is_active boolean not null default true,
  last_login_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index users_email_key on users (lower(email));

create table roles (
  id uuid primary key default gen_random_uuid(),
  name text not null unique,
  description text not null default '',
  permissions jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table user_roles (
  user_id uuid not null references users (id) on delete cascade,
  role_id uuid not null references roles (id) on delete cascade,
  primary key (user_id, role_id)
);

create table resources (
  id uuid primary key default gen_random_uuid(),
  kind text not null,
  namespace text not null,
  name text not null,
  spec jsonb not null,
  -- ciphertexts of the kind's secret fields, never returned by the API
  secrets jsonb not null default '{}'::jsonb,
  owner_id uuid references users (id) on delete set null,
  managed_by text,
  checksum text not null,
  version integer not null default 1,
  is_active boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (kind, namespace, name)
);
create index resources_kind_ns on resources (kind, namespace, name);
create index resources_managed_by on resources (managed_by) where managed_by is not null;

-- One row per change of a kind's versioned fields (function code, ...).
create table resource_versions (
  resource_id uuid not null references resources (id) on delete cascade,
  version integer not null,
  fields jsonb not null,
  created_by uuid,
  created_at timestamptz not null default now(),
  primary key (resource_id, version)
);
