-- State entries of stores (docs/data.md, stores and states). A store is a row of `resources` (kind
-- `store`); its entries live here and go with it. The value is kept in clear (`value`) or, for an
-- encrypted store, as AES-256-GCM ciphertext bound to store id and key (`value_sealed`): exactly
-- one of the two is set. Expired entries are never answered and are swept (src/states/sweep.ts).
create table states (
  id uuid primary key default gen_random_uuid(),
  store_id uuid not null references resources (id) on delete cascade,
  key text not null,
  value jsonb,
  value_sealed text,
  visibility text not null check (visibility in ('private', 'shared')),
  description text not null default '',
  tags text[] not null default '{}',
  owner_id uuid references users (id) on delete set null,
  expires_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (store_id, key),
  check ((value is null) <> (value_sealed is null))
);
create index states_expires_at on states (expires_at) where expires_at is not null;
create index states_owner on states (store_id, owner_id);

-- The default Users role may read and write the states of the stores they own (roles are never
-- overwritten at start, so existing installations get it here; new ones from src/bootstrap.ts).
update roles set permissions = permissions
  || '{"platform.stores/*/*.read_state:own": true, "platform.stores/*/*.write_state:own": true}'::jsonb
where name = 'Users';
