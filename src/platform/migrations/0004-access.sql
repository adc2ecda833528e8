-- API keys (src/access/): only the SHA-256 of a key is stored; the key itself is shown once.
create table api_keys (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references users (id) on delete cascade,
  name text not null,
  key_hash text not null unique,
  key_prefix text not null,
  permissions jsonb not null default '{}'::jsonb,
  expires_at timestamptz,
  last_used_at timestamptz,
  created_at timestamptz not null default now()
);
create index api_keys_user on api_keys (user_id);
