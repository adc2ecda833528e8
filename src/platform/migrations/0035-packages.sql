-- Installed packages (src/gitops/, docs/gitops.md#packages): one row per package name. The
-- resources a package installed carry managed_by = 'pkg:<name>' in their own tables; this row is
-- what install wrote it from, so an upgrade knows the previous values and export gives the text back.
create table packages (
  id uuid primary key default gen_random_uuid(),
  name text not null unique check (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  version text not null,
  description text not null default '',
  author text,
  url text,
  -- the package text as installed, before its variables were substituted: export answers it as it is
  source text not null,
  -- the variable values of the last install; a secret variable's value is the literal mask ***
  "values" jsonb not null default '{}',
  -- the Python dependencies the package declares: [{package_name, version}]
  dependencies jsonb not null default '[]',
  installed_by uuid references users (id) on delete set null,
  installed_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
