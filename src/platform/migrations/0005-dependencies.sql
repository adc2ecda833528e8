-- Python package dependencies (src/dependencies/): requested by users, approved by an admin,
-- installed from the local wheel index into a packages directory the sandboxes mount read-only.
create table dependencies (
  id uuid primary key default gen_random_uuid(),
  -- PEP 503 normalized: lower case, runs of -_. as one -
  package_name text not null unique check (package_name ~ '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$'),
  -- a PEP 440 specifier set such as ==1.2.0 or >=1,<2; null = any version
  version text,
  status text not null default 'pending' check (status in ('pending', 'approved', 'rejected', 'installed', 'failed')),
  -- the tail of pip's output when the install failed
  error text,
  requested_by uuid references users (id) on delete set null,
  approved_by uuid references users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  approved_at timestamptz,
  installed_at timestamptz
);
create index dependencies_status on dependencies (status);
